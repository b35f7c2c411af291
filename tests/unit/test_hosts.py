"""The inventory of a lab across machines, node placement, the ssh transport's command lines,
and the checks that refuse a host before anything is created (dnslab.hosts, multihost)."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import pytest

from dnslab import hostcmd, multihost, probe
from dnslab.errors import LabError
from dnslab.hosts import Host, HostSpec, Inventory, load_inventory, placement
from dnslab.runtime.base import LabState, NodeState

TWO = """
hosts:
  lab: {ssh: local, underlay: 198.19.0.1}
  gen: {ssh: root@198.19.2.2, underlay: 198.19.0.2, identity: /k, ssh_options: [Port=2222]}
"""


def inventory(tmp_path: Path, text: str = TWO) -> Inventory:
    path = tmp_path / "hosts.yml"
    path.write_text(text)
    return load_inventory(path)


def test_inventory_reads_hosts_in_order_with_defaults(tmp_path: Path) -> None:
    inv = inventory(tmp_path)
    assert inv.names == ["lab", "gen"]
    assert inv.hosts["lab"].local and not inv.hosts["gen"].local
    assert inv.hosts["gen"].python == "/usr/bin/python3"
    assert inv.vxlan_port == 4789 and inv.mtu is None
    assert Inventory.from_dict(inv.as_dict()).hosts == inv.hosts


@pytest.mark.parametrize(("text", "words"), [
    ("hosts: {}", "no 'hosts:' map"),
    ("hosts: [a, b]", "no 'hosts:' map"),
    ("hosts: {a: {underlay: 198.19.0.1}}", "no 'ssh' target"),
    ("hosts: {a: {ssh: local, port: 22}}", "unknown field 'port'"),
    ("hosts: {a: {ssh: local, underlay: lab-a}}", "is not an IPv4 address"),
    ("hosts: {a: {ssh: local, underlay: 198.19.0.1}, b: {ssh: root@x}}", "no underlay"),
    ("hosts: {a: {ssh: local}}\nvxlan: {mtu: 100}", "outside 1280-9000"),
    ("hosts: {a: {ssh: local}}\nvxlan: {port: many}", "are numbers"),
    (": : :", "not YAML"),
])
def test_a_bad_inventory_is_one_line_that_says_how_to_fix_it(tmp_path: Path, text: str,
                                                              words: str) -> None:
    with pytest.raises(LabError) as caught:
        inventory(tmp_path, text)
    assert words in caught.value.message
    assert caught.value.hint and "\n" not in caught.value.one_line()


def test_a_missing_inventory_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(LabError, match="no such inventory file"):
        load_inventory(tmp_path / "nope.yml")


NODES = {"primary": ("primary", None), "sec": ("secondary", None), "client": ("client", None)}


def test_placement_puts_the_generator_on_the_second_host_and_servers_on_the_first(
        tmp_path: Path) -> None:
    inv = inventory(tmp_path)
    assert placement(inv, NODES) == {"primary": "lab", "sec": "lab", "client": "gen"}
    assert placement(inv, NODES, generator_host="lab", server_host="gen") == {
        "primary": "gen", "sec": "gen", "client": "lab"}
    labelled = {**NODES, "sec": ("secondary", "gen")}
    assert placement(inv, labelled)["sec"] == "gen"


def test_placement_refuses_a_host_the_inventory_lacks(tmp_path: Path) -> None:
    inv = inventory(tmp_path)
    with pytest.raises(LabError, match="GENERATOR_HOST names host 'nope'"):
        placement(inv, NODES, generator_host="nope")
    with pytest.raises(LabError, match="dnslab.host label names host 'x'"):
        placement(inv, {"sec": ("secondary", "x")})


def test_a_remote_command_is_one_quoted_ssh_argument_over_a_shared_connection(
        tmp_path: Path) -> None:
    host = Host(inventory(tmp_path).hosts["gen"])
    argv = host.argv(["dig", "@198.18.0.11", "a b", "SOA"])
    assert argv[0] == "ssh" and argv[-2] == "--"
    assert shlex.split(argv[-1]) == ["dig", "@198.18.0.11", "a b", "SOA"]
    joined = " ".join(argv)
    assert "BatchMode=yes" in joined and "ControlMaster=auto" in joined
    assert "-i /k" in joined and "Port=2222" in joined and "root@198.19.2.2" in argv
    local = Host(inventory(tmp_path).hosts["lab"])
    assert local.argv(["true"]) == ["true"]


def test_a_host_command_reply_or_its_error_comes_back_as_json() -> None:
    host = Host(HostSpec("gen", "root@198.19.2.2"))
    assert hostcmd.decode_reply(0, '{"ok": [1, 2]}\n', "", host) == [1, 2]
    with pytest.raises(LabError, match="host 'gen': bad key") as caught:
        hostcmd.decode_reply(2, '{"error": "bad key", "hint": "fix it"}', "", host)
    assert caught.value.hint == "fix it"
    with pytest.raises(LabError, match="cannot be reached over ssh"):
        hostcmd.decode_reply(255, "", "Connection refused", host)
    with pytest.raises(LabError, match="No module named 'dns'") as caught:
        hostcmd.decode_reply(1, "", "ModuleNotFoundError: No module named 'dns'", host)
    assert "apt-get install -y python3-yaml python3-dnspython" in (caught.value.hint or "")


def test_an_answer_travels_as_json_unchanged() -> None:
    answer = probe.Answer(rcode="NOERROR", authoritative=True, answers=1, serial=7, size=3,
                          truncated=False, additional=1, texts=["x"], wire=b"\x00\x01\xff")
    assert probe.answer_from_dict(probe.answer_to_dict(answer)) == answer


class FakeHost:
    """A host whose `facts` are given."""

    def __init__(self, name: str, facts: dict[str, Any]):
        self.name, self.facts, self.local = name, facts, True

    def call(self, verb: str, **args: Any) -> Any:
        assert verb == "facts"
        return {**self.facts, "versions": {p: self.facts["versions"].get(p)
                                           for p in args["packages"]}}


def split_state(facts: dict[str, dict[str, Any]], tmp_path: Path) -> tuple[LabState, Inventory]:
    inv = inventory(tmp_path)
    state = LabState(lab="t", runtime="netns", topology="", root=str(tmp_path))
    for name, host, kind in (("primary", "lab", "bind"), ("client", "gen", "tools")):
        state.nodes[name] = NodeState(name=name, role="", server=kind, address="", netns="",
                                      log="", host=host)
    state.hosts = inv.as_dict()
    hosts = state.hosts_handle()
    for name, found in facts.items():
        hosts._hosts[name] = FakeHost(name, found)  # type: ignore[assignment]
    return state, inv


def host_facts(versions: dict[str, str], mtu: int = 1500) -> dict[str, Any]:
    installed = {p: "1" for p in ["iproute2", "python3-yaml", "python3-dnspython",
                                  "python3-psutil", "bind9", "bind9-utils", "dnsperf",
                                  "bind9-dnsutils", "knot-dnsutils"]}
    return {"python": "3.11.2", "versions": {**installed, **versions},
            "routes": {"198.19.0.9": {"dev": "eth0", "mtu": mtu}}}


def test_hosts_that_disagree_on_a_package_version_are_refused(tmp_path: Path) -> None:
    state, inv = split_state({"lab": host_facts({"iproute2": "6.1"}),
                              "gen": host_facts({"iproute2": "5.10"})}, tmp_path)
    with pytest.raises(LabError, match="hosts disagree on the version of iproute2"):
        multihost.check_hosts(state, inv)


def test_a_host_lacking_its_nodes_packages_is_named_with_the_apt_line(tmp_path: Path) -> None:
    state, inv = split_state({"lab": host_facts({"bind9": None}),  # type: ignore[dict-item]
                              "gen": host_facts({})}, tmp_path)
    with pytest.raises(LabError, match="host 'lab' lacks packages its nodes need: bind9") as c:
        multihost.check_hosts(state, inv)
    assert "apt-get install" in (c.value.hint or "")


def test_an_old_python_on_a_host_is_refused(tmp_path: Path) -> None:
    old = {**host_facts({}), "python": "3.9.2"}
    state, inv = split_state({"lab": host_facts({}), "gen": old}, tmp_path)
    with pytest.raises(LabError, match="host 'gen' has python 3.9.2"):
        multihost.check_hosts(state, inv)


def test_the_lan_mtu_is_the_underlay_less_the_vxlan_overhead(tmp_path: Path) -> None:
    facts = {"lab": host_facts({}), "gen": host_facts({}, mtu=1400)}
    state, inv = split_state(facts, tmp_path)
    plan = multihost.plan_vxlan(state, inv, facts)
    assert plan["mtu"] == 1350 and plan["underlay_mtu"] == 1400 and plan["port"] == 4789
    assert plan["underlay"] == {"lab": "198.19.0.1", "gen": "198.19.0.2"}
    inv.mtu = 1450  # more than 1400 - 50: large answers would be dropped
    with pytest.raises(LabError, match="does not fit the underlay"):
        multihost.plan_vxlan(state, inv, facts)


def test_a_node_without_a_cpu_set_gets_its_hosts_inventory_cpus(tmp_path: Path) -> None:
    from dnslab import render, topology

    lends_one = TWO.replace("underlay: 198.19.0.2,", "underlay: 198.19.0.2, cpus: 1,")
    inv = inventory(tmp_path, lends_one)
    topo = topology.load("reference")
    data = render.LabData(zones=[], health_zone=".", cpu_sets={"primary": "0"})
    multihost.host_cpu_sets(topo, data, inv)
    assert data.cpu_sets["client"] == "1"  # on host gen, which lends CPU 1
    assert data.cpu_sets["primary"] == "0"  # the experiment's own set wins
    assert "sec-bind" not in data.cpu_sets  # host lab lends every CPU: no set


def test_a_remote_hosts_cpus_are_not_checked_against_the_controllers(tmp_path: Path) -> None:
    """A server host with 16 CPUs behind a 2-CPU controller: its nodes' sets render (and
    count their workers) as given; one machine still refuses a CPU it lacks."""
    from dnslab import cpus, render, topology

    big = TWO.replace("underlay: 198.19.0.1,", "underlay: 198.19.0.1, cpus: 0-15,")
    topo = topology.load("reference")
    many = f"0-{max(cpus.available()) + 8}"
    data = render.LabData(zones=[], health_zone=".", cpu_sets={"primary": many})
    multihost.host_cpu_sets(topo, data, inventory(tmp_path, big))
    rendered = render.RenderedLab(topo, data, tmp_path)
    assert render.node_cpu_set(rendered, topo.node("primary")) == many
    assert render.node_cores(rendered, topo.node("primary")) == max(cpus.available()) + 9
    alone = render.RenderedLab(topo, render.LabData(zones=[], health_zone=".",
                                                    cpu_sets={"primary": many}), tmp_path)
    with pytest.raises(LabError, match="which this host does not offer"):
        render.node_cpu_set(alone, topo.node("primary"))


class ProbingHost:
    """A host whose `lan-mtu` host command answers as given, and records what it was asked."""

    def __init__(self, name: str, found: dict[str, Any]):
        self.name, self.found, self.local, self.asked = name, found, False, []

    def call(self, verb: str, **args: Any) -> Any:
        assert verb == "lan-mtu"
        self.asked.append(args)
        return self.found


def probed_state(tmp_path: Path, found: dict[str, Any]) -> tuple[LabState, ProbingHost]:
    state, _ = split_state({}, tmp_path)
    state.vxlan = {"mtu": 1450, "port": 4789}
    for node, address in (("primary", "198.18.0.11"), ("client", "198.18.0.12")):
        state.nodes[node].netns = f"/run/netns/{node}"
        state.nodes[node].address = address
    prober = ProbingHost("lab", found)
    for name in ("lab", "gen"):
        state.hosts_handle()._hosts[name] = prober  # type: ignore[assignment]
    return state, prober


def test_a_full_size_packet_crosses_between_every_pair_of_hosts(tmp_path: Path) -> None:
    state, prober = probed_state(tmp_path, {"small": True, "full": True, "largest": 1450})
    assert multihost.check_lan_mtu(state) == {"lab->gen": 1450, "gen->lab": 1450}
    assert [(a["netns"], a["target"], a["mtu"]) for a in prober.asked] == [
        ("/run/netns/primary", "198.18.0.12", 1450), ("/run/netns/client", "198.18.0.11", 1450)]


@pytest.mark.parametrize("found, message, hint", [
    ({"small": True, "full": False, "largest": 1380},
     "the lab LAN's MTU 1450 does not cross from host 'lab' to host 'gen' (primary to client): "
     "a 1450-byte packet was dropped, 1380 bytes crossed", "vxlan: {mtu: 1380}"),
    ({"small": True, "full": False, "largest": None},
     "a 1450-byte packet was dropped, nor did 1280 bytes", "carries 1330 bytes"),
    ({"small": False, "full": None, "largest": None},
     "the lab LAN does not reach from host 'lab' to host 'gen'", "UDP port 4789"),
])
def test_an_underlay_that_drops_large_packets_is_one_line_naming_the_mtu(
        tmp_path: Path, found: dict[str, Any], message: str, hint: str) -> None:
    state, _ = probed_state(tmp_path, found)
    with pytest.raises(LabError) as caught:
        multihost.check_lan_mtu(state)
    assert message in caught.value.message and hint in (caught.value.hint or "")
    assert "\n" not in caught.value.one_line()


def test_lan_mtu_bisects_to_the_largest_packet_that_crossed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Six packets at most (the far kernel answers six ICMP errors in a burst): a small one,
    the full MTU, the floor, then three halvings."""
    sent: list[int] = []

    def crosses(target: str, size: int, timeout: float) -> bool:
        sent.append(size)
        return size <= 1380

    monkeypatch.setattr(hostcmd, "datagram_crosses", crosses)
    monkeypatch.setattr("dnslab.nsenter.in_netns", lambda path, fn: fn())
    found = hostcmd.lan_mtu("/run/netns/x", "198.18.0.11", 1450)
    assert found["small"] and found["full"] is False
    assert 1380 - (1450 - 1280) / 8 <= found["largest"] <= 1380
    assert len(sent) == 6 and sent[:3] == [100, 1450, 1280]
    sent.clear()
    monkeypatch.setattr(hostcmd, "datagram_crosses", lambda t, size, o: size <= 1450)
    assert hostcmd.lan_mtu("/run/netns/x", "198.18.0.11", 1450)["largest"] == 1450


