"""Render every node's configuration from one set of Jinja templates, for both runtimes.

A lab is rendered into `build/labs/<lab>/`: a folder per node (`nodes/<node>/`) with the
daemon's configuration, `run.sh` (which execs the daemon in the foreground) and `node.env`,
plus a containerlab file that bind-mounts those folders at the same absolute path. So the
netns runtime and the containers read byte-identical files.

What the lab serves (zones, per-node options and sysctls) is a `LabData`; experiments build
their own, `reference_data` gives the reference lab's small emulated internet.
"""

from __future__ import annotations

import base64
import copy
import re
import secrets
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import jinja2
import yaml

from dnslab import certificates, cpus, paths
from dnslab.errors import LabError
from dnslab.servers import driver, merge_options
from dnslab.servers.base import DOH_PATH, TLS_CERT, TLS_KEY, TRANSPORT_PORTS
from dnslab.servers.manifest import ENCRYPTED_TRANSPORTS, kind_version
from dnslab.topology import IFACE, LAN, Node, Topology


@dataclass(frozen=True)
class ZoneRef:
    """A zone the primary serves from `path`; secondaries transfer it when `on_secondaries`."""

    name: str
    path: Path
    on_secondaries: bool = True

    @property
    def file_name(self) -> str:
        if self.name in (".", ""):
            return "root.zone"
        return re.sub(r"[^A-Za-z0-9._-]", "_", self.name.rstrip(".")) + ".zone"


@dataclass
class LabData:
    """What a lab serves and how each node is tuned."""

    zones: list[ZoneRef]
    health_zone: str
    node_options: dict[str, dict] = field(default_factory=dict)
    sysctls: dict[str, dict[str, str]] = field(default_factory=dict)
    extra_binds: list[Path] = field(default_factory=list)
    # per-node zone lists for labs whose authoritative nodes serve different zones (an
    # emulated internet: root, TLD and second-level servers); a node listed here serves
    # exactly these zones, every other node gets its role's default (`zones_for`)
    node_zones: dict[str, list[ZoneRef]] = field(default_factory=dict)
    # per-node CPU placement (containerlab's `cpu-set`, e.g. "1" or "0-1"), over the
    # topology's own `cpu-set`; an experiment keeps its load generator off the server's cores
    cpu_sets: dict[str, str] = field(default_factory=dict)
    # WAN emulation per node: {"delay_ms", "jitter_ms", "loss_pct"} on its eth1 output
    # (dnslab.wan; applied by lab.up on either runtime)
    wan: dict[str, dict[str, float]] = field(default_factory=dict)
    # the primary node the secondaries transfer from (a topology may offer one per server
    # kind); None: the topology's first primary
    primary: str | None = None
    # how long each node may take to answer its health query (None: DNSLAB_HEALTH_TIMEOUT,
    # 30 s); a primary loading a TLD-scale zone (14 M records) needs minutes
    health_timeout_s: float | None = None
    # a lab across hosts: which CPUs a node's set names is its own host's business
    # (multihost.check_cpu_sets against each host's facts), not this controller's
    cpus_per_host: bool = False


@dataclass
class RootServer:
    ns_name: str
    address: str


@dataclass
class RenderedLab:
    """The rendered lab: where its node folders and its containerlab file are."""

    topology: Topology
    data: LabData
    root: Path

    def node_dir(self, node: str) -> Path:
        return self.root / "nodes" / node

    @property
    def clab_file(self) -> Path:
        return self.root / f"{self.topology.name}.clab.yml"

    def zones_for(self, node: Node) -> list[ZoneRef]:
        if node.name in self.data.node_zones:
            return list(self.data.node_zones[node.name])
        if node.role == "primary":
            return list(self.data.zones)
        if node.role == "secondary":
            return [z for z in self.data.zones if z.on_secondaries]
        return []


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(paths.TEMPLATES),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )


def lab_dir(lab: str) -> Path:
    return paths.LABS_STATE / lab


def _serial() -> int:
    return int(time.time())


def reference_data(topology: Topology, out: Path) -> LabData:
    """The reference lab's zones: a lab root, the `test.` TLD and `example.test.`."""
    env = _environment()
    zone_dir = out / "zones"
    zone_dir.mkdir(parents=True, exist_ok=True)
    primary = topology.one("primary")
    context = {
        "primary": primary,
        "nodes": list(topology.nodes.values()),
        "secondaries": topology.by_role("secondary"),
        # who serves example.test.: its secondaries, or in a lab without any (tcpauth,
        # resolver, dnsdist) every primary, so the zone has NS records and loads
        "example_servers": topology.by_role("secondary") or topology.by_role("primary"),
        "root_servers": root_servers(topology),
        "serial": _serial(),
    }
    zones = []
    for name, template, on_secondaries in (
        (".", "root.zone.j2", False),
        ("test.", "test.zone.j2", False),
        ("example.test.", "example.test.zone.j2", True),
    ):
        target = zone_dir / ZoneRef(name, Path()).file_name
        target.write_text(env.get_template(f"zones/{template}").render(**context))
        zones.append(ZoneRef(name, target, on_secondaries))
    return LabData(zones=zones, health_zone="example.test.")


