"""The network-namespace runtime: the same topology file, instantiated with `ip netns`.

Each lab node is a named namespace `dnslab-<lab>-<node>` whose `eth1` is a veth into the
lab bridge, which lives in a namespace of its own (`dnslab-<lab>-<bridge>`), so nothing is
added to the host's network. A node's daemon runs from the host's Debian packages with the
rendered configuration, under `ip netns exec`, as a process this runtime starts, logs and
stops. A node whose version of its kind the host's package is not (`bind@9.20` on Debian 12,
`bind@9.16` anywhere), or whose host package is older than its manifest's `minimum_versions`
(the client's dnsperf on Debian 12), runs its daemon and every command executed in it from a
root file system of its version's suite instead (rootfs.py).
A node with a `cpu-set` runs its daemon, and every command executed in it, under `taskset`.
Namespaces have no route anywhere but the lab LAN, so no packet can leave the host.

A lab split across machines (`dnslab.hosts`) gets this on every host it uses, each step run
through that host's transport: its own bridge namespace and its nodes' namespaces, and one
VXLAN device (created in the host's own namespace, where the underlay is, then moved into
the bridge namespace, so the lab's frames are encapsulated there and nothing else of the
host is touched), flooding to the other hosts' underlay addresses. Every link of the lab LAN
then has the VXLAN's MTU, set explicitly on both ends. Teardown runs on every host.
"""

from __future__ import annotations

import os
import shutil
import sys
import zlib
from collections.abc import Iterable
from pathlib import Path

from dnslab import cpus, paths
from dnslab.errors import LabError
from dnslab.hosts import LOCAL_HOST, Host
from dnslab.nsenter import netns_path
from dnslab.processes import pid_alive, terminate  # noqa: F401 (used by lab.py, tests)
from dnslab.render import RenderedLab, node_sysctls
from dnslab.runtime.base import LabState, Runtime, host_sysctl_file, hosts_of
from dnslab.runtime.rootfs import (
    STAMP,
    SuiteRoot,
    chroot_argv,
    ensure_root,
    shortfall,
    suite_root,
)
from dnslab.servers import driver
from dnslab.servers.manifest import kind_version, manifest, version_label
from dnslab.topology import Node, Topology
from dnslab.wait import WaitTimeout, wait_until

PREFIX = "dnslab-"
STRAYS_WAIT_S = 10.0  # how long teardown keeps stopping a lab's processes found outside it
# Settings every node gets: the lab is IPv4 only, so no IPv6 autoconfiguration chatter.
BASE_SYSCTLS = {"net.ipv6.conf.all.disable_ipv6": "1", "net.ipv6.conf.default.disable_ipv6": "1"}
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


# (host, packages) -> their installed versions, asked once per process
_INSTALLED: dict[tuple[str, tuple[str, ...]], dict[str, str | None]] = {}


def installed_versions(host: Host, packages: list[str]) -> dict[str, str | None]:
    """The Debian version of each package on `host` (None: not installed)."""
    key = (host.name, tuple(packages))
    if key not in _INSTALLED:
        _INSTALLED[key] = host.call("package-versions", packages=list(packages))
    return _INSTALLED[key]


def node_root(node: Node, host: Host = LOCAL_HOST) -> tuple[SuiteRoot, str] | None:
    """The root file system a node runs from on `host` and why (rootfs.py); None when the
    host's packages serve it: the host's package is the node's version (`bind@9.18`: bind9
    9.18.x), or for a kind that names a minimum for it (the client's dnsperf) one at least
    that, and the kind's other `minimum_versions` hold."""
    wanted = kind_version(node.image_key)
    package = wanted.image.package
    minimum = manifest(node.server).minimum_versions
    installed = installed_versions(host, sorted({package, *minimum}))
    have = installed.get(package)
    short = shortfall(node.server, installed)
    if have is None:
        why = f"{wanted.key}: {package} is not installed on this host"
    elif package not in minimum and version_label(have) != wanted.version:
        why = f"{wanted.key}: this host's {package} is {have}"
    elif short:
        why = "on this host " + "; ".join(short)
    else:
        return None
    return suite_root(wanted.key), why


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