def test_a_packet_to_a_closed_port_comes_back_refused() -> None:
    """On loopback (MTU 65536): the kernel answers port 9 with ICMP port unreachable."""
    assert hostcmd.datagram_crosses("127.0.0.1", 1450, timeout=1.0) is True
    assert hostcmd.datagram_crosses("127.0.0.1", 70000 - 100, timeout=1.0) is None  # > MTU


class TablesHost:
    """A host answering `tables-of` with each namespace's name as its counter."""

    def __init__(self, name: str):
        self.name, self.local, self.asked = name, False, []

    def call(self, verb: str, **args: Any) -> Any:
        assert verb == "tables-of"
        self.asked.append(args["netns"])
        return {ns: {"Udp": {"InDatagrams": len(ns)}} for ns in args["netns"]}


def test_many_nodes_counters_are_read_in_one_host_command_per_host(tmp_path: Path) -> None:
    from dnslab.lab import Lab

    state, _ = split_state({}, tmp_path)
    state.nodes["sec"] = NodeState(name="sec", role="", server="nsd", address="", netns="",
                                   log="", host="lab")
    for name, node in state.nodes.items():
        node.netns = f"/run/netns/{name}"
    hosts = {name: TablesHost(name) for name in ("lab", "gen")}
    state.hosts_handle()._hosts.update(hosts)  # type: ignore[arg-type]
    found = Lab(None, state, None).tables_of(["primary", "client", "sec"])  # type: ignore
    assert found["sec"] == {"Udp": {"InDatagrams": len("/run/netns/sec")}}
    assert set(found) == {"primary", "client", "sec"}
    assert hosts["lab"].asked == [["/run/netns/primary", "/run/netns/sec"]]
    assert hosts["gen"].asked == [["/run/netns/client"]]