def root_servers(topology: Topology) -> list[RootServer]:
    """The lab root's name servers: the primary, named inside the lab's own `test.` TLD."""
    primary = topology.one("primary")
    return [RootServer(f"{primary.name}.nodes.test.", str(primary.address))]


def _primary(topology: Topology, data: LabData) -> Node | None:
    if data.primary is not None:
        chosen = topology.node(data.primary)
        if chosen.role != "primary":
            raise LabError(f"node {chosen.name!r} is a {chosen.role}, not a primary",
                           hint="primaries: " + ", ".join(n.name for n in
                                                          topology.by_role("primary")))
        return chosen
    primaries = topology.by_role("primary")
    return primaries[0] if primaries else None


def node_cores(rendered: RenderedLab, node: Node) -> int:
    """How many cores a node is given: those of its cpu-set, else every CPU this host
    offers (what its daemon's workers are counted against)."""
    cpu_set = node_cpu_set(rendered, node)
    return len(cpus.parse(cpu_set)) if cpu_set else len(cpus.available())


def node_options(rendered: RenderedLab, node: Node) -> dict:
    """The options a node's templates read: its kind's benchmark-grade defaults (one worker
    per core it is given, no rate limiting: `Driver.benchmark_options`), then what the
    experiment sets for it. So a lab brought up by hand is configured for benchmarking as an
    experiment's is. Options the node's version does not know (its manifest row's
    `lacks_options`) are left out."""
    defaults = driver(node.server).benchmark_options(node_cores(rendered, node))
    options = merge_options(defaults, rendered.data.node_options.get(node.name, {}))
    lacks = kind_version(node.image_key).image.lacks_options
    return {key: value for key, value in options.items() if key not in lacks}


def _node_context(topology: Topology, data: LabData, rendered: RenderedLab, node: Node) -> dict:
    secondaries = topology.by_role("secondary")
    backends_label = node.label("backends")
    if backends_label:
        backends = [topology.node(n.strip()) for n in backends_label.split(",") if n.strip()]
    else:
        backends = secondaries or topology.by_role("primary")
    return {
        "node": node,
        # the node's version of its kind, comparable: {% if version >= (9, 20) %}
        "version": tuple(int(part) for part in node.version.split(".")),
        "node_dir": str(rendered.node_dir(node.name)),
        "lan": str(LAN),
        "zones": rendered.zones_for(node),
        "primary": _primary(topology, data),
        "secondaries": secondaries,
        "backends": backends,
        "health_zone": data.health_zone,
        "root_servers": root_servers(topology) if topology.by_role("primary") else [],
        "opts": node_options(rendered, node),
        "rndc_secret": base64.b64encode(secrets.token_bytes(32)).decode(),
        # encrypted listeners (Driver.transport_options): where, and the lab's certificate
        "ports": TRANSPORT_PORTS,
        "doh_path": DOH_PATH,
        "tls_cert": str(rendered.node_dir(node.name) / TLS_CERT),
        "tls_key": str(rendered.node_dir(node.name) / TLS_KEY),
    }


def render(topology: Topology, data: LabData, out: Path | None = None) -> RenderedLab:
    """Write every node folder and the containerlab file; replaces an older rendering."""
    out = out or lab_dir(topology.name)
    rendered = RenderedLab(topology=topology, data=data, root=out)
    nodes_root = out / "nodes"
    if nodes_root.exists():
        shutil.rmtree(nodes_root)
    env = _environment()
    for node in topology.nodes.values():
        node_dir = rendered.node_dir(node.name)
        for sub in ("zones", "db", "xfr"):
            (node_dir / sub).mkdir(parents=True, exist_ok=True)
        context = _node_context(topology, data, rendered, node)
        if any(context["opts"].get(t) for t in ENCRYPTED_TRANSPORTS):
            certificates.make(node_dir, str(node.address), node.name)
        rendered_files = {"run.sh": ""}
        try:
            for name, template in driver(node.server).templates().items():
                rendered_files[name] = env.get_template(template).render(**context)
        except jinja2.TemplateError as exc:
            raise LabError(f"rendering {node.server} config for node {node.name!r} failed: {exc}",
                           hint="check the node options the experiment passes") from None
        rendered_files["run.sh"] = "#!/bin/sh\n" + rendered_files["run.sh"]
        for name, text in rendered_files.items():
            (node_dir / name).write_text(text)
        (node_dir / "node.env").write_text(
            f"DNSLAB_NODE={node.name}\nDNSLAB_ROLE={node.role}\nDNSLAB_SERVER={node.server}\n"
            f"DNSLAB_ADDR={node.cidr}\nDNSLAB_IFACE={IFACE}\n"
        )
    write_clab_file(rendered)
    return rendered


