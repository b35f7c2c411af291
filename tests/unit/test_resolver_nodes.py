"""The resolver procedure finds its nodes by role and `dnslab.tier` label, not by name."""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from dnslab import servers, topology
from dnslab.errors import LabError
from dnslab.servers.base import merge_options
from experiments.f4_resolver_cache.resolver import (
    TIERS,
    LeakCheck,
    ResolverNodes,
    tier_addresses,
)

RESOLVER_LAB = Path(__file__).resolve().parents[2] / "topologies" / "resolver.clab.yml"


def _raw() -> dict:
    return yaml.safe_load(RESOLVER_LAB.read_text())


def test_the_resolver_lab_has_every_tier():
    nodes = ResolverNodes.of(topology.load("resolver"), "unbound")
    assert set(nodes.tiers) == set(TIERS)
    assert nodes.resolver == "resolver" and nodes.client == "client"
    assert len(set(nodes.auth)) == len(TIERS)


@pytest.mark.parametrize("kind", ["unbound", "kresd", "recursor"])
def test_the_resolver_under_test_is_the_kind_asked_for_and_the_others_are_held(
        kind, tmp_path, monkeypatch):
    from dnslab import paths
    from experiments.f4_resolver_cache import resolver

    monkeypatch.setattr(paths, "ZONES_BUILD", tmp_path / "zones")
    topo = topology.load("resolver")
    nodes = ResolverNodes.of(topo, kind)
    assert topo.node(nodes.resolver).server == kind and topo.node(nodes.resolver).role == "resolver"
    assert {topo.node(n).server for n in nodes.other_resolvers} == (
        {"unbound", "kresd", "recursor"} - {kind})
    params = {"tlds": 2, "slds": 50, "names": 50, "resperf_names": 50, "seed": 1,
              "nxdomain_pct": 0}
    zone_set, per_node = resolver.internet(params, topo, nodes)
    idle = resolver.idle_nodes(nodes, per_node)
    assert set(nodes.other_resolvers) <= set(idle) and nodes.resolver not in idle
    data = resolver._lab_data(params, topo, nodes, per_node, 1, zone_set.path)
    # the seed's Unbound 1.6.6 answered however long a name took: no discard-timeout
    # (CVE-2024-33655's fix); the other kinds have no such limit
    drv = servers.driver(kind)
    seed_version = {"server": {"discard-timeout": 0}} if kind == "unbound" else {}
    assert drv.discard_timeout_options(0) == seed_version
    assert data.node_options[nodes.resolver] == merge_options(
        seed_version, drv.resolver_options(1, {}))


def test_a_lab_with_several_resolvers_needs_the_kind(tmp_path):
    with pytest.raises(LabError):
        ResolverNodes.of(topology.load("resolver"))
    with pytest.raises(LabError, match="no nsd resolver node"):
        ResolverNodes.of(topology.load("resolver"), "nsd")


def test_tiers_follow_the_labels_not_the_node_names(tmp_path):
    raw = _raw()
    spec = raw["topology"]["nodes"]
    spec["tld"]["labels"]["dnslab.tier"], spec["sld"]["labels"]["dnslab.tier"] = "sld", "tld"
    nodes = ResolverNodes.of(topology.from_dict(raw, tmp_path / "resolver.clab.yml"), "unbound")
    assert nodes.tiers["tld"] == "sld" and nodes.tiers["sld"] == "tld"


def test_a_missing_tier_is_one_line_with_a_hint(tmp_path):
    raw = _raw()
    del raw["topology"]["nodes"]["sld-dead"]["labels"]["dnslab.tier"]
    with pytest.raises(LabError) as err:
        ResolverNodes.of(topology.from_dict(raw, tmp_path / "resolver.clab.yml"), "unbound")
    assert "dnslab.tier=sld-dead" in err.value.one_line() and err.value.hint


def test_dead_zones_get_distinct_addresses_above_every_node():
    topo = topology.load("resolver")
    nodes = ResolverNodes.of(topo, "unbound")
    dead = tier_addresses({"dead_addresses": 64, "dead_pct": 0.3}, topo, nodes)["sld-dead"]
    assert len(set(dead)) == 64
    assert dead[0] == str(topo.node(nodes.tiers["sld-dead"]).address)
    highest = max(n.address for n in topo.nodes.values())
    assert all(ipaddress.IPv4Address(a) > highest for a in dead[1:])
    assert all(ipaddress.IPv4Address(a) in topology.LAN for a in dead)
    one = tier_addresses({"dead_addresses": 1, "dead_pct": 0.3}, topo, nodes)
    assert one["sld-dead"] == dead[:1]


