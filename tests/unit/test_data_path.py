"""The lab LAN across hosts over a dedicated data interface (macvlan) instead of the VXLAN:
which hosts ask for it, the one-line refusals before anything is created, the plan (MTU,
what is recorded), and the links the netns runtime makes of it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from dnslab import multihost
from dnslab.errors import LabError
from dnslab.hosts import LOCAL_HOST, load_inventory
from dnslab.runtime.base import LabState, NodeState
from dnslab.runtime.netns import NetnsRuntime, namespace

HOSTS = """
hosts:
  lab: {{ssh: local, underlay: 198.19.0.1{lab}}}
  gen: {{ssh: root@198.19.2.2, underlay: 198.19.0.2{gen}}}
"""


class FakeLinkHost:
    """A host whose `ip` answers from a table of links (as `ip -j link show dev X` does),
    and that records every `ip` command it is given."""

    def __init__(self, name: str, links: dict[str, dict[str, Any]]):
        self.name, self.links, self.local, self.commands = name, links, False, []

    def run(self, argv: list[str], check: bool = True, **_: Any) -> subprocess.CompletedProcess:
        link = self.links.get(argv[-1])
        if link is None:
            return subprocess.CompletedProcess(argv, 1, "", f'Device "{argv[-1]}" does not exist.')
        return subprocess.CompletedProcess(argv, 0, json.dumps([link]), "")

    def ip(self, *args: str, check: bool = True) -> None:
        self.commands.append(args)


def nic(mtu: int = 1500, flags: tuple[str, ...] = ("BROADCAST", "UP", "LOWER_UP"),
        **more: Any) -> dict[str, Any]:
    return {"ifname": "x", "flags": list(flags), "mtu": mtu, **more}


def split_state(tmp_path: Path, lab: str = "", gen: str = "", runtime: str = "netns",
                links: dict[str, dict[str, dict[str, Any]]] | None = None) -> tuple[
                    LabState, Any]:
    """A lab of a server on host `lab` and a client on host `gen`; `lab`/`gen` are extra
    inventory fields of each host."""
    path = tmp_path / "hosts.yml"
    path.write_text(HOSTS.format(lab=lab, gen=gen))
    inventory = load_inventory(path)
    state = LabState(lab="t", runtime=runtime, topology="", root=str(tmp_path))
    for name, host in (("primary", "lab"), ("client", "gen")):
        state.nodes[name] = NodeState(name=name, role="", server="bind", address="", netns="",
                                      log="", host=host)
    state.hosts = inventory.as_dict()
    for name, table in (links or {}).items():
        state.hosts_handle()._hosts[name] = FakeLinkHost(name, table)  # type: ignore
    return state, inventory


def test_without_data_interfaces_the_lan_stays_on_the_vxlan(tmp_path: Path) -> None:
    state, inventory = split_state(tmp_path)
    assert multihost.data_interfaces(state, inventory) == {}


def test_every_host_naming_one_gives_each_host_its_own(tmp_path: Path) -> None:
    state, inventory = split_state(tmp_path, lab=", data_interface: enp1s0",
                                   gen=", data_interface: eth9")
    assert multihost.data_interfaces(state, inventory) == {"lab": "enp1s0", "gen": "eth9"}


def test_a_lab_on_one_host_of_the_inventory_needs_no_data_path(tmp_path: Path) -> None:
    state, inventory = split_state(tmp_path, lab=", data_interface: enp1s0")
    state.nodes["client"].host = "lab"
    assert multihost.data_interfaces(state, inventory) == {}


def test_hosts_mixing_a_data_interface_with_none_are_one_line(tmp_path: Path) -> None:
    state, inventory = split_state(tmp_path, lab=", data_interface: enp1s0")
    with pytest.raises(LabError) as caught:
        multihost.data_interfaces(state, inventory)
    assert caught.value.message.startswith(
        "host 'lab' has a data_interface and host 'gen' has none")
    assert "'gen'" in (caught.value.hint or "") and "\n" not in caught.value.one_line()


def test_the_clab_runtime_refuses_a_data_interface_in_one_line(tmp_path: Path) -> None:
    state, inventory = split_state(tmp_path, lab=", data_interface: enp1s0",
                                   gen=", data_interface: enp1s0", runtime="clab")
    with pytest.raises(LabError) as caught:
        multihost.data_interfaces(state, inventory)
    assert "only the netns runtime" in caught.value.message
    assert "RUNTIME=netns" in (caught.value.hint or "")
    assert "\n" not in caught.value.one_line()


@pytest.mark.parametrize("link, expected", [
    (None, "host 'gen''s data_interface 'eth9' does not exist there"),
    (nic(flags=("BROADCAST",)), "host 'gen''s data_interface 'eth9' is down "
                                "(administratively down)"),
    (nic(flags=("BROADCAST", "UP", "NO-CARRIER")), "host 'gen''s data_interface 'eth9' is "
                                                   "down (without carrier)"),
    (nic(master="br0"), "host 'gen''s data_interface 'eth9' is a port of br0: a macvlan "
                        "cannot share it"),
    (nic(mtu=1000), "host 'gen''s data_interface 'eth9' has MTU 1000, under the 1280 the "
                    "lab LAN needs"),
])
def test_a_data_interface_that_cannot_carry_the_lan_is_one_line(
        tmp_path: Path, link: dict[str, Any] | None, expected: str) -> None:
    links = {"lab": {"enp1s0": nic()}, "gen": {"eth9": link} if link else {}}
    state, _ = split_state(tmp_path, links=links)
    with pytest.raises(LabError) as caught:
        multihost.plan_macvlan(state, {"lab": "enp1s0", "gen": "eth9"})
    assert caught.value.message == expected
    assert caught.value.hint and "\n" not in caught.value.one_line()


def test_a_missing_interface_on_this_machine_is_named(tmp_path: Path) -> None:
    with pytest.raises(LabError, match="'nosuch-dnslab0' does not exist there"):
        multihost.check_data_interface(LOCAL_HOST, "nosuch-dnslab0")


def test_the_macvlan_plan_takes_the_smallest_mtu_and_says_where(tmp_path: Path) -> None:
    links = {"lab": {"enp1s0": nic(mtu=9000)}, "gen": {"eth9": nic(mtu=1500)}}
    state, _ = split_state(tmp_path, links=links)
    plan = multihost.plan_macvlan(state, {"lab": "enp1s0", "gen": "eth9"})
    assert plan == {"kind": "macvlan", "mode": "bridge",
                    "description": "macvlan on lab:enp1s0, gen:eth9",
                    "interfaces": {"lab": "enp1s0", "gen": "eth9"},
                    "interface_mtus": {"lab": 9000, "gen": 1500}, "mtu": 1500}
    links["gen"]["enp1s0"] = nic(mtu=9000)
    state, _ = split_state(tmp_path, links=links)
    assert multihost.plan_macvlan(state, {"lab": "enp1s0", "gen": "enp1s0"})[
        "description"] == "macvlan on enp1s0"


def test_the_vxlan_data_path_is_recorded_with_its_mtu() -> None:
    assert multihost.vxlan_data_path({"vni": 1, "mtu": 1450}) == {
        "kind": "vxlan", "description": "vxlan", "mtu": 1450}


def test_each_node_gets_a_macvlan_of_its_hosts_interface_and_no_bridge(tmp_path: Path) -> None:
    links = {"lab": {"enp1s0": nic()}, "gen": {"eth9": nic()}}
    state, _ = split_state(tmp_path, links=links)
    state.data_path = multihost.plan_macvlan(state, {"lab": "enp1s0", "gen": "eth9"})
    nodes = {n: SimpleNamespace(name=n, cidr=f"198.18.0.{i}/24")
             for i, n in enumerate(("primary", "client"), start=10)}
    rendered = SimpleNamespace(topology=SimpleNamespace(name="t", bridge="br-t", nodes=nodes))
    NetnsRuntime()._create_macvlan_lan(rendered, state)  # type: ignore[arg-type]
    hosts = state.hosts_handle()
    for node, host, parent in (("primary", "lab", "enp1s0"), ("client", "gen", "eth9")):
        made = hosts.get(host).commands  # type: ignore[attr-defined]
        ns = namespace("t", node)
        assert ("netns", "add", ns) in made
        assert ("link", "add", "link", parent, "name", "eth1", "netns", ns, "mtu", "1500",
                "type", "macvlan", "mode", "bridge") in made
        assert ("-n", ns, "addr", "add", nodes[node].cidr, "dev", "eth1") in made
        kinds = {args[args.index("type") + 1] for args in made if "type" in args}
        assert kinds == {"macvlan"}  # no lab bridge, veth or VXLAN
        assert state.nodes[node].netns.endswith(ns)


def test_an_experiment_across_hosts_refuses_a_mixed_data_path_before_asking_any_host(
        tmp_path: Path) -> None:
    """RunHosts.check says it before any host is reached (gen is an ssh target that does not
    exist: asking it would be another error) and before any run folder exists."""
    from dnslab.experiment import RunHosts
    from dnslab.experiment_spec import load_spec

    path = tmp_path / "hosts.yml"
    path.write_text(HOSTS.format(lab=", data_interface: enp1s0", gen=""))
    hosts = RunHosts.from_overrides({"HOSTS": str(path)})
    spec = load_spec("tcp-sysctl")
    with pytest.raises(LabError, match="host 'lab' has a data_interface and host 'gen' has "
                                       "none"):
        hosts.check(spec, None, "netns")  # type: ignore[arg-type]


class FakeWriter:
    def __init__(self) -> None:
        self.meta: dict[str, Any] = {}

    def record(self, key: str, value: Any) -> None:
        self.meta[key] = value

    def record_cell(self, cell_id: str, key: str, value: Any) -> None:
        self.meta.setdefault("cells", {}).setdefault(cell_id, {})[key] = value


def test_a_run_records_the_data_path_in_meta_json(tmp_path: Path) -> None:
    from dnslab.experiment import Run

    links = {"lab": {"enp1s0": nic()}, "gen": {"enp1s0": nic(mtu=9000)}}
    state, _ = split_state(tmp_path, links=links)
    state.data_path = multihost.plan_macvlan(state, {"lab": "enp1s0", "gen": "enp1s0"})
    run = SimpleNamespace(writer=FakeWriter())
    Run.record_hosts(run, "phase=capacity", state)  # type: ignore[arg-type]
    hosts = run.writer.meta["hosts"]
    assert (hosts["data_path"]["description"], hosts["data_path"]["mtu"]) == (
        "macvlan on enp1s0", 1500)
    assert hosts["vxlan"] == {}
    assert run.writer.meta["cells"]["phase=capacity"]["hosts"] == {"primary": "lab",
                                                                    "client": "gen"}
