"""Load a containerlab topology file and give every lab node its role, server and address.

The topology files in `topologies/` are real containerlab files. What the lab needs beyond
containerlab's own fields rides in node labels (`dnslab.role`, `dnslab.server`, and
`dnslab.version` for a version other than the kind's default), so the same file deploys with
containerlab and instantiates on the network-namespace runtime. A node runs one version of its
kind (`Node.image_key`, `bind@9.20`), whose image the manifest names; `with_versions` adds a
node per version an experiment asks for (`SERVERS=bind@9.16,bind@9.20`). A node's
fields are resolved as containerlab resolves them (`resolve_node`): `defaults` < `kinds` <
`groups` < the node itself, so a file names each image once, in a group.

Addressing has exactly one rule, here: the lab LAN is 198.18.0.0/24 (RFC 2544 benchmarking
space, never routed) and the Nth linux node in file order gets 198.18.0.(10+N).
"""

from __future__ import annotations

import copy
import ipaddress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import yaml

from dnslab import cpus, paths, yamlfile
from dnslab.errors import LabError
from dnslab.servers.manifest import (
    ManifestError,
    image_key,
    kind_version,
    kinds_for_role,
    server_kinds,
)

LAN = ipaddress.IPv4Network("198.18.0.0/24")
FIRST_HOST = 10
IFACE = "eth1"

ROLES = {"primary", "secondary", "frontend", "resolver", "client"}
# the server kinds and which role each may take: from their manifests (dnslab/servers/)
SERVERS = set(server_kinds())
ROLE_SERVERS = {role: set(kinds_for_role(role)) for role in ROLES}


def node_address(ordinal: int) -> ipaddress.IPv4Address:
    """The address of the Nth (1-based) linux node of a lab."""
    if not 1 <= ordinal <= 254 - FIRST_HOST:
        raise LabError(
            f"a lab holds at most {254 - FIRST_HOST} nodes, node #{ordinal} is one too many",
            hint="split the topology into smaller labs",
        )
    return LAN.network_address + FIRST_HOST + ordinal


@dataclass
class Node:
    """One lab node: a DNS server or the client, with its place on the lab LAN."""

    name: str
    ordinal: int
    role: str
    server: str
    image: str
    labels: dict[str, str]
    sysctls: dict[str, str]
    bridge_port: str
    cpu_set: str = ""  # containerlab's `cpu-set` ("" = any CPU), normalised ("0-1,3")

    @property
    def address(self) -> ipaddress.IPv4Address:
        return node_address(self.ordinal)

    @property
    def cidr(self) -> str:
        return f"{self.address}/{LAN.prefixlen}"

    def label(self, key: str, default: str | None = None) -> str | None:
        return self.labels.get(f"dnslab.{key}", default)

    @property
    def version(self) -> str:
        """The version of its kind the node runs: its `dnslab.version` label (an old
        topology's `dnslab.image: bind916` means 9.16), else the kind's default."""
        named = self.label("version")
        if named is None and self.label("image"):
            return kind_version(str(self.label("image"))).version
        return named or kind_version(self.server).version

    @property
    def image_key(self) -> str:
        """What the node runs, `kind@version` (images/tags.sh names its image)."""
        return f"{self.server}@{self.version}"

    @property
    def versioned(self) -> bool:
        """Whether the node names a version (it may still be the default one)."""
        return bool(self.label("version") or self.label("image"))


def canonical(server: str) -> str:
    """`bind`, `bind@9.18`, `bind916` -> the one name `kind@version`; a name that is no
    kind is returned as it is (it matches nothing)."""
    try:
        return image_key(server)
    except ManifestError:
        return server


V = TypeVar("V")


class KindMap(dict[str, V]):
    """`kind@version` -> a node (or its name, ...), looked up by any name of a version (`bind`
    is the default version's, `bind916` BIND 9.16's)."""

    def __getitem__(self, name: str) -> V:
        return super().__getitem__(canonical(name))

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and super().__contains__(canonical(name))

    def get(self, name: str, default=None):  # type: ignore[override]
        return super().get(canonical(name), default)


def spare_addresses(topo: Topology, count: int) -> list[ipaddress.IPv4Address]:
    """`count` LAN addresses no node has, from the top of the LAN down (an experiment may give
    a node extra addresses there, e.g. the resolver lab's many dead name servers)."""
    top = max((n.address for n in topo.nodes.values()), default=LAN.network_address)
    spare = [LAN.broadcast_address - 1 - k for k in range(count)]
    if spare and spare[-1] <= top:
        raise LabError(f"{count} spare addresses do not fit in {LAN} above {topo.name}'s "
                       f"last node ({top})",
                       hint=f"ask for at most {int(LAN.broadcast_address) - 1 - int(top)}")
    return spare


