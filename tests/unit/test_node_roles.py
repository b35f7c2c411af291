"""Procedures find their nodes by role, never by name (issue 16).

Two kinds of proof: each procedure's node-finding function follows a renamed node of a
topology file (the client, the primary, the front-end, the sink), and a scan of the code of
`experiments/` for string literals that equal a node name of a topology file.

The scan's rule. Every string literal (an `ast.Constant` str, docstrings included; f-string
pieces too) that equals the name of a node of some `topologies/*.clab.yml` is a finding,
unless it stands where it means something else than a node:
- a role lookup: the value of a `role=` keyword, or a positional argument of `one`,
  `by_role`, `nodes_by_server`, `names_by_server`, `nodes_where`, `_by_kind`,
  `node_with_role` (the
  topology's and the run's lookups by role), as in `topo.node(role="client")`;
- an experiment parameter: the key of `params[...]` / `params.get(...)` (any object named
  or ending in `params`), or a key of a dict returned by a function named `params` (a cell's
  record of its PRIMARY=/SECONDARY= choices), when the string is a parameter name of an
  experiment file (`primary:` is PRIMARY=, a server kind, not the node `primary`).
Left out of the node names: names that equal a non-role label value of their node (the
resolver lab's `root` node is labelled `dnslab.tier: root`); in code such a string is the
tier label, which is how `ResolverNodes` finds those nodes, and a scan of literals cannot tell
the two apart. Identifiers are not strings: `dict(primary=...)` is not seen; review catches
that.
"""

from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from dnslab import findings, topology
from experiments.f1_tcp_fallback.fallback import MobileNodes
from experiments.f2_dnsdist.dnsdist import DnsdistNodes
from experiments.f3_xfr.xfr import ends

ROOT = Path(__file__).resolve().parents[2]
TOPOLOGIES = sorted((ROOT / "topologies").glob("*.clab.yml"))
ROLE_LOOKUPS = {"one", "by_role", "nodes_by_server", "names_by_server", "nodes_where", "_by_kind",
                "node_with_role"}


def _raw(lab: str) -> dict:
    return yaml.safe_load((ROOT / "topologies" / f"{lab}.clab.yml").read_text())


def renamed(lab: str, old: str, new: str, tmp_path: Path) -> topology.Topology:
    """The lab's topology with node `old` called `new` (its link endpoint too)."""
    raw = _raw(lab)
    nodes = raw["topology"]["nodes"]
    nodes[new] = nodes.pop(old)
    for link in raw["topology"]["links"]:
        link["endpoints"] = [f"{new}:{e.split(':', 1)[1]}" if e.split(":", 1)[0] == old else e
                             for e in link["endpoints"]]
    return topology.from_dict(raw, tmp_path / f"{lab}.clab.yml")


def test_today_the_nodes_have_their_usual_names():
    mobile = MobileNodes.of(topology.load("mobile"))
    assert (mobile.client, mobile.primary) == ("client", "primary")
    assert mobile.servers["bind"] == "sec-bind"
    assert DnsdistNodes.of(topology.load("dnsdist")) == DnsdistNodes(
        frontend="frontend", sink="sink", client="client")


def test_the_mobile_procedure_follows_renamed_nodes(tmp_path):
    topo = renamed("mobile", "client", "mme", tmp_path)
    raw = topo.raw
    raw["topology"]["nodes"]["hss"] = raw["topology"]["nodes"].pop("primary")
    for link in raw["topology"]["links"]:
        link["endpoints"] = [e.replace("primary:", "hss:") for e in link["endpoints"]]
    nodes = MobileNodes.of(topology.from_dict(raw, tmp_path / "mobile.clab.yml"))
    assert (nodes.client, nodes.primary) == ("mme", "hss")
    sets = nodes.placement_sets(SimpleNamespace(generator="1", server="0"), nodes.servers["knot"])
    assert sets == {"mme": "1", "sec-knot": "0", "hss": "0"}


def test_the_dnsdist_procedure_follows_renamed_nodes(tmp_path):
    topo = renamed("dnsdist", "sink", "auth", tmp_path)
    raw = topo.raw
    for old, new in (("frontend", "lb"), ("client", "flooder")):
        raw["topology"]["nodes"][new] = raw["topology"]["nodes"].pop(old)
        for link in raw["topology"]["links"]:
            link["endpoints"] = [e.replace(f"{old}:", f"{new}:") for e in link["endpoints"]]
    nodes = DnsdistNodes.of(topology.from_dict(raw, tmp_path / "dnsdist.clab.yml"))
    assert nodes == DnsdistNodes(frontend="lb", sink="auth", client="flooder")