def test_broken_zones_get_addresses_of_their_own_and_the_dead_ones_stay():
    topo = topology.load("resolver")
    nodes = ResolverNodes.of(topo, "unbound")
    shares = {"dead_pct": 0.3, "broken_pct": 1.3}
    alone = tier_addresses({"dead_addresses": 64, **shares}, topo, nodes)
    both = tier_addresses({"dead_addresses": 64, "broken_addresses": 3, **shares}, topo, nodes)
    # a tier with no zones takes no spare address
    unused = tier_addresses({"dead_addresses": 64, "broken_addresses": 3, "dead_pct": 0.3},
                            topo, nodes)
    assert unused["sld-broken"] == alone["sld-broken"]
    assert both["sld-dead"] == alone["sld-dead"]
    assert alone["sld-broken"] == [str(topo.node(nodes.tiers["sld-broken"]).address)]
    broken = both["sld-broken"]
    assert broken[0] == alone["sld-broken"][0] and len(set(broken)) == 3
    assert not set(broken) & set(both["sld-dead"])


def test_too_many_dead_addresses_is_one_line(tmp_path):
    topo = topology.load("resolver")
    with pytest.raises(LabError) as err:
        tier_addresses({"dead_addresses": 250, "dead_pct": 0.3}, topo,
                       ResolverNodes.of(topo, "unbound"))
    assert "ask for at most" in err.value.one_line()


def test_the_broken_tier_serves_its_zones_without_their_data(tmp_path, monkeypatch):
    from dnslab import paths
    from experiments.f4_resolver_cache import resolver

    monkeypatch.setattr(paths, "ZONES_BUILD", tmp_path / "zones")
    topo = topology.load("resolver")
    nodes = ResolverNodes.of(topo, "unbound")
    params = {"tlds": 2, "slds": 300, "names": 200, "resperf_names": 200, "seed": 1,
              "slow_pct": 0, "dead_pct": 0, "broken_pct": 10, "nxdomain_pct": 0}
    zone_set, per_node = resolver.internet(params, topo, nodes)
    broken = per_node[nodes.tiers["sld-broken"]]
    assert 10 <= len(broken) <= 60  # about 10 % of 300
    assert all(not z.path.exists() and z.path.parent.name == resolver.ABSENT for z in broken)
    assert all(z.path.exists() for z in per_node[nodes.tiers["sld"]])
    address = str(topo.node(nodes.tiers["sld-broken"]).address)
    delegated = {z.fqdn for z in zone_set.zones if z.servers == [address]}
    assert delegated == {z.name for z in broken}
    data = resolver._lab_data(params, topo, nodes, per_node, 1, zone_set.path)
    assert data.node_options[nodes.tiers["sld-broken"]] == {
        "server": {"rrl-ratelimit": 0, "rrl-whitelist-ratelimit": 0},
        "health_rcodes": ["SERVFAIL"]}
    assert "health_rcodes" not in data.node_options[nodes.tiers["sld"]]
    assert data.node_options[nodes.resolver]["server"]["num-threads"] == 1
    # behind three addresses: every broken zone names all three, the node's NSD serves them
    several = {**params, "broken_addresses": 3}
    zone_set, per_node = resolver.internet(several, topo, nodes)
    addresses = resolver.tier_addresses(several, topo, nodes)["sld-broken"]
    assert {z.name for z in per_node[nodes.tiers["sld-broken"]]} == {z.name for z in broken}
    assert {z.fqdn for z in zone_set.zones if sorted(z.servers) == sorted(addresses)} == delegated
    data = resolver._lab_data(several, topo, nodes, per_node, 1, zone_set.path)
    assert data.node_options[nodes.tiers["sld-broken"]]["extra_addresses"] == addresses[1:]


def test_a_node_meant_to_fail_is_healthy_when_it_fails():
    from dnslab import servers

    nsd = servers.driver("nsd")
    assert nsd.answer_healthy("NOERROR", {}) and not nsd.answer_healthy("SERVFAIL", {})
    assert nsd.answer_healthy("SERVFAIL", {"health_rcodes": ["SERVFAIL"]})
    assert not nsd.answer_healthy("REFUSED", {"health_rcodes": ["SERVFAIL"]})


