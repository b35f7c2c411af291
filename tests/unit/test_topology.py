"""Topology loading, the addressing rule and the errors a bad topology file gets."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest

from dnslab import topology
from dnslab.errors import LabError

GOOD = """\
name: {name}
topology:
  defaults: {{kind: linux}}
  nodes:
    p1: {{image: x, labels: {{dnslab.role: primary, dnslab.server: bind}}}}
    s1: {{image: x, labels: {{dnslab.role: secondary, dnslab.server: knot}}}}
    c1: {{image: x, labels: {{dnslab.role: client, dnslab.server: tools}}}}
    lan: {{kind: bridge}}
  links:
    - endpoints: [p1:eth1, lan:p1]
    - endpoints: [s1:eth1, lan:s1]
    - endpoints: [c1:eth1, lan:c1]
"""


def write(tmp_path: Path, text: str, name: str = "mini") -> Path:
    path = tmp_path / f"{name}.clab.yml"
    path.write_text(text)
    return path


def test_reference_lab_has_one_node_of_each_kind():
    topo = topology.load("reference")
    assert topo.name == "reference"
    # PowerDNS is a secondary of the xfr and mobile labs only
    assert {n.server for n in topo.nodes.values()} == topology.SERVERS - {"pdns"}
    assert topo.one("primary").server == "bind"
    assert {n.server for n in topo.by_role("secondary")} == {"bind", "knot", "nsd"}


def test_addresses_follow_file_order_on_the_benchmarking_subnet(tmp_path):
    topo = topology.load(write(tmp_path, GOOD.format(name="mini")))
    assert [str(n.address) for n in topo.nodes.values()] == [
        "198.18.0.11", "198.18.0.12", "198.18.0.13"]
    for node in topo.nodes.values():
        assert node.address in ipaddress.ip_network("198.18.0.0/15")
        assert node.cidr.endswith("/24")


def test_address_rule_rejects_too_many_nodes():
    with pytest.raises(LabError, match="at most"):
        topology.node_address(300)


def test_name_must_equal_file_stem(tmp_path):
    with pytest.raises(LabError, match="differs from the file stem"):
        topology.load(write(tmp_path, GOOD.format(name="other")))


def test_yaml_error_names_file_and_line(tmp_path):
    path = write(tmp_path, "name: mini\ntopology:\n  nodes: [unclosed\n")
    with pytest.raises(LabError) as exc:
        topology.load(path)
    assert f"{path}:" in exc.value.message
    assert "does not parse" in exc.value.message


def test_unknown_lab_lists_known_ones():
    with pytest.raises(LabError) as exc:
        topology.load("no-such-lab")
    assert "reference" in (exc.value.hint or "")


def test_node_without_labels_is_rejected_with_hint(tmp_path):
    text = GOOD.format(name="mini").replace(
        "labels: {dnslab.role: client, dnslab.server: tools}", "labels: {}")
    with pytest.raises(LabError, match="c1"):
        topology.load(write(tmp_path, text))


def test_role_and_server_must_match(tmp_path):
    text = GOOD.format(name="mini").replace("dnslab.role: client, dnslab.server: tools",
                                            "dnslab.role: resolver, dnslab.server: nsd")
    with pytest.raises(LabError, match="a resolver cannot be nsd"):
        topology.load(write(tmp_path, text))


def test_node_must_link_to_the_bridge(tmp_path):
    text = GOOD.format(name="mini").replace("    - endpoints: [c1:eth1, lan:c1]\n", "")
    with pytest.raises(LabError, match="no link to the bridge"):
        topology.load(write(tmp_path, text))


LAYERED = """\
name: layered
topology:
  defaults:
    kind: linux
    image: from-defaults
    labels: {dnslab.role: secondary, level: defaults}
    sysctls: {a: defaults, b: defaults, c: defaults, d: defaults}
  kinds:
    linux:
      image: from-kind
      labels: {level: kind}
      sysctls: {b: kind, c: kind, d: kind}
  groups:
    knot:
      image: from-group
      labels: {dnslab.server: knot, level: group}
      sysctls: {c: group, d: group}
    primaries:
      labels: {dnslab.role: primary, dnslab.server: bind}
      cpu-set: "1"
  nodes:
    p1: {group: primaries}
    s1: {group: knot, sysctls: {d: node}}
    s2: {group: knot, image: from-node, labels: {level: node}}
    lan: {kind: bridge}
  links:
    - endpoints: [p1:eth1, lan:p1]
    - endpoints: [s1:eth1, lan:s1]
    - endpoints: [s2:eth1, lan:s2]