def apply_sysctls(rendered: RenderedLab, state: LabState) -> None:
    """Set each node's sysctls in its namespace (host-wide keys only when allowed, and then
    restored at lab down) and record what the kernel reads back, on either runtime."""
    allow_host = os.environ.get("DNSLAB_ALLOW_HOST_SYSCTLS") == "1"
    for node in rendered.topology.nodes.values():
        ns = state.nodes[node.name].netns
        host = state.host(node.name)
        wanted = {**BASE_SYSCTLS, **node_sysctls(rendered, node)}
        state.nodes[node.name].sysctls_requested = dict(sorted(wanted.items()))
        per_ns, host_wide = host.call("split-host-wide", netns=ns, keys=list(wanted))
        if host_wide and not allow_host:
            # refused, never silently: recorded with the node and said once here
            state.nodes[node.name].sysctls_refused = {k: wanted[k] for k in host_wide}
            print(f"sysctl: node {node.name}: not applied (host-wide on this kernel): "
                  f"{', '.join(host_wide)}; ALLOW_HOST_SYSCTLS=1 changes the host "
                  "(restored at lab down)", file=sys.stderr)
            host_wide = []
        readback = host.call("apply-sysctls", netns=ns,
                             sysctls={k: wanted[k] for k in per_ns})
        if host_wide:
            readback.update(host.call("apply-host-sysctls",
                                      sysctls={k: wanted[k] for k in host_wide},
                                      saved_file=str(host_sysctl_file(state.lab))))
        current = host.call("read-sysctls", netns=ns,
                            keys=[k for k in READBACK if k not in readback])
        readback.update({k: v for k, v in current.items() if v is not None})
        state.nodes[node.name].sysctls = dict(sorted(readback.items()))


def lab_vni(lab: str) -> int:
    """The VXLAN ID of a lab's LAN across hosts: from its name, so every host agrees and two
    labs on one host differ (one VNI and port cannot be created twice in a namespace)."""
    return 10_000 + zlib.crc32(lab.encode()) % 1_000_000


def vxlan_device(vni: int) -> str:
    return f"vx{vni}"


