"""The containerlab runtime: the rendered topology deployed with `containerlab deploy`.

Every node is a container from `images/`; its entrypoint reads the same rendered node folder
the netns runtime uses, and every file a node reads lives under the build or results folder,
both mounted at the same absolute path (render.node_visible_roots). The entrypoint appends the
daemon's output to the same log file the netns runtime writes, so log followers work alike.
Containers run with `network-mode: none`: their only interface besides lo is eth1 on the lab
bridge, a host Linux bridge with no address, created before deploy and removed after
destroy, so no node has a route off the machine. Sysctls are applied and read back in each
container's namespace exactly as on the netns runtime. A node held back for a cold start
waits in its entrypoint until its `hold` file is removed.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path

import yaml

from dnslab import paths, sysctl
from dnslab.errors import LabError
from dnslab.nsenter import ip
from dnslab.render import RenderedLab, log_file, node_visible_roots
from dnslab.runtime.base import LabState, Runtime, host_sysctl_file
from dnslab.topology import Topology, resolve_node

HOLD_FILE = "hold"
# Inside a node: SIGTERM to the daemon the entrypoint started, SIGKILL after 2 s, and
# return once it is gone (the entrypoint reaps it and removes the pid file).
STOP_DAEMON = """
f=/run/dnslab-daemon.pid
[ -f $f ] || exit 0
kill -TERM "$(cat $f)" 2>/dev/null
i=0
while [ -f $f ] && [ $i -lt 40 ]; do sleep 0.05; i=$((i + 1)); done
[ -f $f ] && kill -KILL "$(cat $f)" 2>/dev/null
while [ -f $f ]; do sleep 0.05; done
"""
MGMT_NETWORK = "clab"
NETNS_DIR = "/run/netns"  # where `ip netns` and containerlab keep named namespaces


def containerlab_binary() -> str | None:
    """The user's installed containerlab, as it is; else the project's build (make
    containerlab)."""
    installed = shutil.which("containerlab")
    if installed:
        return installed
    built = paths.BIN / "containerlab"
    return str(built) if built.exists() else None


def docker_works() -> bool:
    if shutil.which("docker") is None:
        return False
    return subprocess.run(["docker", "info"], capture_output=True).returncode == 0


def containerlab_version(binary: str) -> tuple[int, ...] | None:
    proc = subprocess.run([binary, "version"], capture_output=True, text=True)
    found = re.search(r"version:\s*v?(\d+)\.(\d+)\.(\d+)", proc.stdout)
    return tuple(int(x) for x in found.groups()) if found else None


def is_project_build(binary: str) -> bool:
    """Our own build (make containerlab) with the no-/proc/modules change applied."""
    patches = paths.BIN / "containerlab.patches"
    return (Path(binary) == paths.BIN / "containerlab" and patches.exists()
            and "no-proc-modules.patch" in patches.read_text())


def engine_default_runtime() -> str:
    return subprocess.run(["docker", "info", "--format", "{{.DefaultRuntime}}"],
                          capture_output=True, text=True).stdout.strip()


def dangling_netns_links(lab: str | None) -> list[Path]:
    """containerlab's /run/netns/clab-<lab>-<node> links whose container is gone (a killed
    run, a reboot, a restarted dockerd): they point at a /proc/<pid> that no longer exists."""
    prefix = f"clab-{lab}-" if lab else "clab-"
    folder = Path(NETNS_DIR)
    if not folder.is_dir():
        return []
    return sorted(link for link in folder.iterdir() if link.name.startswith(prefix)
                  and link.is_symlink() and not link.exists())


def _mgmt_network_orphaned() -> bool:
    """containerlab's management network (the nodes do not use it: network-mode none) is
    shared by every containerlab lab on the host; it is ours to remove once no containerlab
    container is left."""
    containers = _docker("ps", "-a", "--filter", "label=containerlab", "--format",
                         "{{.Names}}", check=False).stdout.split()
    exists = _docker("network", "inspect", MGMT_NETWORK, check=False).returncode == 0
    return exists and not containers


def missing_images(topology: Topology) -> list[str]:
    """Images the topology's nodes need that the Docker engine does not have."""
    wanted = sorted({node.image for node in topology.nodes.values() if node.image})
    if not wanted:
        return []
    proc = _docker("image", "inspect", "--format", "{{.Id}}", *wanted, check=False)
    if proc.returncode == 0:
        return []
    return [image for image in wanted
            if _docker("image", "inspect", image, check=False).returncode != 0]


def lab_bridge_ports(lab: str) -> list[str]:
    """The host-side veth names of a lab's links (their bridge endpoints)."""
    rendered_file = paths.LABS_STATE / lab / f"{lab}.clab.yml"
    try:
        topo = yaml.safe_load(rendered_file.read_text())
    except (OSError, yaml.YAMLError):
        return []
    section = topo.get("topology", {})
    ports = []
    for link in section.get("links", []) or []:
        for end in link.get("endpoints", []):
            node, _, iface = str(end).partition(":")
            try:
                kind = resolve_node(section, node, rendered_file).get("kind")
            except LabError:  # teardown goes on whatever the file says
                continue
            if kind == "bridge":
                ports.append(iface)
    return ports


