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

A lab split across machines (`dnslab.hosts`) is deployed as containerlab's multi-node
pattern has it: one topology file per host (`<lab>-<host>.clab.yml`: that host's nodes, the
bridge, a lab name `<lab>-<host>` and a management network of its own), deployed by the
host's own containerlab and Docker engine through the host's transport. The lab bridge of
each host is joined to the others' by a containerlab `vxlan` link whose endpoint is the
bridge itself (containerlab creates the VXLAN device on the host, where the underlay is, and
enslaves it to the bridge): the same kernel path as the netns runtime's VXLAN, declared in
the file, with VNI, UDP port and MTU explicit; every veth of the LAN gets that MTU too. With
more than two hosts the first is the hub (one VXLAN per other host, each its own VNI), so
the LAN stays a tree. What the kernel made of each VXLAN is read back and recorded.
`vxlan-stitch` links are not used: in the pinned 0.69.3 they are never stitched when
deployed from a topology file (containerlab issue #3040, fixed upstream by PR #3083).
"""

from __future__ import annotations

import copy
import json
import math
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

from dnslab import paths
from dnslab.errors import LabError
from dnslab.hosts import LOCAL_HOST, Host
from dnslab.processes import cgroup_cpu_seconds
from dnslab.render import RenderedLab, log_file, node_visible_roots
from dnslab.runtime.base import LabState, Runtime, host_sysctl_file
from dnslab.topology import IFACE, Topology, resolve_node
from dnslab.wait import WaitTimeout, wait_until

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
# a host's part of a split lab: management network 198.19.<base + its inventory index>.0/24
PART_MGMT_BASE = 128
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


def part_name(lab: str, host: str = "") -> str:
    """containerlab's name for a host's part of a split lab (the lab's own on one machine)."""
    return f"{lab}-{host}" if host else lab


def part_file(lab: str, host: str = "") -> Path:
    """The deployable file of a lab (`host` "") or of one host's part of it."""
    return paths.LABS_STATE / lab / f"{part_name(lab, host)}.clab.yml"


def lab_bridge_ports(lab: str, host: str = "") -> list[str]:
    """The host-side veth names of a lab's links (their bridge endpoints)."""
    rendered_file = part_file(lab, host)
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


def container(lab: str, node: str, host: str = "") -> str:
    return f"clab-{part_name(lab, host)}-{node}"


def node_container(state: LabState, node: str) -> str:
    """The container a node of a lab that is up runs in (on its host, when split)."""
    return container(state.lab, node, state.nodes[node].host if state.split else "")


def _docker(*args: str, check: bool = True,
            host: Host = LOCAL_HOST) -> subprocess.CompletedProcess[str]:
    proc = host.run(["docker", *args], check=False)
    if check and proc.returncode != 0:
        where = "" if host.local else f" on host {host.name!r}"
        raise LabError(f"docker {' '.join(args[:2])}{where} failed: {proc.stderr.strip()}",
                       hint="is the Docker engine running? (docker info)")
    return proc


def _engine_answers(host: Host) -> bool:
    if host.local:
        return shutil.which("docker") is not None and docker_works()
    return _docker("version", "--format", "{{.Server.Version}}", check=False,
                   host=host).returncode == 0


def _links(host: Host) -> set[str]:
    """The network interfaces of the host's own namespace (from `ip`: a /sys mounted
    elsewhere, as in an emulated host, shows another namespace's)."""
    listed = json.loads(host.run(["ip", "-j", "link", "show"]).stdout or "[]")
    return {link["ifname"] for link in listed}


def _dangling_links(host: Host, prefix: str) -> list[str]:
    """containerlab's /run/netns links on the host whose container is gone."""
    if host.local:
        return [link.name for link in dangling_netns_links(None)
                if link.name.startswith(prefix)]
    found = host.run(["find", NETNS_DIR, "-maxdepth", "1", "-name", f"{prefix}*", "-xtype",
                      "l"], check=False)
    return [Path(line).name for line in found.stdout.split()]


def _parts(lab: str) -> list[tuple[Host, str]]:
    """Where a lab's parts are: (host, its inventory name), or (this machine, "") for a lab
    that is not split (or not up: what a lab of that name left here)."""
    state = LabState.load(lab)
    if state is None or not state.split:
        return [(LOCAL_HOST, "")]
    return [(host, host.name) for host in state.hosts_handle().all()
            if host.local or host.name in state.hosts_touched]


def _vxlan_devices(state: LabState | None, host: str) -> list[str]:
    if state is None:
        return []
    return [link["device"] for link in state.vxlan.get("links") or [] if host in link["hosts"]]


def _containerlab_on(host: Host, state: LabState | None, name: str) -> str:
    """The containerlab a host runs: its own installed one, else the project's build
    (copied there with the lab's tools)."""
    if host.local:
        return containerlab_binary() or "containerlab"
    facts = (state.host_facts.get(name) or {}) if state is not None else {}
    return (facts.get("clab") or {}).get("containerlab") or "containerlab"


def _part_leftovers(host: Host, lab: str, name: str) -> list[tuple[str, str]]:
    """What of a lab's part is on its host: (kind, name) pairs. A LabError when a host of
    another machine cannot be reached."""
    if not host.local:
        host.run(["true"])  # unreachable: said by the caller, not mistaken for "nothing"
    state = LabState.load(lab)
    found: list[tuple[str, str]] = []
    prefix = f"clab-{part_name(lab, name)}-"
    if _engine_answers(host):
        out = _docker("ps", "-a", "--filter", f"name={prefix}", "--format", "{{.Names}}",
                      check=False, host=host).stdout
        found += [("container", n) for n in out.split() if n.startswith(prefix)]
        network = f"clab-{part_name(lab, name)}"
        if name and _docker("network", "inspect", network, check=False,
                            host=host).returncode == 0:
            found.append(("network", network))
    links = _links(host)
    found += [("veth", port) for port in lab_bridge_ports(lab, name) if port in links]
    found += [("vxlan", dev) for dev in _vxlan_devices(state, name) if dev in links]
    bridge_file = paths.LABS_STATE / lab / "bridge"
    bridge = bridge_file.read_text().strip() if bridge_file.exists() else ""
    if bridge and bridge in links:
        found.append(("bridge", bridge))
    found += [("netns-link", link) for link in _dangling_links(host, prefix)]
    return found


def write_parts(rendered: RenderedLab, state: LabState) -> dict[str, Path]:
    """One deployable file per host of a split lab (see the module): host -> file."""
    raw = yaml.safe_load(rendered.clab_file.read_text())
    bridge_node = rendered.topology.bridge
    vx = state.vxlan
    order = list(state.hosts.get("hosts") or {})
    files = {}
    for name in state.host_names():
        mine = {n for n, node in state.nodes.items() if node.host == name}
        part = copy.deepcopy(raw)
        part["name"] = part_name(state.lab, name)
        subnet = PART_MGMT_BASE + order.index(name) + 1
        part["mgmt"] = {"network": f"clab-{part['name']}",
                        "ipv4-subnet": f"198.19.{subnet}.0/24",
                        "ipv6-subnet": f"3fff:198:19:{subnet:x}::/64"}
        section = part["topology"]
        section["nodes"] = {n: spec for n, spec in section["nodes"].items()
                            if n in mine or n == bridge_node}
        for node in mine:
            spec = section["nodes"][node] or {}
            spec.pop("cpu-set", None)  # its host's, checked there (multihost)
            if state.nodes[node].cpu_set:
                spec["cpu-set"] = state.nodes[node].cpu_set
            section["nodes"][node] = spec
        links = [link for link in section.get("links") or []
                 if all(str(end).partition(":")[0] in section["nodes"]
                        for end in link.get("endpoints", []))]
        for link in links:
            link["mtu"] = vx["mtu"]
        for joined in vx.get("links") or []:
            if name in joined["hosts"]:
                peer = next(h for h in joined["hosts"] if h != name)
                links.append({"type": "vxlan",
                              "endpoint": {"node": bridge_node, "interface": joined["device"]},
                              "remote": vx["underlay"][peer], "vni": joined["vni"],
                              "udp-port": vx["port"], "mtu": vx["mtu"]})
        section["links"] = links
        target = part_file(state.lab, name)
        target.write_text(f"# Rendered by dnslab: host {name}'s part of lab {state.lab} "
                          f"(from {rendered.topology.path}); do not edit.\n"
                          + yaml.safe_dump(part, sort_keys=False))
        files[name] = target
    return files


def read_back_vxlan(host: Host, device: str) -> dict:
    """What the kernel of `host` made of a VXLAN device: VNI, UDP port, MTU, remote, the
    underlay device, and whether it is a port of the lab bridge."""
    shown = json.loads(host.run(["ip", "-d", "-j", "link", "show", "dev", device]).stdout)[0]
    info = shown.get("linkinfo", {}).get("info_data", {})
    return {"device": device, "vni": info.get("id"), "port": info.get("port"),
            "mtu": shown.get("mtu"), "remote": info.get("remote"), "underlay": info.get("link"),
            "bridge": shown.get("master")}


class ClabRuntime(Runtime):
    name = "clab"
    exec_passes_signals = False  # `docker exec` does not pass a signal on to the tool

    def preflight(self, rendered: RenderedLab) -> None:
        reason = clab_unusable_reason()
        if reason is not None:
            raise LabError(f"the clab runtime cannot run here: {reason}",
                           hint="make containerlab images (it starts dockerd too), "
                                "or RUNTIME=netns")
        self.prepare_nodes(rendered.topology, rendered.topology.nodes)

    def prepare_nodes(self, topology: Topology, nodes: Iterable[str]) -> None:
        """Each node's image: a version's image that is not built yet is built now
        (scripts/build-images.sh KIND@VERSION, once); a default one must be (make images)."""
        for name in nodes:
            node = topology.node(name)
            if _docker("image", "inspect", node.image, check=False).returncode == 0:
                continue
            if not node.versioned:
                raise LabError(f"image {node.image} (node {name!r}) is not built",
                               hint="make images")
            print(f"clab: node {name!r} runs {node.image_key}: building its image {node.image} "
                  "(once; a few minutes)", file=sys.stderr)
            build = subprocess.run([str(paths.REPO / "scripts" / "build-images.sh"),
                                    node.image_key], capture_output=True, text=True)
            if build.returncode != 0:
                tail = (build.stderr.strip() or build.stdout.strip()).splitlines()[-1:] or [""]
                raise LabError(f"building image {node.image} for {node.image_key} (node "
                               f"{name!r}) failed: {tail[0]}",
                               hint=f"scripts/build-images.sh {node.image_key} shows why")

    def leftovers(self, lab: str | None) -> list[str]:
        if lab is None:
            found = self._local_leftovers()
            from dnslab.runtime.base import labs_with_state

            for name in labs_with_state():
                found += [item for host, part in _parts(name) if not host.local
                          for item in self._part_items(host, name, part)]
            return list(dict.fromkeys(found))
        return [item for host, part in _parts(lab) for item in self._part_items(host, lab, part)]

    @staticmethod
    def _part_items(host: Host, lab: str, name: str) -> list[str]:
        where = "" if host.local else f" on host {host.name}"
        try:
            return [f"{kind} {ident}{where}" for kind, ident in _part_leftovers(host, lab, name)]
        except LabError as exc:
            return [f"unreachable host {host.name}: {exc.message}"]

    @staticmethod
    def _local_leftovers() -> list[str]:
        """What of any lab is on this machine."""
        found: list[str] = []
        if shutil.which("docker") and docker_works():
            out = _docker("ps", "-a", "--filter", "name=clab-", "--format", "{{.Names}}",
                          check=False).stdout
            found += [f"container {n}" for n in out.split() if n.startswith("clab-")]
            if _mgmt_network_orphaned():
                found.append(f"network {MGMT_NETWORK}")
        for state_dir in paths.LABS_STATE.glob("*/bridge"):
            name = state_dir.parent.name
            found += [f"veth {port}" for port in lab_bridge_ports(name)
                      if Path(f"/sys/class/net/{port}").exists()]
            bridge = state_dir.read_text().strip()
            if Path(f"/sys/class/net/{bridge}").exists():
                found.append(f"bridge {bridge}")
        found += [f"netns-link {link.name}" for link in dangling_netns_links(None)]
        return found

    def running(self, lab: str) -> list[str]:
        found = []
        for host, part in _parts(lab):
            prefix = f"clab-{part_name(lab, part)}-"
            try:
                if not _engine_answers(host):
                    continue
            except LabError:
                continue  # nothing can be known to run there: what was left is cleared
            out = _docker("ps", "--filter", f"name={prefix}", "--filter", "status=running",
                          "--format", "{{.Names}}", check=False, host=host).stdout
            where = "" if host.local else f" on host {host.name}"
            found += [f"container {n}{where}" for n in out.split() if n.startswith(prefix)]
        return found

    def create(self, rendered: RenderedLab, state: LabState, hold: set[str],
               later: set[str] = frozenset()) -> None:
        topo = rendered.topology
        (rendered.root / "bridge").write_text(topo.bridge[:15])
        for name in hold | later:
            (rendered.node_dir(name) / HOLD_FILE).write_text("held for a cold start\n")
        for root in node_visible_roots():
            root.mkdir(parents=True, exist_ok=True)
        if not state.split:
            self._deploy_part(rendered, state, LOCAL_HOST, "", rendered.clab_file)
        else:
            files = write_parts(rendered, state)
            with ThreadPoolExecutor(max_workers=len(files)) as pool:
                timed = {name: pool.submit(self._deploy_part, rendered, state,
                                           state.hosts_handle().get(name), name, file)
                         for name, file in files.items()}
            for name, future in timed.items():  # every host's deploy ended: say the first
                state.host_facts.setdefault(name, {})["clab_deploy_s"] = round(
                    future.result(), 2)
            self._read_back_vxlan(state)
        for name in state.host_names() if state.split else [""]:
            self._inspect(state, name)
        self._wait_addressed(state)
        from dnslab.runtime.netns import apply_sysctls

        apply_sysctls(rendered, state)
        state.save()

    def _deploy_part(self, rendered: RenderedLab, state: LabState, host: Host, name: str,
                     file: Path) -> float:
        """Deploy one host's part: its lab bridge, then `containerlab deploy` there; the
        seconds containerlab took."""
        bridge = rendered.topology.bridge[:15]
        mtu = state.vxlan.get("mtu")
        if not host.local:
            host.run(["mkdir", "-p", *[str(r) for r in node_visible_roots()]])
            # a hold file a run before left there would hold a node this lab starts
            held = [rendered.node_dir(n) / HOLD_FILE for n, node in state.nodes.items()
                    if node.host == name]
            host.run(["rm", "-f", *[str(h) for h in held]])
            host.push([file, *held])
        if bridge not in _links(host):
            host.ip("link", "add", bridge, *(["mtu", str(mtu)] if mtu else []),
                "type", "bridge")
        host.ip("link", "set", bridge, "up")
        started = time.monotonic()
        proc = host.run([_containerlab_on(host, state, name), "deploy", "-t", str(file),
                         "--reconfigure"], check=False)
        if proc.returncode != 0:
            where = "" if host.local else f" on host {host.name!r}"
            tail = "\n".join(proc.stderr.strip().splitlines()[-8:])
            raise LabError(f"containerlab deploy failed{where}", hint="see its output below",
                           detail=tail)
        return time.monotonic() - started

    def _inspect(self, state: LabState, part: str) -> None:
        """Each container of a part: running, its pid and namespace (read on its host)."""
        host = state.hosts_handle().get(part) if part else LOCAL_HOST
        names = {node_container(state, n): n for n, node in state.nodes.items()
                 if not part or node.host == part}
        infos = json.loads(_docker("inspect", *names, host=host).stdout)
        for info in infos:
            cname = info["Name"].lstrip("/")
            pid = info["State"]["Pid"]
            if not info["State"].get("Running") or not pid:
                # its namespace is gone with it: say why it stopped, not /proc/0/ns/net later
                logs = _docker("logs", "--tail", "8", cname, check=False, host=host)
                where = "" if host.local else f" on host {host.name!r}"
                raise LabError(f"container {cname}{where} stopped right after containerlab "
                               f"deployed it (exit code {info['State'].get('ExitCode')})",
                               hint=f"docker logs {cname} (the lab is torn down; KEEP=1 keeps "
                                    "an experiment's lab)",
                               detail=(logs.stdout + logs.stderr).strip()[-1500:])
            node = names[cname]
            state.nodes[node].netns = f"/proc/{pid}/ns/net"
            state.nodes[node].pid = pid
            state.nodes[node].log = str(log_file(Path(state.root), node))

    @staticmethod
    def _wait_addressed(state: LabState, timeout: float = 30.0) -> None:
        """Wait until every node's entrypoint has put its address on its lab interface and
        brought it up: containerlab returns once the links exist, and a probe sent from a
        node before that (a client has no health check to wait for) finds no route."""
        waiting = dict(state.nodes)

        def addressed() -> bool:
            for name, node in list(waiting.items()):
                found = state.host(name).call("interface-addresses", netns=node.netns,
                                              iface=IFACE)
                if found and node.address in found:
                    del waiting[name]
            return not waiting

        try:
            wait_until(addressed, timeout, lambda: f"{', '.join(waiting)} to have its address "
                       f"on {IFACE}", interval=0.05)
        except WaitTimeout as error:
            first = next(iter(waiting))
            raise LabError(f"node {first!r} has no address {waiting[first].address} on its "
                           f"{IFACE} {timeout:g} s after containerlab deployed it",
                           hint=f"its log: {waiting[first].log}") from error

    def _read_back_vxlan(self, state: LabState) -> None:
        """What containerlab made of each VXLAN link, read from the kernel of each host and
        recorded with the plan; a LabError when it differs from the plan (a containerlab
        that names the port field otherwise would give another port)."""
        vx = state.vxlan
        found: dict[str, list[dict]] = {}
        for joined in vx.get("links") or []:
            for name in joined["hosts"]:
                made = read_back_vxlan(state.hosts_handle().get(name), joined["device"])
                found.setdefault(name, []).append(made)
                wanted = {"vni": joined["vni"], "port": vx["port"], "mtu": vx["mtu"],
                          "bridge": self._bridge(state)}
                wrong = {k: made[k] for k, v in wanted.items() if made[k] != v}
                if wrong:
                    raise LabError(f"containerlab made VXLAN {joined['device']} on host "
                                   f"{name!r} with {wrong}, not {wanted}",
                                   hint="a containerlab version whose vxlan link fields differ "
                                        "from 0.69.3's (udp-port, mtu): install 0.69.3 there")
        vx["read_back"] = found

    @staticmethod
    def _bridge(state: LabState) -> str:
        return (Path(state.root) / "bridge").read_text().strip()

    def start_node(self, state: LabState, node: str) -> None:
        hold = Path(state.root) / "nodes" / node / HOLD_FILE
        hold.unlink(missing_ok=True)
        host = state.host(node)
        if not host.local:
            host.run(["rm", "-f", str(hold)])

    def stop_node(self, state: LabState, node: str) -> None:
        """Stop the daemon, not the container: its network namespace and eth1 stay, so
        start_node can start it again (the entrypoint holds it while `hold` exists)."""
        hold = Path(state.root) / "nodes" / node / HOLD_FILE
        hold.write_text("stopped by the lab\n")
        host = state.host(node)
        if not host.local:
            host.run(["sh", "-c", f"echo 'stopped by the lab' > {shlex.quote(str(hold))}"])
        _docker("exec", node_container(state, node), "sh", "-c", STOP_DAEMON, check=False,
                host=host)

    def node_alive(self, state: LabState, node: str) -> bool:
        hold = Path(state.root) / "nodes" / node / HOLD_FILE
        host = state.host(node)
        name = node_container(state, node)
        if host.local:
            if hold.exists():
                return False
            out = _docker("inspect", "-f", "{{.State.Running}}", name, check=False).stdout
            return out.strip() == "true"
        out = host.run(["sh", "-c", f"test -e {shlex.quote(str(hold))} && echo held || "
                        f"docker inspect -f '{{{{.State.Running}}}}' {shlex.quote(name)}"],
                       check=False).stdout
        return out.strip() == "true"

    def node_argv(self, state: LabState, node: str, argv: list[str]) -> list[str]:
        return ["docker", "exec", node_container(state, node), *argv]

    def exec_argv(self, state: LabState, node: str, argv: list[str]) -> list[str]:
        return state.host(node).argv(self.node_argv(state, node, argv))

    def node_cpu_seconds(self, state: LabState, node: str) -> float | None:
        """From the container's cgroup (v1 cpuacct.usage or v2 cpu.stat), read on its host:
        `docker exec`'s own rusage would only count the docker client, not the tool it
        started."""
        pid = state.nodes[node].pid
        if not pid:
            return None
        host = state.host(node)
        return cgroup_cpu_seconds(pid) if host.local else host.call("cgroup-cpu", pid=pid)

    def wrap_timeout(self, argv: list[str], timeout: float) -> list[str]:
        return ["timeout", "-s", "KILL", str(max(1, math.ceil(timeout))), *argv]

    def destroy(self, lab: str) -> list[str]:
        removed: list[str] = []
        state = LabState.load(lab)
        for host, part in _parts(lab):
            where = "" if host.local else f" on host {host.name}"
            try:
                removed += [f"{item}{where}" for item in self._destroy_part(host, lab, part,
                                                                            state)]
            except LabError as exc:
                if host.local:
                    raise
                # the lab cannot be used any more; what it left there is said, not hidden
                print(f"lab down: {exc.message}; what lab {lab!r} left on host {host.name!r} "
                      "stays there until it is reached (or rebooted)", file=sys.stderr)
        if shutil.which("docker") and docker_works() and _mgmt_network_orphaned():
            _docker("network", "rm", MGMT_NETWORK, check=False)
            removed.append(f"network {MGMT_NETWORK}")
        return removed

    @staticmethod
    def _destroy_part(host: Host, lab: str, part: str, state: LabState | None) -> list[str]:
        removed: list[str] = []
        deployed = part_file(lab, part)
        on_host = deployed.exists() if host.local else host.run(
            ["test", "-f", str(deployed)], check=False).returncode == 0
        # without a containerlab here (a netns-only setup) its leftovers below go by docker
        if on_host and _engine_answers(host) and (containerlab_binary() or not host.local):
            host.run([_containerlab_on(host, state, part), "destroy", "-t", str(deployed),
                      "--cleanup"], check=False)
            if part:
                removed.append(f"lab {part_name(lab, part)} (containerlab destroy)")
        for kind, ident in _part_leftovers(host, lab, part):
            if kind == "container":
                _docker("rm", "-f", ident, check=False, host=host)
            elif kind == "network":
                _docker("network", "rm", ident, check=False, host=host)
            elif kind in ("bridge", "veth", "vxlan"):
                host.ip("link", "delete", ident, check=False)
            elif kind == "netns-link":
                host.run(["rm", "-f", f"{NETNS_DIR}/{ident}"], check=False)
            removed.append(f"{kind} {ident}")
        # a container removed above leaves its /run/netns link dangling only now
        for link in _dangling_links(host, f"clab-{part_name(lab, part)}-"):
            host.run(["rm", "-f", f"{NETNS_DIR}/{link}"], check=False)
            removed.append(f"netns-link {link}")
        restored = host.call("restore-host-sysctls", saved_file=str(host_sysctl_file(lab)))
        removed += [f"host sysctl {k} restored to {v}" for k, v in restored.items()]
        return removed