class NetnsRuntime(Runtime):
    name = "netns"

    def preflight(self, rendered: RenderedLab) -> None:
        if os.geteuid() != 0:
            raise LabError("the netns runtime needs root to create network namespaces",
                           hint="run it with sudo, e.g. sudo make lab up")
        if shutil.which("ip") is None:
            raise LabError("the 'ip' command is missing",
                           hint="sudo apt-get install -y iproute2")
        # a node that runs from a root file system needs none of its kind's host packages
        missing = missing_packages({n.server for n in rendered.topology.nodes.values()
                                    if node_root(n) is None})
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
        """Make the root file system of each of `nodes` that runs from one on this machine
        (built once, rootfs.py), before a run's first cell."""
        for name in nodes:
            found = node_root(topology.node(name))
            if found is not None:
                ensure_root(found[0], name, found[1])

    def note_roots(self, topology: Topology, state: LabState) -> None:
        """Note in the state the root file system each node runs from on its host (made or
        not yet: a held node's is made when it starts or a command first runs in it), so every
        command in it runs there."""
        for name, info in state.nodes.items():
            found = node_root(topology.node(name), state.host(name))
            if found is not None:
                info.rootfs, info.rootfs_kind, info.rootfs_why = (
                    str(found[0].path), found[0].kind, found[1])

    def make_root(self, state: LabState, node: str) -> Path:
        """The node's root file system, made if missing and put on the node's host."""
        info = state.nodes[node]
        root = suite_root(info.rootfs_kind)
        path = ensure_root(root, node, info.rootfs_why)
        _put_root(state.host(node), path)
        return path

    def leftovers(self, lab: str | None) -> list[str]:
        prefix = PREFIX + (f"{lab}-" if lab else "")
        found = []
        for host in hosts_of(lab):
            where = "" if host.local else f" on host {host.name}"
            try:
                found += [f"netns {ns}{where}" for ns in host.call("netns-list", prefix=prefix)]
            except LabError as exc:
                found.append(f"unreachable host {host.name}: {exc.message}")
        return found

    def running(self, lab: str) -> list[str]:
        prefix = f"{PREFIX}{lab}-"
        found = []
        for host in hosts_of(lab):
            try:
                names = host.call("netns-list", prefix=prefix)
            except LabError:
                continue  # nothing can be known to run there: what was left is cleared

            where = "" if host.local else f" on host {host.name}"
            for ns, pids in host.call("netns-pids", names=names).items():
                found += [f"pid {pid} in netns {ns}{where}" for pid in pids]
        return found

    def create(self, rendered: RenderedLab, state: LabState, hold: set[str],
               later: set[str] = frozenset()) -> None:
        topo = rendered.topology
        self.note_roots(topo, state)
        for name, info in state.nodes.items():
            if info.rootfs and name not in hold:
                self.make_root(state, name)
        if state.data_path.get("kind") == "macvlan":
            self._create_macvlan_lan(rendered, state)
        else:
            self._create_bridged_lan(rendered, state)
        apply_sysctls(rendered, state)
        state.save()
        for node in topo.nodes.values():
            if driver(node.server).runs_daemon and node.name not in hold | later:
                self.start_node(state, node.name)

    def _create_bridged_lan(self, rendered: RenderedLab, state: LabState) -> None:
        """Each node's eth1 a veth into the lab bridge (its host's, joined by the VXLAN)."""
        topo = rendered.topology
        mtu = state.vxlan.get("mtu")
        bridge = topo.bridge[:15]
        bridge_ns = namespace(topo.name, topo.bridge)
        for host_name in state.host_names():
            host = state.hosts_handle().get(host_name)
            host.ip("netns", "add", bridge_ns)
            host.ip("-n", bridge_ns, "link", "add", bridge,
                    *(["mtu", str(mtu)] if mtu else []), "type", "bridge")
            host.ip("-n", bridge_ns, "link", "set", bridge, "up")
            if state.vxlan:
                _add_vxlan(host, host_name, state, bridge_ns, bridge)
        for node in topo.nodes.values():
            host = state.host(node.name)
            ns = namespace(topo.name, node.name)
            host.ip("netns", "add", ns)
            port = node.bridge_port[:15]
            link_mtu = ["mtu", str(mtu)] if mtu else []
            host.ip("link", "add", "eth1", "netns", ns, *link_mtu, "type", "veth", "peer",
                    "name", port, "netns", bridge_ns, *link_mtu)
            host.ip("-n", bridge_ns, "link", "set", port, "master", bridge)
            host.ip("-n", bridge_ns, "link", "set", port, "up")
            _address_node(host, ns, node.cidr)
            state.nodes[node.name].netns = netns_path(ns)

    def _create_macvlan_lan(self, rendered: RenderedLab, state: LabState) -> None:
        """Each node's eth1 a macvlan (mode bridge) of its host's data interface, created
        straight into the node's namespace: nodes on one host reach each other through the
        macvlan's bridge mode, nodes on others over the data interface's own link; no lab
        bridge, no encapsulation. The macvlans go with the namespaces at teardown."""
        path = state.data_path
        for node in rendered.topology.nodes.values():
            host = state.host(node.name)
            ns = namespace(rendered.topology.name, node.name)
            host.ip("netns", "add", ns)
            host.ip("link", "add", "link", path["interfaces"][state.nodes[node.name].host],
                    "name", "eth1", "netns", ns, "mtu", str(path["mtu"]), "type", "macvlan",
                    "mode", path["mode"])
            _address_node(host, ns, node.cidr)
            state.nodes[node.name].netns = netns_path(ns)

    def start_node(self, state: LabState, node: str) -> None:
        info = state.nodes[node]
        node_dir = Path(state.root) / "nodes" / node
        ns = Path(info.netns).name
        command = ["sh", str(node_dir / "run.sh")]
        if info.rootfs:  # made now if the node was held at lab up
            command = chroot_argv(self.make_root(state, node), info.mounts, command)
        # the affinity taskset sets is inherited by the daemon and everything it starts
        info.pid = state.host(node).call(
            "spawn", argv=cpus.taskset_argv(info.cpu_set, ["ip", "netns", "exec", ns, *command]),
            log=info.log, cwd=str(node_dir))
        state.save()

    def stop_node(self, state: LabState, node: str) -> None:
        info = state.nodes[node]
        if info.pid:
            state.host(node).call("terminate", pids=[info.pid])
            info.pid = None
            state.save()

    def node_alive(self, state: LabState, node: str) -> bool:
        pid = state.nodes[node].pid
        if pid is None:
            return False
        return bool(state.host(node).call("alive", pids=[pid]).get(str(pid)))

    def node_argv(self, state: LabState, node: str, argv: list[str]) -> list[str]:
        info = state.nodes[node]
        if info.rootfs:  # the node's software is its root file system's
            if not Path(info.rootfs).is_dir():
                # a held node's root is made when it starts, but a command may come first (a
                # run's ceiling puts `dnsload serve` in a held server's namespace)
                self.make_root(state, node)
            argv = chroot_argv(Path(info.rootfs), info.mounts, argv)
        return cpus.taskset_argv(info.cpu_set,
                                 ["ip", "netns", "exec", Path(info.netns).name, *argv])

    def exec_argv(self, state: LabState, node: str, argv: list[str]) -> list[str]:
        return state.host(node).argv(self.node_argv(state, node, argv))

    def destroy(self, lab: str) -> list[str]:
        prefix = f"{PREFIX}{lab}-"
        removed = []
        for host in hosts_of(lab):
            try:
                namespaces = host.call("netns-list", prefix=prefix)
            except LabError as exc:
                if host.local:
                    raise
                # the lab cannot be used any more; what it left there is said, not hidden
                print(f"lab down: {exc.message}; what lab {lab!r} left on host {host.name!r} "
                      "stays there until it is reached (or rebooted)", file=sys.stderr)
                continue
            pids = [pid for found in host.call("netns-pids", names=namespaces).values()
                    for pid in found]
            # returns once they have left the process table (or said which would not)
            host.call("terminate", pids=pids)
            where = "" if host.local else f" on host {host.name}"
            for ns in namespaces:
                # the VXLAN device lives in the bridge namespace and goes with it
                host.ip("netns", "delete", ns, check=False)
                removed.append(f"netns {ns}{where}")
            removed += [f"process {pid}{where}" for pid in _stop_strays(host, lab)]
            restored = host.call("restore-host-sysctls",
                                 saved_file=str(host_sysctl_file(lab)))
            removed += [f"host sysctl {k} restored to {v}{where}" for k, v in restored.items()]
        return removed


