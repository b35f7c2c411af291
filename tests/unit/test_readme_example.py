"""The README's worked example ("Your own question") stays true: its topology file parses as
dnslab parses a user's file, places the servers and the load generator on different cores,
names the images the manifests pin, and its commands name the nodes and addresses it has.
(tests/integration/test_labs_by_hand.py brings it up on both runtimes.)"""

from __future__ import annotations

import re

from dnslab import paths, topology
from dnslab.servers.manifest import kind_version

SECTION = (paths.REPO / "README.md").read_text().split("## Your own question", 1)[1] \
    .split("\n## ", 1)[0]


def test_the_readmes_topology_places_servers_and_generator_on_different_cores(tmp_path):
    blocks = [b for b in re.findall(r"```yaml\n(.*?)```", SECTION, re.S)
              if b.startswith("name: mine")]
    assert len(blocks) == 1
    source = tmp_path / "mine.clab.yml"
    source.write_text(blocks[0])
    topo = topology.load(source)
    client = topo.one("client")
    servers = [n for n in topo.nodes.values() if n is not client]
    assert sorted(n.server for n in servers) == ["bind", "knot", "nsd"]
    assert {n.cpu_set for n in servers} == {"0"} and client.cpu_set == "1"
    for node in topo.nodes.values():
        assert node.image == kind_version(node.image_key).image.reference, node.name
    commands = re.findall(r"```sh\n(.*?)```", SECTION, re.S)[0]
    assert "LAB=mine.clab.yml" in commands and "LAB=mine\n" in commands
    for node in servers:
        assert str(node.address) in commands, node.name
    for node in re.findall(r"NODE=(\S+)", commands):
        assert node in topo.nodes