@dataclass
class Topology:
    """A parsed topology: the lab's name, its bridge and its nodes in file order."""

    name: str
    path: Path
    bridge: str
    nodes: dict[str, Node] = field(default_factory=dict)
    raw: dict = field(default_factory=dict, repr=False)
    # made by `with_versions` from the file at `path` (which lacks the added nodes)
    derived: bool = False

    def by_role(self, role: str) -> list[Node]:
        return [n for n in self.nodes.values() if n.role == role]

    def one(self, role: str) -> Node:
        found = self.by_role(role)
        if not found:
            raise LabError(
                f"lab {self.name!r} has no {role} node",
                hint=f"add a node with label dnslab.role: {role} to {self.path.name}",
            )
        return found[0]

    def node(self, name: str | None = None, *, role: str | None = None,
             server: str | None = None) -> Node:
        """A node by name, or the one node with this role and/or server.

        `server` names a version of a kind (`bind@9.20`; `bind` is its default version): it is
        matched against each node's `image_key`, so `server="bind"` never picks a node that
        runs another version."""
        if name is not None:
            if name not in self.nodes:
                raise LabError(
                    f"lab {self.name!r} has no node {name!r}",
                    hint="known nodes: " + ", ".join(self.nodes),
                )
            return self.nodes[name]
        found = self.nodes_where(role=role, server=server)
        wanted = " ".join(x for x in (server, role) if x) or "node"
        if len(found) != 1:
            raise LabError(
                f"lab {self.name!r} has {len(found) or 'no'} {wanted} node"
                + (f"s ({', '.join(n.name for n in found)})" if found else ""),
                hint=f"label exactly one node of {self.path.name} with "
                + ", ".join(f"dnslab.{k}: {v}" for k, v in
                            (("role", role), ("server", server)) if v),
            )
        return found[0]

    def nodes_by_server(self, role: str) -> KindMap[Node]:
        """`kind@version` -> the lab's node of that version in `role`, the first in file
        order: the choices a SERVER=/SECONDARY= parameter has (looked up by any name)."""
        found: KindMap[Node] = KindMap()
        for node in self.nodes_where(role=role):
            found.setdefault(node.image_key, node)
        return found

    def names_by_server(self, role: str) -> KindMap[str]:
        """As `nodes_by_server`, the nodes' names: what procedures pass down."""
        return KindMap({key: node.name for key, node in self.nodes_by_server(role).items()})

    def nodes_where(self, *, role: str | None = None, server: str | None = None) -> list[Node]:
        """The nodes with this role and/or server (a kind's version, as in `node`), in file
        order."""
        wanted = canonical(server) if server is not None else None
        return [n for n in self.nodes.values()
                if (role is None or n.role == role)
                and (wanted is None or n.image_key == wanted)]

    def server_role(self, name: str) -> str:
        """The role a node of this kind's version takes: that of the lab's first node of the
        kind, a primary last (BIND's secondary answers what it transferred, as NSD and Knot)."""
        kind = kind_version(name).kind
        nodes = sorted((n for n in self.nodes.values() if n.server == kind and n.role != "client"),
                       key=lambda n: n.role == "primary")
        if not nodes:
            raise LabError(f"lab {self.name!r} has no {kind} node to run {name} as",
                           hint="servers: " + ", ".join(sorted(
                               {n.server for n in self.nodes.values() if n.role != "client"})))
        return nodes[0].role

    def with_versions(self, role: str, names: list[str]) -> Topology:
        """This topology plus a node in `role` for each version in `names` it has no node of:
        a copy of the role's first node of that kind, labelled with the version (named
        `<node><digits>`, `sec-bind920`, linked to the bridge like it). Returns `self` when
        every version has its node."""
        have = self.nodes_by_server(role)
        missing = [kind_version(n) for n in dict.fromkeys(names) if n not in have]
        if not missing:
            return self
        raw = copy.deepcopy(self.raw)
        topo = raw["topology"]
        links = topo.setdefault("links", [])
        ports = {p for n in self.nodes.values() for p in (n.bridge_port,)}
        for wanted in missing:
            template = next((n for n in self.nodes_where(role=role)
                             if n.server == wanted.kind), None)
            if template is None:
                raise LabError(f"lab {self.name!r} has no {role} of kind {wanted.kind} to run "
                               f"{wanted.key} as",
                               hint=f"its {role}s: " + ", ".join(self.nodes_by_server(role)))
            suffix = wanted.version.replace(".", "")
            name = f"{template.name.rstrip('0123456789')}{suffix}"
            port = f"{template.bridge_port[:15 - len(suffix)]}{suffix}"
            if name in self.nodes or port in ports:
                raise LabError(f"lab {self.name!r}: node {name!r} for {wanted.key} would clash "
                               "with one it has", hint=f"label a node of {self.path.name} with "
                               f"dnslab.version: \"{wanted.version}\" instead")
            spec = copy.deepcopy(topo["nodes"][template.name] or {})
            labels = dict(spec.get("labels") or {})
            labels.pop("dnslab.image", None)
            spec["labels"] = {**labels, "dnslab.version": wanted.version}
            spec["image"] = wanted.image.reference
            topo["nodes"][name] = spec
            links.append({"endpoints": [f"{name}:{IFACE}", f"{self.bridge}:{port}"]})
            ports.add(port)
        derived = from_dict(raw, self.path)
        derived.derived = True
        return derived

    @property
    def servers(self) -> set[str]:
        return {n.server for n in self.nodes.values()}


