"""F6's own unit tests, kept in its folder (pytest collects `experiments/*/test_*.py`): the
trial's load per transport and connection mode, the loads no generator can send, and the
bench rows that put each server's qps beside the generator's ceiling."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pytest

from analysis import style  # noqa: F401  (headless: Agg)
from analysis.rundata import NotApplicable, load_run
from bench import bench_ceilings
from dnslab import topology
from dnslab.errors import LabError
from dnslab.servers import driver
from experiments.f6_transport_cost import ceilings, fixtures, plots
from experiments.f6_transport_cost.load import Load, conn_ends
from experiments.f6_transport_cost.transport import (
    ServerNodes,
    check_params,
    load_for,
    modes_of,
    seed_settings,
)
from experiments.generators.dnsload import stream_argv

PARAMS = {"clients": 8, "outstanding": 5000, "trial_s": 20, "timeout_s": 2.0,
          "connections": ["persistent", "per-query"], "per_query_clients": 50,
          "per_query_rate": 500}


def test_a_new_connection_per_query_only_where_a_connection_is_set_up() -> None:
    assert modes_of(PARAMS, "udp") == ["persistent"]
    assert modes_of(PARAMS, "doh") == ["persistent"]
    assert modes_of(PARAMS, "tcp") == ["persistent", "per-query"]
    assert modes_of({**PARAMS, "connections": None}, "dot") == ["persistent"]


def test_the_per_query_load_holds_a_connection_per_query_in_flight_at_its_own_rate() -> None:
    generators = {"tcp": "dnsload"}
    kept = load_for(PARAMS, generators, "tcp")
    assert (kept.clients, kept.outstanding, kept.rate, kept.queries_per_conn) == (8, 5000,
                                                                                   None, 0)
    fresh = load_for(PARAMS, generators, "tcp", "per-query")
    assert (fresh.clients, fresh.outstanding, fresh.rate, fresh.queries_per_conn) == (
        50, 50, 500.0, 1)
    fresh.check()


def test_dohs_path_goes_unindexed_unless_the_run_asks_for_the_index() -> None:
    """dnsload's GET :path kept out of the HPACK table by default, as nghttp2 keeps it;
    DOH_INDEX_PATH=1 sends Go's default (what Knot Resolver 5.7 misreads)."""
    def argv(params: dict) -> list[str]:
        load = load_for(params, {"doh": "dnsload"}, "doh")
        return stream_argv("198.18.0.11:443", "doh", Path("q"), connections=load.clients,
                           outstanding=load.outstanding, duration_s=load.seconds,
                           timeout_s=load.timeout_s, doh_method=load.doh_method,
                           doh_index_path=load.doh_index_path)
    assert "-doh-index-path" not in argv(PARAMS)
    assert "-doh-index-path" not in argv({**PARAMS, "doh_index_path": False})
    assert "-doh-index-path" in argv({**PARAMS, "doh_index_path": True})
    assert "-doh-index-path" not in stream_argv(
        "198.18.0.11:853", "dot", Path("q"), connections=1, outstanding=1, duration_s=1,
        timeout_s=1, doh_index_path=True)


@pytest.mark.parametrize("load, message", [
    (Load("tcp", "flamethrower", 8, 5000, 20, 2), "is not one of the lab's"),
    (Load("tcp", "dnsload", 8, 5000, 20, 2, queries_per_conn=100),
     "keeps a connection open or opens one per query"),
    (Load("doh", "dnsperf", 8, 5000, 20, 2, queries_per_conn=1),
     "a new connection per query over doh"),
    (Load("udp", "dnsload", 8, 5000, 20, 2, queries_per_conn=1),
     "a new connection per query over udp"),
])
def test_a_load_no_generator_can_send_is_one_line_before_any_work(load: Load,
                                                                   message: str) -> None:
    with pytest.raises(LabError, match=message):
        load.check()


def test_either_generator_sends_every_transport() -> None:
    for transport in ("udp", "tcp", "dot", "doh"):
        for generator in ("dnsperf", "dnsload"):
            Load(transport, generator, 8, 5000, 20, 2).check()
    with pytest.raises(LabError, match="speaks udp, tcp, dot, doh, not quic"):
        stream_argv("127.0.0.1:53", "quic", Path("q"), connections=1, outstanding=1,
                    duration_s=1, timeout_s=1)