# containerlab treats a missing /proc/modules as "every module built in" from this release on
# (the project's own build carries that change, tools/containerlab/no-proc-modules.patch)
NO_PROC_MODULES_OK = (0, 76, 1)


def missing_capabilities() -> list[str]:
    proc = subprocess.run([str(paths.REPO / "scripts" / "runc-capdrop"), "--list"],
                          capture_output=True, text=True)
    listed = proc.stdout.strip()
    return [] if proc.returncode != 0 or listed == "(none)" else listed.split()


def clab_unusable_reason(topo: Topology | None = None) -> str | None:
    """Why containerlab cannot deploy here, or None when it can."""
    binary = containerlab_binary()
    if binary is None:
        return "containerlab is not installed (make containerlab builds it)"
    if not Path("/proc/modules").exists() and not is_project_build(binary):
        version = containerlab_version(binary)
        if version is None or version < NO_PROC_MODULES_OK:
            return (f"this kernel has no /proc/modules, and the installed containerlab "
                    f"({binary}) aborts without it before v0.76.1; make containerlab "
                    "builds one that does not")
    if not docker_works():
        return "no Docker engine answers"
    lacking = missing_capabilities()
    if lacking and engine_default_runtime() != "dnslab-runc":
        return (f"the capability bounding set lacks {', '.join(lacking)}, so privileged "
                "containers fail under this Docker engine (a dockerd started by "
                "scripts/start-dockerd.sh drops them)")
    if topo is not None:
        missing = missing_images(topo)
        if missing:
            return f"image {missing[0]} is not built (make images)"
    return None


def container(lab: str, node: str) -> str:
    return f"clab-{lab}-{node}"