def known_labs() -> list[str]:
    return sorted(p.name.removesuffix(".clab.yml") for p in paths.TOPOLOGIES.glob("*.clab.yml"))


def find_lab(name: str) -> Path:
    """The topology file of a lab name, or a file path given directly."""
    as_path = Path(name)
    if as_path.suffix in (".yml", ".yaml") and as_path.exists():
        return as_path.resolve()
    candidate = paths.TOPOLOGIES / f"{name}.clab.yml"
    if not candidate.exists():
        raise LabError(
            f"unknown lab {name!r}", hint="known labs: " + ", ".join(known_labs())
        )
    return candidate


def load(source: str | Path) -> Topology:
    """Parse and check a topology file; every problem is a LabError naming file and line."""
    path = find_lab(str(source))
    try:
        raw = yamlfile.load(path.read_text())
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        line = mark.line + 1 if mark else "?"
        raise LabError(
            f"{path}:{line}: topology does not parse: {exc.problem}",
            hint="fix the YAML at that line",
        ) from None
    return from_dict(raw, path)


def _fail(path: Path, what: str, hint: str) -> LabError:
    return LabError(f"{path}: {what}", hint=hint)


# containerlab's node fields that are maps: merged over the levels, the more specific
# level's keys winning (types/topology.go GetNodeLabels, GetNodeEnv, GetNodeSysctls)
MAP_FIELDS = ("labels", "env", "sysctls")


def resolve_node(topo: dict, name: str, where: Path | str = "topology") -> dict:
    """A node's effective fields as containerlab resolves them: `defaults` < `kinds.<kind>` <
    `groups.<group>` < the node (containerlab v0.69 types/topology.go).

    Scalars (kind, image, cpu-set, ...) come from the most specific level that sets them, maps
    (labels, env, sysctls) merge with the most specific keys winning, `binds` merge by
    container path. The node's kind is its own, else its group's, else the group `defaults`
    names, else the default kind; its group is its own, else its kind's, else the default
    group."""
    defaults = topo.get("defaults") or {}
    kinds = topo.get("kinds") or {}
    groups = topo.get("groups") or {}
    spec = (topo.get("nodes") or {}).get(name) or {}

    def group_spec(group: str | None) -> dict:
        if group and group not in groups:
            raise LabError(f"{where}: node {name!r} is in group {group!r}, which 'groups:' "
                           "does not define",
                           hint="define it under topology.groups or fix the node's group")
        return (groups.get(group) or {}) if group else {}

    kind = (spec.get("kind") or group_spec(spec.get("group")).get("kind")
            or group_spec(defaults.get("group")).get("kind") or defaults.get("kind"))
    group = spec.get("group") or (kinds.get(kind) or {}).get("group") or defaults.get("group")
    levels = [defaults, kinds.get(kind) or {}, group_spec(group), spec]
    resolved: dict = {}
    for level in levels:
        for key, value in level.items():
            if key in MAP_FIELDS:
                resolved[key] = {**resolved.get(key, {}), **(value or {})}
            elif key == "binds":
                by_target = {_bind_target(b): b for b in resolved.get("binds", [])}
                by_target.update({_bind_target(b): b for b in value or []})
                resolved["binds"] = list(by_target.values())
            elif value not in (None, "", [], {}):
                resolved[key] = value
    resolved["kind"] = kind
    if group:
        resolved["group"] = group
    return resolved


def _bind_target(bind: str) -> str:
    parts = str(bind).split(":")
    return parts[1] if len(parts) > 1 else parts[0]