def test_the_bench_reads_each_servers_qps_beside_the_ceiling_of_its_transport(
        tmp_path: Path) -> None:
    run = fixtures.transport_cost_run(tmp_path, qps=fixtures.MACHINE_QPS, spread=0.0)
    rows = {r["cell"]: r for r in ceilings.rows(run)}
    assert len(rows) == sum(len(t) for t in fixtures.MACHINE_QPS.values())
    nsd = rows["server=nsd udp (dnsperf)"]
    assert nsd["rate"] == pytest.approx(150000, abs=1)
    assert nsd["ceiling"] == fixtures.CEILINGS["udp"]
    assert nsd["share"] == pytest.approx(150000 / 190000, rel=1e-3)
    assert rows["server=knot tcp (dnsload)"]["ceiling"] == fixtures.CEILINGS["tcp"]
    assert nsd["placement"]["server_cpus"] == "0"


def test_the_bench_flags_a_transport_whose_qps_was_the_generators(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    qps = {"nsd": {"udp": 185000, "tcp": 120000}}
    run = fixtures.transport_cost_run(tmp_path, qps=qps, spread=0.0)
    assert bench_ceilings.main([str(run)]) == 0
    lines = {line.split()[1] + " " + line.split()[2]: line
             for line in capsys.readouterr().out.splitlines()[1:]}
    assert lines["server=nsd udp"].endswith("generator-limited")
    assert "generator-limited" not in lines["server=nsd tcp"]


def test_a_run_without_its_ceiling_says_so(tmp_path: Path) -> None:
    run = fixtures.transport_cost_run(tmp_path, qps={"knot": {"udp": 1000.0}}, ceiling=False)
    (row,) = ceilings.rows(run)
    assert row["ceiling"] is None and row["share"] is None


def test_a_udp_only_run_has_no_ratio_to_draw(tmp_path: Path) -> None:
    run = load_run(fixtures.transport_cost_run(tmp_path, qps={"knot": {"udp": 1000.0}}))
    _, ax = plt.subplots()
    with pytest.raises(NotApplicable, match="besides UDP"):
        plots.transport_ratio(run, ax, [])
    plt.close("all")


def test_the_seeds_settings_become_each_kinds_own_options() -> None:
    """Threads as the seed's configs, never more than the cores given; 512 KiB socket
    buffers through each kind's own option where it has one; a secondary's kind the seed ran
    as a resolver through a static-stub root, said in its cell."""
    params = {"threads": {"unbound": 4}, "socket_buffer_kib": 512,
              "stub_resolvers": ["bind"]}
    kinds = ["unbound", "bind", "nsd"]
    nodes = ServerNodes.of(topology.load("reference"), kinds)
    options, said = seed_settings(params, "unbound", nodes.by_kind["unbound"], nodes, 1)
    assert options["server"] == {"num-threads": 1, "so-rcvbuf": 524288, "so-sndbuf": 524288}
    assert (said["server_threads"], said["seed_threads"]) == (1, 4)
    options, said = seed_settings(params, "unbound", nodes.by_kind["unbound"], nodes, 8)
    assert said["server_threads"] == 4 and options["server"]["num-threads"] == 4
    options, said = seed_settings(params, "bind", nodes.by_kind["bind"], nodes, 2)
    assert options == {"udp-receive-buffer": 524288, "udp-send-buffer": 524288,
                       **driver("bind").stub_resolver_options(["example.test."])}
    assert said == {"server_threads": 2, "seed_threads": None, "socket_buffer_bytes": 524288,
                    "answers_as": "resolver (static-stub)"}
    options, said = seed_settings(params, "nsd", nodes.by_kind["nsd"], nodes, 1)
    assert options == {} and said["socket_buffer_bytes"] == 0
    assert said["answers_as"] == "secondary"
    _, said = seed_settings({}, "bind", nodes.by_kind["bind"], nodes, 1)
    assert said["answers_as"] == "secondary" and said["socket_buffer_bytes"] == 0


def test_dnsperf_takes_the_seeds_socket_buffers_and_a_kind_that_cannot_recurse_is_refused(
        ) -> None:
    load = load_for({**PARAMS, "socket_buffer_kib": 512}, {"udp": "dnsperf"}, "udp")
    assert load.socket_buffer_kib == 512
    params = {**PARAMS, "transports": ["udp"], "generators": {"udp": "dnsperf"},
              "stub_resolvers": ["nsd"]}
    with pytest.raises(LabError, match="no stub resolver settings for nsd"):
        check_params(params)


def test_a_version_of_a_kind_gets_its_kinds_seed_settings_on_its_own_node() -> None:
    """`SERVERS=unbound@1.26,bind@9.20,dnsdist@1.9`: each measured on the node the run adds
    for it (`server kind`, versioned_topology), with the settings the experiment file gives
    its kind (threads, the static-stub of a secondary the seed ran as a resolver)."""
    from dnslab.experiment_spec import load_spec, versioned_topology

    kinds = ["unbound@1.26", "bind@9.20", "dnsdist@1.9"]
    lab = versioned_topology(load_spec("transport-cost"), {"servers": kinds},
                             topology.load("reference"))
    nodes = ServerNodes.of(lab, kinds)
    assert nodes.by_kind == {"unbound@1.26": "resolver126", "bind@9.20": "sec-bind920",
                             "dnsdist@1.9": "frontend19"}
    assert nodes.front_end("frontend19")
    params = {"threads": {"unbound": 4, "dnsdist": 4}, "stub_resolvers": ["bind"]}
    _, said = seed_settings(params, "unbound@1.26", "resolver126", nodes, 8)
    assert (said["server_threads"], said["seed_threads"]) == (4, 4)
    _, said = seed_settings(params, "bind@9.20", "sec-bind920", nodes, 1)
    assert said["answers_as"] == "resolver (static-stub)"


def test_each_front_end_of_a_run_with_two_is_one(tmp_path: Path) -> None:
    """dnsdist@1.7 and dnsdist@1.9 in one run: each cell's node is a front-end by its own
    role in the run's topology, not by being the first front-end the run names."""
    from experiments.f6_transport_cost import derived

    root = fixtures.transport_cost_run(tmp_path, qps={"dnsdist": {"udp": 1000.0}})
    run = load_run(root)
    (cell,) = derived.server_cells(run).values()
    front_end, _ = fixtures.NODES["dnsdist"]
    nodes = run.meta["topology"]["nodes"]
    nodes[front_end + "19"] = {**nodes[front_end], "server": "dnsdist"}
    cell.params["server_node"] = front_end + "19"
    assert derived.is_front_end(run, cell)
    cell.params["server_node"] = fixtures.NODES["unbound"][0]
    assert not derived.is_front_end(run, cell)


def test_queries_lost_with_their_connection_hold_no_slot_for_the_timeout() -> None:
    """dnsload counts a broken connection's queries lost at the break and reuses the slots:
    kresd over DoH in run ee1c (39,501 lost in 64 reconnections of 8 connections x 625) had
    its slots in flight, not held by timeouts; the same losses without reconnections did."""
    import pandas as pd

    from experiments.f6_transport_cost import derived

    row = {"lost": 39501, "run_time_s": 20.0, "outstanding": 5000, "connections": 8,
           "reconnections": 64, "sent": 857231}
    assert derived._load_held(pd.DataFrame([row]), 5.0)["held_share"] == 0.0
    assert derived._load_held(pd.DataFrame([{**row, "reconnections": 0}]), 5.0)[
        "held_share"] == 1.0, "as many lost to timeouts held every slot"
    some = {**row, "lost": 8000, "reconnections": 4}  # 4 x 625 lost with their connections
    held = derived._load_held(pd.DataFrame([some]), 5.0)["held_share"]
    assert held == pytest.approx((8000 - 2500) * 5.0 / (20.0 * 5000))
    udp = {**some, "lost": 5500, "connections": 0, "reconnections": None}  # dnsperf over UDP
    assert derived._load_held(pd.DataFrame([udp]), 5.0)["held_share"] == pytest.approx(held)


def test_conn_ends_ranks_dnsloads_reasons() -> None:
    """Why connections ended (dnsload's `conn_ends`) goes into the trial row most frequent
    first, so a DoH server's GOAWAYs and a reader's EOFs read apart; none: an empty cell."""
    assert conn_ends({"read: eof": 2, "read: goaway FRAME_SIZE_ERROR": 7,
                      "write: broken pipe": 2}) == (
        "read: goaway FRAME_SIZE_ERROR 7; read: eof 2; write: broken pipe 2")
    assert conn_ends({}) == ""
