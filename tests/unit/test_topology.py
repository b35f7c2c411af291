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
    # PowerDNS is a secondary of the xfr lab only
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
