"""The network-namespace runtime: the same topology file, instantiated with `ip netns`.

Each lab node is a named namespace `dnslab-<lab>-<node>` whose `eth1` is a veth into the
lab bridge, which lives in a namespace of its own (`dnslab-<lab>-<bridge>`), so nothing is
added to the host's network. A node's daemon runs from the host's Debian packages with the
rendered configuration, under `ip netns exec`, as a process this runtime starts, logs and
stops; a node labelled `dnslab.image` runs from its image's file system instead (rootfs.py).
A node with a `cpu-set` runs its daemon, and every command executed in it, under `taskset`.
Namespaces have no route anywhere but the lab LAN, so no packet can leave the host.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

from dnslab import cpus, sysctl
from dnslab.errors import LabError
from dnslab.nsenter import ip, list_namespaces, namespace_pids, netns_path
from dnslab.render import RenderedLab, node_sysctls
from dnslab.runtime.base import LabState, Runtime, host_sysctl_file
from dnslab.runtime.rootfs import chroot_argv, ensure_rootfs
from dnslab.servers import driver
from dnslab.topology import Topology
from dnslab.wait import WaitTimeout, wait_until

PREFIX = "dnslab-"
# Settings every node gets: the lab is IPv4 only, so no IPv6 autoconfiguration chatter.
BASE_SYSCTLS = {"net.ipv6.conf.all.disable_ipv6": "1", "net.ipv6.conf.default.disable_ipv6": "1"}
STOP_GRACE_S = 2.0
# Read back from every node whether a profile sets them or not, so a run records the values
# its results depended on (the kernel defaults included).
READBACK = ["net.ipv4.ip_local_port_range", "net.ipv4.tcp_max_tw_buckets",
            "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_tw_reuse", "net.core.somaxconn",
            "net.ipv4.tcp_max_syn_backlog", "net.core.rmem_default", "net.core.rmem_max",
            "net.core.wmem_default", "net.core.wmem_max", "net.ipv4.tcp_rmem",
            "net.ipv4.tcp_wmem", "net.ipv4.tcp_sack", "net.ipv4.tcp_abort_on_overflow",
            "net.ipv4.tcp_tso_win_divisor", "net.ipv4.tcp_congestion_control"]


def namespace(lab: str, node: str) -> str:
    return f"{PREFIX}{lab}-{node}"


def missing_packages(servers: set[str]) -> list[str]:
    """The Debian packages the server kinds' drivers need and the host lacks."""
    return sorted({pkg for kind in servers for pkg in driver(kind).missing_packages()})


APPARMOR_PROFILES = Path("/sys/kernel/security/apparmor/profiles")


def apparmor_enforced(binaries: list[str], profiles: Path = APPARMOR_PROFILES) -> list[str]:
    """Binaries whose AppArmor profile is in enforce mode (Ubuntu confines DNS daemons)."""
    try:
        text = profiles.read_text()
    except OSError:
        return []
    confined = []
    for binary in binaries:
        path = shutil.which(binary) or f"/usr/sbin/{binary}"
        for line in text.splitlines():
            name, _, mode = line.rpartition(" ")
            if name in (path, binary, os.path.realpath(path)) and "enforce" in mode:
                confined.append(path)
    return confined


def pid_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        # gone before or while its stat was read (a read after the exit is ESRCH)
        return False
    if state == "Z":
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        return False
    return True