def _docker(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(["docker", *args], capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise LabError(f"docker {' '.join(args[:2])} failed: {proc.stderr.strip()}",
                       hint="is the Docker engine running? (docker info)")
    return proc


class ClabRuntime(Runtime):
    name = "clab"

    def preflight(self, rendered: RenderedLab) -> None:
        reason = clab_unusable_reason()
        if reason is not None:
            raise LabError(f"the clab runtime cannot run here: {reason}",
                           hint="make containerlab images (it starts dockerd too), "
                                "or RUNTIME=netns")
        self.prepare_nodes(rendered.topology, rendered.topology.nodes)

    def prepare_nodes(self, topology: Topology, nodes: Iterable[str]) -> None:
        for name in nodes:
            node = topology.node(name)
            if _docker("image", "inspect", node.image, check=False).returncode != 0:
                raise LabError(f"image {node.image} (node {name!r}) is not built",
                               hint="make images")

    def leftovers(self, lab: str | None) -> list[str]:
        found: list[str] = []
        if shutil.which("docker") and docker_works():
            prefix = f"clab-{lab}-" if lab else "clab-"
            out = _docker("ps", "-a", "--filter", f"name={prefix}", "--format", "{{.Names}}",
                          check=False).stdout
            found += [f"container {n}" for n in out.split() if n.startswith(prefix)]
            if lab is None and _mgmt_network_orphaned():
                found.append(f"network {MGMT_NETWORK}")
        labs = [lab] if lab else [p.parent.name for p in paths.LABS_STATE.glob("*/bridge")]
        for name in labs:
            found += [f"veth {port}" for port in lab_bridge_ports(name)
                      if Path(f"/sys/class/net/{port}").exists()]
        for state_dir in paths.LABS_STATE.glob("*/bridge"):
            bridge = state_dir.read_text().strip()
            if (lab is None or state_dir.parent.name == lab) and Path(
                    f"/sys/class/net/{bridge}").exists():
                found.append(f"bridge {bridge}")
        found += [f"netns-link {link.name}" for link in dangling_netns_links(lab)]
        return found

    def running(self, lab: str) -> list[str]:
        if not (shutil.which("docker") and docker_works()):
            return []
        prefix = f"clab-{lab}-"
        out = _docker("ps", "--filter", f"name={prefix}", "--filter", "status=running",
                      "--format", "{{.Names}}", check=False).stdout
        return [f"container {n}" for n in out.split() if n.startswith(prefix)]

    def create(self, rendered: RenderedLab, state: LabState, hold: set[str],
               later: set[str] = frozenset()) -> None:
        topo = rendered.topology
        bridge = topo.bridge[:15]
        (rendered.root / "bridge").write_text(bridge)
        if not Path(f"/sys/class/net/{bridge}").exists():
            ip("link", "add", bridge, "type", "bridge")
        ip("link", "set", bridge, "up")
        for name in hold | later:
            (rendered.node_dir(name) / HOLD_FILE).write_text("held for a cold start\n")
        for root in node_visible_roots():
            root.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run([containerlab_binary() or "containerlab", "deploy", "-t",
                               str(rendered.clab_file), "--reconfigure"],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            tail = "\n".join(proc.stderr.strip().splitlines()[-8:])
            raise LabError("containerlab deploy failed", hint="see its output below",
                           detail=tail)
        for node in topo.nodes.values():
            name = container(topo.name, node.name)
            info = json.loads(_docker("inspect", name).stdout)[0]
            pid = info["State"]["Pid"]
            if not info["State"].get("Running") or not pid:
                # its namespace is gone with it: say why it stopped, not /proc/0/ns/net later
                logs = _docker("logs", "--tail", "8", name, check=False)
                raise LabError(f"container {name} stopped right after containerlab deployed it "
                               f"(exit code {info['State'].get('ExitCode')})",
                               hint=f"docker logs {name} (the lab is torn down; KEEP=1 keeps "
                                    "an experiment's lab)",
                               detail=(logs.stdout + logs.stderr).strip()[-1500:])
            state.nodes[node.name].netns = f"/proc/{pid}/ns/net"
            state.nodes[node.name].pid = pid
            state.nodes[node.name].log = str(log_file(rendered.root, node.name))
        from dnslab.runtime.netns import apply_sysctls

        apply_sysctls(rendered, state)
        state.save()

    def start_node(self, state: LabState, node: str) -> None:
        (Path(state.root) / "nodes" / node / HOLD_FILE).unlink(missing_ok=True)

    def stop_node(self, state: LabState, node: str) -> None:
        """Stop the daemon, not the container: its network namespace and eth1 stay, so
        start_node can start it again (the entrypoint holds it while `hold` exists)."""
        (Path(state.root) / "nodes" / node / HOLD_FILE).write_text("stopped by the lab\n")
        _docker("exec", container(state.lab, node), "sh", "-c", STOP_DAEMON, check=False)

    def node_alive(self, state: LabState, node: str) -> bool:
        if (Path(state.root) / "nodes" / node / HOLD_FILE).exists():
            return False
        out = _docker("inspect", "-f", "{{.State.Running}}", container(state.lab, node),
                      check=False).stdout.strip()
        return out == "true"

    def exec_argv(self, state: LabState, node: str, argv: list[str]) -> list[str]:
        return ["docker", "exec", container(state.lab, node), *argv]

    def node_cpu_seconds(self, state: LabState, node: str) -> float | None:
        """From the container's cgroup (v1 cpuacct.usage or v2 cpu.stat): `docker exec`'s
        own rusage would only count the docker client, not the tool it started."""
        pid = state.nodes[node].pid
        try:
            lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
        except OSError:
            return None
        for line in lines:
            _, controllers, path = line.split(":", 2)
            if "cpuacct" in controllers.split(","):
                for mount in ("cpu,cpuacct", "cpuacct", "cpuacct,cpu"):
                    usage = Path(f"/sys/fs/cgroup/{mount}{path}/cpuacct.usage")
                    if usage.exists():
                        return int(usage.read_text()) / 1e9
            if controllers == "":
                stat = Path(f"/sys/fs/cgroup{path}/cpu.stat")
                if stat.exists():
                    for row in stat.read_text().splitlines():
                        if row.startswith("usage_usec "):
                            return int(row.split()[1]) / 1e6
        return None

    def wrap_timeout(self, argv: list[str], timeout: float) -> list[str]:
        return ["timeout", "-s", "KILL", str(max(1, math.ceil(timeout))), *argv]

    def destroy(self, lab: str) -> list[str]:
        removed: list[str] = []
        rendered_file = paths.LABS_STATE / lab / f"{lab}.clab.yml"
        binary = containerlab_binary()
        if binary and rendered_file.exists() and docker_works():
            subprocess.run([binary, "destroy", "-t", str(rendered_file), "--cleanup"],
                           capture_output=True, text=True)
        for item in self.leftovers(lab):
            kind, ident = item.split(" ", 1)
            if kind == "container":
                _docker("rm", "-f", ident, check=False)
            elif kind in ("bridge", "veth"):
                ip("link", "delete", ident, check=False)
            elif kind == "netns-link":
                (Path(NETNS_DIR) / ident).unlink(missing_ok=True)
            removed.append(item)
        # a container removed above leaves its /run/netns link dangling only now
        for link in dangling_netns_links(lab):
            link.unlink(missing_ok=True)
            removed.append(f"netns-link {link.name}")
        if shutil.which("docker") and docker_works() and _mgmt_network_orphaned():
            _docker("network", "rm", MGMT_NETWORK, check=False)
            removed.append(f"network {MGMT_NETWORK}")
        restored = sysctl.restore_host(host_sysctl_file(lab))
        removed += [f"host sysctl {k} restored to {v}" for k, v in restored.items()]
        return removed