def test_the_generator_sits_apart_from_the_resolver_and_its_internet(tmp_path, monkeypatch):
    from dnslab import cpus, paths
    from experiments.f4_resolver_cache import resolver

    monkeypatch.setattr(paths, "ZONES_BUILD", tmp_path / "zones")
    topo = topology.load("resolver")
    nodes = ResolverNodes.of(topo, "unbound")
    params = {"tlds": 2, "slds": 50, "names": 50, "resperf_names": 50, "seed": 1,
              "nxdomain_pct": 0}
    zone_set, per_node = resolver.internet(params, topo, nodes)
    placement = cpus.place(allowed=[0, 1])
    data = resolver._lab_data(params, topo, nodes, per_node, 1, zone_set.path, placement)
    assert data.cpu_sets[nodes.client] == "1"
    assert {data.cpu_sets[n] for n in (nodes.resolver, *nodes.auth)} == {"0"}
    shared = cpus.place(share=True, allowed=[0, 1])
    data = resolver._lab_data(params, topo, nodes, per_node, 2, zone_set.path, shared)
    assert set(data.cpu_sets.values()) == {"0-1"}


def test_the_ceiling_is_the_median_pass_per_q_and_loops_apart():
    from experiments.f4_resolver_cache.resolver import ceiling_figures

    rows = [{"outstanding": q, "mode": mode, "qps": qps} for q, mode, qps in (
        (100, "pass", 40000), (100, "pass", 44000), (100, "pass", 30000),
        (300, "pass", 60000), (300, "loop", 70000), (300, "loop", 72000))]
    figures = ceiling_figures(rows)
    assert figures["ceiling_qps_q100"] == 40000
    assert figures["ceiling_qps_trials_q100"] == [40000, 44000, 30000]
    assert figures["ceiling_qps_q300"] == 60000
    assert figures["ceiling_loop_qps_q300"] == 71000
    assert "ceiling_loop_qps_q100" not in figures


class _LabOf:
    """A lab whose every node is `handle`."""

    def __init__(self, handle):
        self.handle = handle

    def node(self, name):
        return self.handle


def test_the_warm_pass_waits_until_the_fills_failures_left_the_cache():
    from experiments.f4_resolver_cache import resolver

    seen = iter([{"in_progress": 2, "failures_cached": 5},
                 {"in_progress": 0, "failures_cached": 1},
                 {"in_progress": 0, "failures_cached": 0}])

    class Counting:
        def unsettled(self):
            return next(seen)

    got = resolver.settle(_LabOf(Counting()), "resolver", timeout_s=10)
    assert got["failures_cached_after_fill"] == 5 and got["in_progress_after_fill"] == 2
    assert got["failures_cached_at_start"] == 0 and got["settle_s"] >= 0.5

    stuck = {"in_progress": 1, "failures_cached": 3}
    got = resolver.settle(_LabOf(type("Stuck", (), {"unsettled": lambda self: stuck})()),
                          "resolver", timeout_s=0.6)
    assert got["failures_cached_at_start"] == 3  # the pass starts anyway, and says so


def test_a_verdict_names_a_resolver_other_than_the_seeds():
    from types import SimpleNamespace

    from analysis.claim import Verdict
    from experiments.f4_resolver_cache import claims

    meta = {"placement": {"server_cpus": "0"}, "machine": {"cpus": 2}}
    said = {}
    for kind in (None, "unbound", "kresd"):
        verdict = Verdict(claim=None)  # type: ignore[arg-type]
        claims._resolver_conditions(SimpleNamespace(params={"resolver": kind}, meta=meta),
                                    verdict)
        said[kind] = verdict.conditions
    assert said[None] == said["unbound"] and not any("as the resolver" in c
                                                      for c in said[None])
    assert said["kresd"][0] == "kresd as the resolver (seed: Unbound)"
    assert said["kresd"][1].startswith("kresd on 1") and said[None][0].startswith("Unbound on 1")