def _put_root(host: Host, root: Path) -> None:
    """A root file system on a node's other host (same path), unless it has that one."""
    if host.local:
        return
    stamp = (root / STAMP).read_bytes()
    if host.read_bytes(root / STAMP) != stamp:
        host.push([root])


def _stop_strays(host: Host, lab: str) -> list[int]:
    """Stop the processes of the lab left on a host once its namespaces are gone, found by
    the lab folder their command line names: a daemon that was being started as an
    interrupt came (`ip netns exec` had opened its namespace, not yet entered it) runs on in
    a namespace that has no name any more. Until none is found, a few seconds at most."""
    stopped: list[int] = []

    def none_left() -> bool:
        found = [pid for pid, _ in host.call("lab-processes", labs_folder=str(paths.LABS_STATE),
                                             lab=lab)]
        if found:
            host.call("terminate", pids=found)
            stopped.extend(p for p in found if p not in stopped)
        return not found

    try:
        wait_until(none_left, STRAYS_WAIT_S, f"the processes of lab {lab} to end",
                   interval=0.1)
    except WaitTimeout:
        pass  # said by `lab down`'s check of what is left
    return stopped


def _address_node(host: Host, ns: str, cidr: str) -> None:
    host.ip("-n", ns, "link", "set", "lo", "up")
    host.ip("-n", ns, "addr", "add", cidr, "dev", "eth1")
    host.ip("-n", ns, "link", "set", "eth1", "up")


def _add_vxlan(host: Host, host_name: str, state: LabState, bridge_ns: str,
               bridge: str) -> None:
    """The lab LAN's VXLAN endpoint on `host`: created in the host's own namespace (its UDP
    socket stays there, on the underlay), flooding to every other host's underlay address,
    then moved into the lab's bridge namespace and enslaved to the bridge."""
    vx = state.vxlan
    device = vxlan_device(int(vx["vni"]))
    local = vx["underlay"][host_name]
    host.ip("link", "add", device, "mtu", str(vx["mtu"]), "type", "vxlan", "id",
            str(vx["vni"]), "local", local, "dstport", str(vx["port"]), "nolearning")
    host.ip("link", "set", device, "netns", bridge_ns)
    for peer, address in vx["underlay"].items():
        if peer != host_name:
            host.run(["ip", "netns", "exec", bridge_ns, "bridge", "fdb", "append",
                      "00:00:00:00:00:00", "dev", device, "dst", address])
    host.ip("-n", bridge_ns, "link", "set", device, "master", bridge)
    host.ip("-n", bridge_ns, "link", "set", device, "up")