def node_sysctls(rendered: RenderedLab, node: Node) -> dict[str, str]:
    """The topology's sysctls for a node, overlaid with the experiment's profile."""
    return {**node.sysctls, **rendered.data.sysctls.get(node.name, {})}


LINK_MTU = 1500


def node_visible_roots() -> list[Path]:
    """The one rule for files a node reads: they live under the build folder (configs,
    zones, query files, tools) or the results folder (per-run inputs). Both are mounted
    into every container at the same absolute path, so a path that works on the host
    works in every node, on both runtimes."""
    return [paths.BUILD.resolve(), paths.RESULTS.resolve()]


def node_visible(path: Path) -> bool:
    resolved = Path(path).resolve()
    return any(resolved.is_relative_to(root) for root in node_visible_roots())


def log_file(root: Path, node: str) -> Path:
    """Where a node's daemon writes its output (both runtimes): `<lab folder>/logs/<node>.log`."""
    return root / "logs" / f"{node}.log"


def _per_node_sysctls(sysctls: dict[str, str]) -> dict[str, str]:
    """The keys Docker can set in a container's own namespace; host-wide ones (refused or,
    when allowed, set on the host) are the runtime's business after deploy."""
    if not sysctls:
        return {}
    from dnslab.sysctl import split_per_node

    try:
        per_node, _ = split_per_node(list(sysctls))
    except LabError:  # no root to probe a namespace: leave the decision to deploy time
        return sysctls
    return {k: v for k, v in sysctls.items() if k in per_node}


def node_cpu_set(rendered: RenderedLab, node: Node) -> str:
    """The node's CPU placement: the experiment's, else the topology's; "" = any CPU."""
    wanted = rendered.data.cpu_sets.get(node.name) or node.cpu_set
    if not wanted:
        return ""
    if rendered.data.cpus_per_host:
        return cpus.format_set(cpus.parse(wanted))
    return cpus.check(wanted, node.name)


def node_mounts(rendered: RenderedLab, node: Node) -> list[str]:
    """The host folders a node sees at their own path: the node-visible roots, its own folder
    when outside them, and the folders of zones outside them (a test's tmp dir). The clab
    file binds them into the container; the netns runtime mounts them into an image node's
    chroot."""
    all_zones = [*rendered.data.zones, *(z for zs in rendered.data.node_zones.values() for z in zs)]
    outside = sorted({str(z.path.parent.resolve()) for z in all_zones
                      if not node_visible(z.path.parent)})
    node_dir = rendered.node_dir(node.name)
    own = [] if node_visible(node_dir) else [str(node_dir)]
    return [str(r) for r in node_visible_roots()] + own + outside


def write_clab_file(rendered: RenderedLab) -> Path:
    """The deployable containerlab file: the source topology plus binds, env, sysctls and
    each node's `cpu-set`.

    Nodes get `network-mode: none`: no management network, so a container's only route is
    the lab LAN on eth1 (as on the netns runtime) and no packet can leave the machine."""
    topo = copy.deepcopy(rendered.topology.raw)
    for root in node_visible_roots():
        root.mkdir(parents=True, exist_ok=True)  # a fresh clone has no results/ yet
    roots = [str(r) for r in node_visible_roots()]
    for extra in rendered.data.extra_binds:
        if not node_visible(extra):
            raise LabError(f"{extra} is outside the folders every node sees",
                           hint="write files a node reads under " + " or ".join(roots))
    for node in rendered.topology.nodes.values():
        spec = topo["topology"]["nodes"][node.name] or {}
        node_dir = str(rendered.node_dir(node.name))
        if node.image:  # a node's version names its image (topology.Node.version)
            spec["image"] = node.image
        spec["binds"] = [f"{d}:{d}" for d in node_mounts(rendered, node)]
        spec["network-mode"] = "none"
        spec["env"] = {**(spec.get("env") or {}), "DNSLAB_NODE_DIR": node_dir,
                       "DNSLAB_LOG": str(log_file(rendered.root, node.name))}
        sysctls = _per_node_sysctls(node_sysctls(rendered, node))
        if sysctls:
            spec["sysctls"] = sysctls
        cpu_set = node_cpu_set(rendered, node)
        if cpu_set:
            spec["cpu-set"] = cpu_set
        topo["topology"]["nodes"][node.name] = spec
    for link in topo["topology"].get("links") or []:
        # the kernel's default, as on the netns runtime's veths: containerlab's 9500 is more
        # than XDP on a veth accepts ("Peer MTU is too large to set XDP", kxdpgun)
        link.setdefault("mtu", LINK_MTU)
    rendered.clab_file.parent.mkdir(parents=True, exist_ok=True)
    rendered.clab_file.write_text(
        "# Rendered by dnslab from " + str(rendered.topology.path) + "; do not edit.\n"
        + yaml.safe_dump(topo, sort_keys=False)
    )
    return rendered.clab_file