class _CountingLab:
    """A lab whose nodes' counters are given, read in turn (each read one snapshot)."""

    def __init__(self, snapshots: list[dict[str, dict[str, dict[str, int]]]], rules: str):
        self.snapshots, self.rules = list(snapshots), rules
        self.state = SimpleNamespace(nodes={n: SimpleNamespace(host="local")
                                            for n in snapshots[0]})

    def tables_of(self, nodes):
        return self.snapshots[0] if len(self.snapshots) == 1 else self.snapshots.pop(0)

    def run(self, node, argv):
        out = self.rules if "iptables" in argv else "198.18.0.0/24 dev eth1"
        return SimpleNamespace(stdout=out)


def _node(out=0, delivered=0, segs=0, read=0, backlog=0, rx_drop=0):
    return {"Udp": {"OutDatagrams": out, "InDatagrams": read},
            "Ip": {"InDelivers": delivered}, "Tcp": {"InSegs": segs}, "Icmp": {"InMsgs": 0},
            "Links": {"RxDrop": rx_drop, "TxDrop": 0},
            "Kernel": {"BacklogDrops": backlog, "ArpUnresolvedDiscards": 0}}


@pytest.mark.parametrize("case, client_after, backlog, leaked", [
    # the client's program read 9 of the 10 answers that reached it: nothing left the lab
    ("an answer left unread at close", _node(delivered=10, read=9), 0, 0),
    # one answer never reached the client, and a CPU's input backlog dropped one (a count
    # every namespace of the host reads alike): explained
    ("a drop in the backlog", _node(delivered=9, read=9, backlog=1), 1, 0),
    # one never reached the client and nothing inside the lab dropped it: a leak
    ("a datagram gone", _node(delivered=9, read=9), 0, 1),
    # TCP segments the client got are not UDP datagrams it received
    ("TCP segments are no datagrams", _node(delivered=14, segs=5, read=9), 0, 1),
])
def test_the_leak_check_counts_arrivals_and_drops_inside_the_lab(case, client_after, backlog,
                                                                  leaked, tmp_path):
    nodes = ResolverNodes(resolver="resolver", client="client",
                          tiers={"root": "root", "sld-broken": "broken"})
    before = {"resolver": _node(), "client": _node(), "root": _node(), "broken": _node()}
    after = {"resolver": _node(out=15, backlog=backlog), "client": client_after,
             "root": _node(delivered=3, read=3, backlog=backlog),
             "broken": _node(delivered=2, read=2, backlog=backlog)}
    rules = "    0     0 all  --  *  !lo  0.0.0.0/0  !198.18.0.0/24  /* dnslab-leak */\n"
    # two equal reads make a quiet lab: before, then after
    check = object.__new__(LeakCheck)
    check.lab, check.nodes = _CountingLab([before, before, after, after], rules), nodes
    check.before = check._quiet()
    figures = check.finish(SimpleNamespace(path=tmp_path))
    assert figures["leak_datagrams"] == leaked, case
    assert figures["outside_lab_packets"] == 0 and figures["broken_tier_datagrams"] == 2
    unaccounted = json.loads((tmp_path / "leak.json").read_text())["unaccounted_datagrams"]
    assert unaccounted == 15 - (after["client"]["Ip"]["InDelivers"]
                                - after["client"]["Tcp"]["InSegs"]) - 5


@pytest.mark.parametrize("boot_ids, counted", [
    # two emulated hosts: namespaces of one kernel, whose backlog drops both read alike
    ({"a": 1, "b": 1}, 3),
    # two real hosts: each kernel dropped its own
    ({"a": 1, "b": 2}, 6),
])
def test_host_wide_drops_count_once_per_kernel(boot_ids, counted):
    nodes = ResolverNodes(resolver="resolver", client="client",
                          tiers={"root": "root", "sld-broken": "broken"})
    hosts = {"resolver": "a", "root": "a", "client": "b", "broken": "b"}

    def node(host, backlog=0):
        tables = _node(backlog=backlog)
        tables["Kernel"]["BootId"] = boot_ids[host]
        return tables

    check = object.__new__(LeakCheck)
    check.nodes = nodes
    check.lab = SimpleNamespace(state=SimpleNamespace(
        nodes={n: SimpleNamespace(host=h) for n, h in hosts.items()}))
    check.before = {n: node(h) for n, h in hosts.items()}
    dropped = check._dropped_inside({n: node(h, backlog=3) for n, h in hosts.items()})
    assert dropped["kernel_backlog"] == counted