class FakeClabHost(FakeHost):
    """Another machine whose `facts` and `clab-facts` (its engine, containerlab, images) are
    given, and whose clock is this one's."""

    def __init__(self, name: str, facts: dict[str, Any], clab: dict[str, Any]):
        super().__init__(name, facts)
        self.clab, self.spec, self.local = clab, HostSpec(name, f"root@{name}"), False

    def run(self, argv: list[str]) -> Any:
        import time
        from types import SimpleNamespace

        assert argv[0] == "date"
        return SimpleNamespace(stdout=f"{time.time():.6f}\n")

    def call(self, verb: str, **args: Any) -> Any:
        if verb == "clab-facts":
            return {**self.clab, "images": {i: self.clab["images"].get(i) for i in args["images"]}}
        return super().call(verb, **args)


def clab_facts(version: str = "0.69.3", docker: str | None = "20.10.24",
               missing: tuple[str, ...] = ()) -> dict[str, Any]:
    images = {i: None if i in missing else "sha256:1" for i in ("img/bind", "img/tools")}
    return {"containerlab": "/usr/bin/containerlab", "containerlab_version": version,
            "docker": docker, "images": images}


def clab_state(tmp_path: Path, lab: dict[str, Any], gen: dict[str, Any]) -> tuple[LabState,
                                                                               Inventory]:
    state, inv = split_state({"lab": host_facts({}), "gen": host_facts({})}, tmp_path)
    state.runtime = "clab"
    state.nodes["primary"].image, state.nodes["client"].image = "img/bind", "img/tools"
    hosts = state.hosts_handle()
    for name, clab in (("lab", lab), ("gen", gen)):
        hosts._hosts[name] = FakeClabHost(name, host_facts({}), clab)  # type: ignore
    return state, inv