def terminate(pids: list[int], grace: float = STOP_GRACE_S) -> None:
    """SIGTERM the processes, wait up to `grace` seconds, SIGKILL what is left."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    alive = [p for p in pids if pid_alive(p)]

    def all_gone() -> bool:
        alive[:] = [p for p in alive if pid_alive(p)]
        return not alive

    try:
        wait_until(all_gone, grace, "the node's processes to end", interval=0.02)
        return
    except WaitTimeout:
        pass
    for pid in alive:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        wait_until(all_gone, grace, "the node's processes to die", interval=0.02)
    except WaitTimeout:
        pass


def apply_sysctls(rendered: RenderedLab, state: LabState) -> None:
    """Set each node's sysctls in its namespace (host-wide keys only when allowed, and then
    restored at lab down) and record what the kernel reads back, on either runtime."""
    allow_host = os.environ.get("DNSLAB_ALLOW_HOST_SYSCTLS") == "1"
    for node in rendered.topology.nodes.values():
        ns = state.nodes[node.name].netns
        wanted = {**BASE_SYSCTLS, **node_sysctls(rendered, node)}
        state.nodes[node.name].sysctls_requested = dict(sorted(wanted.items()))
        per_ns, host_wide = sysctl.split_host_wide(ns, list(wanted))
        if host_wide and not allow_host:
            # refused, never silently: recorded with the node and said once here
            state.nodes[node.name].sysctls_refused = {k: wanted[k] for k in host_wide}
            print(f"sysctl: node {node.name}: not applied (host-wide on this kernel): "
                  f"{', '.join(host_wide)}; ALLOW_HOST_SYSCTLS=1 changes the host "
                  "(restored at lab down)", file=sys.stderr)
            host_wide = []
        readback = sysctl.apply_in_netns(ns, {k: wanted[k] for k in per_ns})
        if host_wide:
            readback.update(sysctl.apply_host({k: wanted[k] for k in host_wide},
                                              host_sysctl_file(state.lab)))
        current = sysctl.read_in_netns(ns, [k for k in READBACK if k not in readback])
        readback.update({k: v for k, v in current.items() if v is not None})
        state.nodes[node.name].sysctls = dict(sorted(readback.items()))


class NetnsRuntime(Runtime):
    name = "netns"

    def __init__(self) -> None:
        self._children: dict[int, subprocess.Popen] = {}

    def preflight(self, rendered: RenderedLab) -> None:
        if os.geteuid() != 0:
            raise LabError("the netns runtime needs root to create network namespaces",
                           hint="run it with sudo, e.g. sudo make lab up")
        if shutil.which("ip") is None:
            raise LabError("the 'ip' command is missing",
                           hint="sudo apt-get install -y iproute2")
        missing = missing_packages(rendered.topology.servers)
        if missing:
            raise LabError("missing packages for this lab: " + " ".join(missing),
                           hint="sudo apt-get install -y --no-install-recommends "
                           + " ".join(missing) + " (or: make setup)")
        daemons = [binary for s in sorted(rendered.topology.servers)
                   if (binary := driver(s).binary) is not None]
        confined = apparmor_enforced(daemons)
        if confined and os.environ.get("DNSLAB_APPARMOR") != "ignore":
            raise LabError(
                "AppArmor confines " + ", ".join(confined)
                + " to its packaged paths, so it cannot read the lab's files under build/",
                hint="sudo aa-complain " + " ".join(confined)
                + " (package apparmor-utils; undo with aa-enforce), or use RUNTIME=clab",
            )

    def prepare_nodes(self, topology: Topology, nodes: Iterable[str]) -> None:
        for name in nodes:
            node = topology.node(name)
            if node.label("image"):
                ensure_rootfs(node.image, name)

    def leftovers(self, lab: str | None) -> list[str]:
        prefix = PREFIX + (f"{lab}-" if lab else "")
        return [f"netns {ns}" for ns in list_namespaces() if ns.startswith(prefix)]

    def running(self, lab: str) -> list[str]:
        prefix = f"{PREFIX}{lab}-"
        return [f"pid {pid} in netns {ns}" for ns in list_namespaces() if ns.startswith(prefix)
                for pid in namespace_pids(ns)]

    def create(self, rendered: RenderedLab, state: LabState, hold: set[str],
               later: set[str] = frozenset()) -> None:
        topo = rendered.topology
        self.prepare_nodes(topo, [n for n in topo.nodes if n not in hold])
        bridge_ns = namespace(topo.name, topo.bridge)
        ip("netns", "add", bridge_ns)
        ip("-n", bridge_ns, "link", "add", topo.bridge[:15], "type", "bridge")
        ip("-n", bridge_ns, "link", "set", topo.bridge[:15], "up")
        for node in topo.nodes.values():
            ns = namespace(topo.name, node.name)
            ip("netns", "add", ns)
            port = node.bridge_port[:15]
            ip("link", "add", "eth1", "netns", ns, "type", "veth", "peer", "name", port,
               "netns", bridge_ns)
            ip("-n", bridge_ns, "link", "set", port, "master", topo.bridge[:15])
            ip("-n", bridge_ns, "link", "set", port, "up")
            ip("-n", ns, "link", "set", "lo", "up")
            ip("-n", ns, "addr", "add", node.cidr, "dev", "eth1")
            ip("-n", ns, "link", "set", "eth1", "up")
            state.nodes[node.name].netns = netns_path(ns)
        apply_sysctls(rendered, state)
        state.save()
        for node in topo.nodes.values():
            if driver(node.server).runs_daemon and node.name not in hold | later:
                self.start_node(state, node.name)

    def start_node(self, state: LabState, node: str) -> None:
        info = state.nodes[node]
        node_dir = Path(state.root) / "nodes" / node
        ns = Path(info.netns).name
        command = ["sh", str(node_dir / "run.sh")]
        if info.from_image:
            command = chroot_argv(ensure_rootfs(info.image, node), info.mounts,
                                         node_dir / "run.sh")
        with open(info.log, "ab") as log:
            # the affinity taskset sets is inherited by the daemon and everything it starts
            proc = subprocess.Popen(
                cpus.taskset_argv(info.cpu_set, ["ip", "netns", "exec", ns, *command]),
                cwd=node_dir, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self._children[proc.pid] = proc
        info.pid = proc.pid
        state.save()

    def stop_node(self, state: LabState, node: str) -> None:
        info = state.nodes[node]
        if info.pid:
            terminate([info.pid])
            self._reap(info.pid)
            info.pid = None
            state.save()

    def _reap(self, pid: int) -> None:
        proc = self._children.pop(pid, None)
        if proc is not None:
            proc.poll()

    def node_alive(self, state: LabState, node: str) -> bool:
        pid = state.nodes[node].pid
        if pid is None:
            return False
        proc = self._children.get(pid)
        if proc is not None:
            return proc.poll() is None
        return pid_alive(pid)

    def exec_argv(self, state: LabState, node: str, argv: list[str]) -> list[str]:
        info = state.nodes[node]
        return cpus.taskset_argv(info.cpu_set,
                                 ["ip", "netns", "exec", Path(info.netns).name, *argv])

    def destroy(self, lab: str) -> list[str]:
        prefix = f"{PREFIX}{lab}-"
        namespaces = [ns for ns in list_namespaces() if ns.startswith(prefix)]
        pids = [pid for ns in namespaces for pid in namespace_pids(ns)]
        terminate(pids)
        for pid in pids:
            self._reap(pid)
        removed = []
        for ns in namespaces:
            ip("netns", "delete", ns, check=False)
            removed.append(f"netns {ns}")
        restored = sysctl.restore_host(host_sysctl_file(lab))
        removed += [f"host sysctl {k} restored to {v}" for k, v in restored.items()]
        return removed