def from_dict(raw: object, path: Path) -> Topology:
    """Build a Topology from parsed YAML, checking what the lab relies on."""
    if not isinstance(raw, dict) or "topology" not in raw:
        raise _fail(path, "not a containerlab topology", "it needs 'name:' and 'topology:'")
    name = raw.get("name")
    stem = path.name.removesuffix(".clab.yml").removesuffix(".yml")
    if name != stem:
        raise _fail(path, f"name {name!r} differs from the file stem {stem!r}",
                    f"set 'name: {stem}' (containerlab convention)")
    topo = raw["topology"] or {}
    nodes_raw = topo.get("nodes") or {}
    resolved = {n: resolve_node(topo, n, path) for n in nodes_raw}
    bridges = [n for n, spec in resolved.items() if spec.get("kind") == "bridge"]
    if len(bridges) != 1:
        raise _fail(path, f"needs one 'kind: bridge' node (the lab LAN), found {len(bridges)}",
                    "add one bridge node and link every node's eth1 to it")
    bridge = bridges[0]

    ports: dict[str, str] = {}
    for link in topo.get("links") or []:
        ends = (link or {}).get("endpoints") or []
        if len(ends) != 2 or not all(isinstance(e, str) and ":" in e for e in ends):
            raise _fail(path, f"link {ends!r} is not two 'node:interface' endpoints",
                        "write links as endpoints: [node:eth1, bridge:port]")
        (a_node, a_if), (b_node, b_if) = (e.split(":", 1) for e in ends)
        if b_node == bridge:
            node_end, iface, port = a_node, a_if, b_if
        elif a_node == bridge:
            node_end, iface, port = b_node, b_if, a_if
        else:
            raise _fail(path, f"link {ends!r} does not reach the bridge {bridge!r}",
                        "the lab is one LAN: link each node's eth1 to the bridge")
        if iface != IFACE:
            raise _fail(path, f"node {node_end!r} links {iface!r}", f"use {IFACE}")
        if node_end in ports:
            raise _fail(path, f"node {node_end!r} has two links", "one link per node")
        ports[node_end] = port

    topology = Topology(name=name, path=path, bridge=bridge, raw=raw)
    ordinal = 0
    for node_name, spec in resolved.items():
        if node_name == bridge:
            continue
        kind = spec.get("kind")
        if kind != "linux":
            raise _fail(path, f"node {node_name!r} is of kind {kind!r}",
                        "lab nodes are 'kind: linux' (plus the one bridge)")
        labels = spec.get("labels") or {}
        role = labels.get("dnslab.role")
        server = labels.get("dnslab.server")
        if role not in ROLES or server not in SERVERS:
            raise _fail(path, f"node {node_name!r} lacks valid dnslab.role/dnslab.server labels",
                        f"roles: {', '.join(sorted(ROLES))}; servers: {', '.join(sorted(SERVERS))}")
        if server not in ROLE_SERVERS[role]:
            raise _fail(path, f"node {node_name!r}: a {role} cannot be {server}",
                        f"a {role} is one of {', '.join(sorted(ROLE_SERVERS[role]))}")
        version = labels.get("dnslab.version")
        image = str(spec.get("image", ""))
        if version is not None or labels.get("dnslab.image"):
            name_of = f"{server}@{version}" if version is not None else str(labels["dnslab.image"])
            try:
                found = kind_version(name_of)
            except ManifestError as exc:
                raise _fail(path, f"node {node_name!r}: {exc}",
                            "label it with a version the kind's manifest offers") from None
            if found.kind != server:
                raise _fail(path, f"node {node_name!r}: dnslab.image {name_of} is not {server}",
                            f'label it dnslab.version: "<version of {server}>" instead')
            image = found.image.reference  # a version's image is the manifest's
        if node_name not in ports:
            raise _fail(path, f"node {node_name!r} has no link to the bridge",
                        f"add endpoints: [{node_name}:eth1, {bridge}:{node_name}]")
        ordinal += 1
        sysctls = spec.get("sysctls") or {}
        cpu_set = spec.get("cpu-set")
        if cpu_set not in (None, ""):
            try:
                cpu_set = cpus.format_set(cpus.parse(cpu_set))
            except LabError as exc:
                raise _fail(path, f"node {node_name!r}: {exc.message}", exc.hint or "") from None
        topology.nodes[node_name] = Node(
            name=node_name,
            ordinal=ordinal,
            role=role,
            server=server,
            image=image,
            labels={k: str(v) for k, v in labels.items()},
            sysctls={k: str(v) for k, v in sysctls.items()},
            bridge_port=ports[node_name],
            cpu_set=cpu_set or "",
        )
        node_address(ordinal)
    if topology.by_role("secondary") and not topology.by_role("primary"):
        raise _fail(path, "secondaries need a primary", "add a node with dnslab.role: primary")
    return topology