def test_a_clab_host_without_an_engine_or_an_image_is_one_line_saying_what_to_run(
        tmp_path: Path) -> None:
    state, inv = clab_state(tmp_path, clab_facts(docker=None), clab_facts())
    with pytest.raises(LabError, match="host 'lab' has no Docker engine") as caught:
        multihost.check_hosts(state, inv)
    assert "docker.io" in (caught.value.hint or "")
    state, inv = clab_state(tmp_path, clab_facts(), clab_facts(missing=("img/tools",)))
    with pytest.raises(LabError, match="host 'gen' lacks image img/tools") as caught:
        multihost.check_hosts(state, inv)
    assert caught.value.hint == ("docker save img/tools | ssh root@gen docker load (or make "
                                 "images in a checkout there)")


def test_clab_hosts_need_no_server_packages_but_the_same_containerlab(tmp_path: Path) -> None:
    state, inv = clab_state(tmp_path, clab_facts(), clab_facts())
    for name in ("lab", "gen"):  # the daemons are in the images, not on the hosts
        state.hosts_handle()._hosts[name].facts = host_facts(  # type: ignore[attr-defined]
            {"bind9": None, "dnsperf": None})  # type: ignore[dict-item]
    facts = multihost.check_hosts(state, inv)
    assert facts["gen"]["clab"]["images"] == {"img/tools": "sha256:1"}  # only its nodes'
    state, inv = clab_state(tmp_path, clab_facts(), clab_facts(version="0.72.0"))
    with pytest.raises(LabError, match="disagree on the version of containerlab: lab 0.69.3, "
                                       "gen 0.72.0"):
        multihost.check_hosts(state, inv)


