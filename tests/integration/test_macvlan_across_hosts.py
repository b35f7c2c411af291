"""A lab across two emulated hosts (dnslab.emulate) whose LAN is a macvlan of each host's data
interface instead of the VXLAN: the hosts' underlay veth `ul0` serves as that interface. The
reference lab comes up on the netns runtime, the client on host B queries a server on host A
over UDP and TCP, the data path is in the lab state, and nothing is left on either host; a
data interface a host lacks is one line before anything is created."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from dnslab import lab as lab_engine
from dnslab.emulate import emulated_hosts
from dnslab.errors import LabError
from dnslab.hosts import Inventory, load_inventory
from dnslab.runtime.base import LabState
from dnslab.runtime.netns import namespace
from tests.integration.test_across_hosts import on_host

pytestmark = pytest.mark.integration
DAEMONS = "named|knotd|nsd|dnsdist|unbound|kresd|pdns_recursor"


@pytest.fixture(scope="module")
def hosts_file(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Two emulated hosts without Docker engines (the netns runtime needs none)."""
    with emulated_hosts(tmp_path_factory.mktemp("hosts"),
                        private=[tmp_path_factory.mktemp("results")]) as path:
        yield path


def with_data_interfaces(hosts_file: Path, target: Path, **interfaces: str) -> Inventory:
    raw = yaml.safe_load(hosts_file.read_text())
    for name, interface in interfaces.items():
        raw["hosts"][name]["data_interface"] = interface
    target.write_text(yaml.safe_dump(raw))
    return load_inventory(target)


def left_on_hosts(inventory: Inventory) -> dict[str, str]:
    """Namespaces, daemons in the host's own mount namespace, and links besides the
    emulated host's own (lo, mgmt0, ul0) on each host."""
    mine = ('me=$(readlink /proc/self/ns/mnt); for p in $(pgrep -x "' + DAEMONS + '"); do '
            '[ "$(readlink /proc/$p/ns/mnt)" = "$me" ] && echo "daemon $p"; done; ')
    left = {}
    for name in inventory.hosts:
        found = on_host(inventory, name, f"ip netns list; {mine}"
                                          "ip -br link | grep -v -e '^lo' -e mgmt0 -e ul0; true")
        if found.strip():
            left[name] = found
    return left


def test_reference_lab_across_hosts_on_macvlan(hosts_file: Path, tmp_path: Path) -> None:
    inventory = with_data_interfaces(hosts_file, tmp_path / "hosts.yml", a="ul0", b="ul0")
    lab = lab_engine.up("reference", runtime="netns", inventory=inventory)
    try:
        path = LabState.load("reference").data_path  # as saved, so as a run records it
        assert (path["kind"], path["description"], path["mtu"]) == (
            "macvlan", "macvlan on ul0", 1500)
        assert lab.state.vxlan == {}
        assert lab.state.nodes["client"].host == "b" and lab.state.nodes["primary"].host == "a"
        shown = subprocess.run(lab.exec_argv("client", ["ip", "-d", "link", "show", "eth1"]),
                               capture_output=True, text=True, timeout=30).stdout
        assert "macvlan mode bridge" in shown and "mtu 1500" in shown, shown
        # no lab bridge and no VXLAN on either host: the frames go out on ul0 as they are
        bridge_ns = namespace("reference", lab.rendered.topology.bridge)
        for name in ("a", "b"):
            assert bridge_ns not in on_host(inventory, name, "ip netns list")
        for node in ("primary", "sec-knot"):  # on host a, from the client on host b
            answer = lab.query("client", node, "example.test.", "SOA")
            assert answer.rcode == "NOERROR" and answer.authoritative
            assert lab.query("client", node, "example.test.", "SOA", tcp=True).serial == \
                answer.serial
        # nodes on one host reach each other through the macvlans' bridge mode
        assert lab.query("client", "resolver", "www.example.test.", "A").answers >= 1
    finally:
        removed = lab_engine.down("reference")
    assert any("on host a" in item for item in removed)
    assert any("on host b" in item for item in removed)
    assert lab_engine.leftovers("reference") == []
    assert left_on_hosts(inventory) == {}


def test_a_data_interface_a_host_lacks_is_one_line_before_anything_is_created(
        hosts_file: Path, tmp_path: Path) -> None:
    inventory = with_data_interfaces(hosts_file, tmp_path / "hosts.yml", a="ul0", b="nosuch0")
    with pytest.raises(LabError) as caught:
        lab_engine.up("reference", runtime="netns", inventory=inventory)
    assert caught.value.message == "host 'b''s data_interface 'nosuch0' does not exist there"
    assert "\n" not in caught.value.one_line()
    assert lab_engine.leftovers("reference") == []
    assert left_on_hosts(inventory) == {}
