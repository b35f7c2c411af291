"""A lab split across hosts on the clab runtime: one containerlab file per host, as
containerlab's multi-node pattern has it (its nodes, the bridge, its own lab name and
management network, the VXLAN link to the other host, every LAN link at the VXLAN's MTU)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from dnslab import paths, render, topology
from dnslab.runtime import clab
from dnslab.runtime.base import LabState, NodeState


@pytest.fixture
def parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, dict]:
    monkeypatch.setattr(paths, "LABS_STATE", tmp_path / "labs")
    topo = topology.load("reference")
    out = tmp_path / "labs" / "reference"
    rendered = render.render(topo, render.reference_data(topo, out), out)
    state = LabState(lab="reference", runtime="clab", topology=str(topo.path), root=str(out))
    for node in topo.nodes.values():
        host = "b" if node.role == "client" else "a"
        state.nodes[node.name] = NodeState(
            name=node.name, role=node.role, server=node.server, address=str(node.address),
            netns="", log="", host=host, cpu_set="1" if host == "b" else "")
    state.hosts = {"hosts": {"a": {}, "b": {}}}
    state.vxlan = {"vni": 4242, "port": 4789, "mtu": 1450,
                   "underlay": {"a": "198.19.0.1", "b": "198.19.0.2"},
                   "links": [{"hosts": ["a", "b"], "vni": 4242, "device": "vx4242"}]}
    files = clab.write_parts(rendered, state)
    assert files == {h: out / f"reference-{h}.clab.yml" for h in ("a", "b")}
    return {h: yaml.safe_load(f.read_text()) for h, f in files.items()}


def test_each_host_gets_its_nodes_the_bridge_and_a_name_of_its_own(parts: dict) -> None:
    assert parts["a"]["name"] == "reference-a" and parts["b"]["name"] == "reference-b"
    assert set(parts["b"]["topology"]["nodes"]) == {"client", "br-reference"}
    assert set(parts["a"]["topology"]["nodes"]) == {
        "primary", "sec-bind", "sec-knot", "sec-nsd", "frontend", "resolver", "res-kresd",
        "res-recursor", "br-reference"}
    assert parts["b"]["topology"]["nodes"]["client"]["cpu-set"] == "1"  # its host's CPU
    assert "cpu-set" not in parts["a"]["topology"]["nodes"]["primary"]
    assert clab.container("reference", "client", "b") == "clab-reference-b-client"
    subnets = {parts[h]["mgmt"]["ipv4-subnet"] for h in parts}
    assert subnets == {"198.19.129.0/24", "198.19.130.0/24"}
    assert {parts[h]["mgmt"]["network"] for h in parts} == {"clab-reference-a",
                                                           "clab-reference-b"}


def test_the_lan_spans_hosts_over_a_vxlan_link_to_the_bridge_with_one_mtu(parts: dict) -> None:
    for host, peer in (("a", "198.19.0.2"), ("b", "198.19.0.1")):
        links = parts[host]["topology"]["links"]
        vxlan = [link for link in links if link.get("type") == "vxlan"]
        assert vxlan == [{"type": "vxlan", "endpoint": {"node": "br-reference",
                                                        "interface": "vx4242"},
                          "remote": peer, "vni": 4242, "udp-port": 4789, "mtu": 1450}]
        assert all(link["mtu"] == 1450 for link in links)
    veths = [link["endpoints"] for link in parts["b"]["topology"]["links"] if "endpoints" in link]
    assert veths == [["client:eth1", "br-reference:ref-client"]]
    assert clab.lab_bridge_ports("reference", "b") == ["ref-client"]