def test_clab_joins_more_than_two_hosts_in_a_tree_one_vni_per_link(tmp_path: Path) -> None:
    three = TWO + "  gen2: {ssh: root@198.19.3.2, underlay: 198.19.0.3}\n"
    inv = inventory(tmp_path, three)
    state = LabState(lab="t", runtime="clab", topology="", root=str(tmp_path),
                     hosts=inv.as_dict())
    for name, host in (("primary", "lab"), ("client", "gen"), ("client2", "gen2")):
        state.nodes[name] = NodeState(name=name, role="", server="", address="", netns="",
                                      log="", host=host)
    facts = {h: host_facts({}) for h in ("lab", "gen", "gen2")}
    plan = multihost.plan_vxlan(state, inv, facts)
    vni = plan["vni"]
    assert plan["links"] == [
        {"hosts": ["lab", "gen"], "vni": vni, "device": f"vx{vni}"},
        {"hosts": ["lab", "gen2"], "vni": vni + 1, "device": f"vx{vni + 1}"}]
    state.runtime = "netns"  # one VXLAN device per host, flooding to all: no links
    assert "links" not in multihost.plan_vxlan(state, inv, facts)


def test_a_tool_behind_a_command_that_passes_no_signal_is_stopped_by_its_command_line(
        tmp_path: Path) -> None:
    """As behind `docker exec`: the local command ignores SIGTERM and the tool is in another
    session, so only the tool's own command line reaches it; it stops, and so does the
    command waiting for it."""
    import json
    import subprocess
    import sys
    import time

    from dnslab import paths

    tool = ["sleep", "41.713"]  # a command line nothing else runs
    like_docker_exec = ["sh", "-c", f"trap true TERM; setsid {' '.join(tool)} & wait $!; wait $!"]
    report = tmp_path / "report.json"
    proc = subprocess.Popen([sys.executable, "-m", "dnslab.hostcmd", "measured", "--term",
                             "--term-cmdline", json.dumps(tool), "--report", str(report), "--",
                             *like_docker_exec], stdin=subprocess.PIPE, cwd=paths.REPO)
    time.sleep(0.5)
    started = time.monotonic()
    assert proc.stdin is not None
    proc.stdin.close()  # the controller asks it to stop
    proc.wait(timeout=20)
    assert time.monotonic() - started < 10
    assert json.loads(report.read_text())["rc"] is not None