"""


def test_fields_resolve_as_containerlab_does(tmp_path):
    """defaults < kinds < groups < node, for scalars (image, cpu-set) and maps (labels,
    sysctls merged key by key)."""
    topo = topology.load(write(tmp_path, LAYERED, "layered"))
    p1, s1, s2 = (topo.node(n) for n in ("p1", "s1", "s2"))
    assert (p1.role, p1.server, p1.image, p1.cpu_set) == ("primary", "bind", "from-kind", "1")
    assert p1.labels["level"] == "kind"
    assert (s1.role, s1.server, s1.image) == ("secondary", "knot", "from-group")
    assert s1.labels["level"] == "group"
    assert s1.sysctls == {"a": "defaults", "b": "kind", "c": "group", "d": "node"}
    assert (s2.image, s2.labels["level"]) == ("from-node", "node")
    assert topo.bridge == "lan"


def test_group_supplies_kind_and_kind_supplies_group():
    raw = {"defaults": {"kind": "bridge"},
           "kinds": {"linux": {"group": "g"}},
           "groups": {"g": {"image": "img"}, "linuxes": {"kind": "linux"}},
           "nodes": {"a": {"group": "linuxes"}, "b": {"kind": "linux"}, "c": {}}}
    assert topology.resolve_node(raw, "a")["kind"] == "linux"
    assert topology.resolve_node(raw, "b")["image"] == "img"
    assert topology.resolve_node(raw, "c")["kind"] == "bridge"


def test_binds_merge_by_container_path():
    raw = {"defaults": {"binds": ["/a:/x", "/b:/y"]},
           "groups": {"g": {"binds": ["/c:/y:ro"]}},
           "nodes": {"n": {"group": "g", "binds": ["/d:/z"]}}}
    assert sorted(topology.resolve_node(raw, "n")["binds"]) == ["/a:/x", "/c:/y:ro", "/d:/z"]


def test_unknown_group_is_an_error(tmp_path):
    text = LAYERED.replace("s1: {group: knot,", "s1: {group: knott,")
    with pytest.raises(LabError, match="group 'knott'"):
        topology.load(write(tmp_path, text, "layered"))


def test_node_by_role_and_server():
    topo = topology.load("mobile")
    assert topo.node(role="secondary", server="knot").name == "sec-knot"
    # a node running a variant image answers to its variant, not to its server kind
    assert topo.node(role="secondary", server="bind").name == "sec-bind"
    assert topo.node(role="secondary", server="bind916").name == "sec-bind916"
    assert topo.node(role="client").server == "tools"
    with pytest.raises(LabError, match="has 2 bind node"):
        topo.node(server="bind")
    with pytest.raises(LabError, match="has no unbound resolver node"):
        topo.node(role="resolver", server="unbound")


def test_nodes_by_server_are_the_choices_of_a_role():
    mobile = topology.load("mobile")
    by_version = mobile.nodes_by_server("secondary")
    assert {k: n.name for k, n in by_version.items()} == {
        "bind@9.18": "sec-bind", "knot@3.2": "sec-knot", "nsd@4.6": "sec-nsd",
        "bind@9.16": "sec-bind916", "pdns@4.7": "sec-pdns"}
    # any name of a version finds its node: the kind alone is its default version
    assert by_version["bind"].name == "sec-bind" and by_version["bind916"].name == "sec-bind916"
    assert "bind@9.20" not in by_version and by_version.get("knot@3.4") is None
    tcpauth = topology.load("tcpauth")
    assert {k: n.name for k, n in tcpauth.nodes_by_server("primary").items()} == {
        "knot@3.2": "auth-knot", "bind@9.18": "auth-bind", "nsd@4.6": "auth-nsd"}
    assert tcpauth.nodes_by_server("resolver") == {}


def test_a_run_adds_a_node_per_version_it_names_copying_the_kinds_first_node():
    mobile = topology.load("mobile")
    assert mobile.with_versions("secondary", ["bind", "bind916", "bind@9.18"]) is mobile
    more = mobile.with_versions("secondary", ["bind@9.16", "bind@9.20", "nsd@4.12", "bind@9.20"])
    assert more.derived and not mobile.derived
    added = [n for n in more.nodes.values() if n.name not in mobile.nodes]
    assert [(n.name, n.image_key, n.role, n.bridge_port) for n in added] == [
        ("sec-bind920", "bind@9.20", "secondary", "mob-sec-bind920"),
        ("sec-nsd412", "nsd@4.12", "secondary", "mob-sec-nsd412")]
    assert added[0].image == "dnslab/bind9:9.20.30-1-deb13u1"
    # the next addresses; the copies keep their template's labels but the version
    assert [n.ordinal for n in added] == [len(mobile.nodes) + 1, len(mobile.nodes) + 2]
    assert more.node("sec-bind920").labels == {**mobile.node("sec-bind").labels,
                                               "dnslab.version": "9.20"}
    assert more.node(role="secondary", server="bind@9.20").name == "sec-bind920"
    with pytest.raises(LabError, match="no primary of kind pdns"):
        mobile.with_versions("primary", ["pdns@4.9"])


def test_a_version_label_is_checked_against_the_manifest(tmp_path):
    text = topology.load("mobile").path.read_text().replace(
        'dnslab.version: "9.16"', 'dnslab.version: "9.14"')
    (tmp_path / "mobile.clab.yml").write_text(text)
    with pytest.raises(LabError, match="sec-bind916.*offers no bind 9.14.*bind@9.16"):
        topology.load(tmp_path / "mobile.clab.yml")