def test_the_xfr_procedures_follow_a_renamed_client(tmp_path):
    topo = renamed("xfr", "client", "prober", tmp_path)
    run = SimpleNamespace(topology=topo, params={"primary": "bind"},
                          spec=SimpleNamespace(topology="xfr"))
    pair = ends(run, "knot")
    assert (pair.client, pair.primary, pair.secondary) == ("prober", "primary", "sec-knot")


# --- the scan ---------------------------------------------------------------------------------


def node_names() -> set[str]:
    """Every node name of the topology files, but those equal to a non-role label value of
    their node (see the module docstring)."""
    names = set()
    for path in TOPOLOGIES:
        for name, spec in (yaml.safe_load(path.read_text())["topology"]["nodes"] or {}).items():
            labels = {k: str(v) for k, v in ((spec or {}).get("labels") or {}).items()
                      if k != "dnslab.role"}
            if name not in labels.values():
                names.add(name)
    return names


def parameter_names() -> set[str]:
    return {key for name in findings.known_experiments()
            for key in (yaml.safe_load(findings.experiment_file(name).read_text())
                        .get("params") or {})}


def _called(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _is_params(node: ast.AST) -> bool:
    name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")
    return name.endswith("params")


def allowed_literals(tree: ast.AST, parameters: set[str]) -> set[int]:
    """ids of the string constants that stand in a role lookup or name a parameter."""
    allowed: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            allowed |= {id(k.value) for k in node.keywords if k.arg == "role"}
            if _called(node) in ROLE_LOOKUPS:
                allowed |= {id(a) for a in node.args}
            if (_called(node) == "get" and isinstance(node.func, ast.Attribute)
                    and _is_params(node.func.value) and node.args):
                allowed |= _parameter_keys([node.args[0]], parameters)
        elif isinstance(node, ast.Subscript) and _is_params(node.value):
            allowed |= _parameter_keys([node.slice], parameters)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "params":
            for ret in ast.walk(node):
                if isinstance(ret, ast.Return) and isinstance(ret.value, ast.Dict):
                    allowed |= _parameter_keys([k for k in ret.value.keys if k], parameters)
    return allowed


def _parameter_keys(keys: list[ast.expr], parameters: set[str]) -> set[int]:
    return {id(k) for k in keys if isinstance(k, ast.Constant) and k.value in parameters}


def node_names_in(path: Path, names: set[str], parameters: set[str]) -> list[str]:
    """`path:line: "name"` for each string literal that names a node outside a role lookup."""
    tree = ast.parse(path.read_text())
    allowed = allowed_literals(tree, parameters)
    where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
    hits = [node for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and node.value in names and id(node) not in allowed]
    return [f"{where}:{node.lineno}: {node.value!r}"
            for node in sorted(hits, key=lambda n: (n.lineno, n.col_offset))]


def test_the_scan_sees_the_node_names():
    names = node_names()
    assert {"client", "primary", "frontend", "sink", "sec-bind", "auth-knot"} <= names
    assert "root" not in names  # the resolver lab's tier label, see the module docstring
    assert "primary" in parameter_names()


SAMPLE = '''
def cell(run, lab, params, placement):
    client = run.topology.node(role="client").name
    primaries = _by_kind(run, "primary")
    kind = params["primary"] or run.params.get("primary")
    lab.netns("client")
    data = LabData(node_options={"primary": {"notify": "no"}},
                   cpu_sets={"client": placement.generator, "sink": placement.server})
    perf.dnsperf(lab, "client", lab.address("sec-bind"), qfile)
    return lab.state.nodes[f"{'frontend'}"]


class Ends:
    def params(self):
        return {"primary": self.primary_kind, "primary_node": self.primary}
'''


def test_the_scan_finds_node_names_in_a_sample(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(SAMPLE)
    found = [hit.split(": ", 1) for hit in node_names_in(sample, node_names(), parameter_names())]
    assert sorted((int(line.rsplit(":", 1)[1]), name) for line, name in found) == [
        (6, "'client'"), (7, "'primary'"), (8, "'client'"), (8, "'sink'"),
        (9, "'client'"), (9, "'sec-bind'"), (10, "'frontend'")]


@pytest.mark.parametrize("folder", ["experiments", "analysis"])
def test_procedures_name_no_node(folder):
    # a finding's fixtures.py and cases.py are synthetic test data, as tests/ is
    files = [p for p in sorted((ROOT / folder).rglob("*.py"))
             if p.name not in ("fixtures.py", "cases.py")]
    assert len(files) > 5
    names, parameters = node_names(), parameter_names()
    found = [hit for path in files for hit in node_names_in(path, names, parameters)]
    assert not found, ("find the node by role (topology.node(role=...)) instead:\n"
                       + "\n".join(found))
