"""Unit tests of the tcp-fallback procedure's parts that need no lab: the stair figures,
server options, the query mix for a zone set without AAAA records, and the cache-curve
figures."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import zones
from dnslab import results, topology
from dnslab.errors import LabError
from experiments.f1_tcp_fallback import (
    cache_model,
    fallback,
    fallback_cache,
    responses,
    stair_recorder,
    stairs,
)
from zones import queries


def _measure(rate: float, *, tcp_ratio: float, max_ms: float, p99_ms: float,
             timeouts: int = 0) -> stairs.StepMeasure:
    sent = int(rate * 10)
    tcp = int(sent * tcp_ratio)
    return stairs.StepMeasure(seconds=10.0, offered_qps=rate, answered_qps=rate, sent=sent,
                            answered=sent - timeouts, tcp=tcp, truncated=tcp,
                            timeouts=timeouts, throttled=0, net_errors=0,
                            rcodes={"NOERROR": sent}, p50_ms=0.5, p90_ms=1.0, p99_ms=p99_ms,
                            max_ms=max_ms)


def test_stair_figures_take_the_capacity_step() -> None:
    crit = stairs.Criteria()
    results = [
        stairs.judge(1, 1000, _measure(1000, tcp_ratio=0.30, max_ms=40, p99_ms=4), crit),
        stairs.judge(2, 2000, _measure(2000, tcp_ratio=0.30, max_ms=400, p99_ms=9), crit),
        stairs.judge(3, 3000, _measure(3000, tcp_ratio=0.20, max_ms=3241, p99_ms=900,
                                     timeouts=300), crit),
    ]
    rows = [{"truncated_per_s": r.measure.truncated / 10, "server_cpu_pct": 10.0 * r.step,
             "udp_rcvbuf_errors": r.step - 1, "udp_in_errors": 0, "listen_overflows": 2,
             "listen_drops": 2} for r in results]
    figures = stair_recorder.stair_figures(results, rows)
    assert figures["capacity_qps"] == 2000 and figures["capacity_step"] == 2
    assert figures["tcp_share"] == pytest.approx(0.3 / 1.3, abs=1e-3)
    assert figures["truncated_per_s"] == 600
    assert figures["max_latency_ms_at_capacity"] == 400
    assert figures["p99_ms_at_capacity"] == 9
    assert figures["server_cpu_pct_at_capacity"] == 20.0
    assert figures["max_ms_by_qps"] == {"1000": 40, "2000": 400, "3000": 3241}
    assert figures["first_fail_qps"] == 3000 and "TAT" in figures["first_fail_reasons"]
    assert figures["udp_rcvbuf_errors"] == 3 and figures["listen_overflows"] == 6
    overall = (300 + 600 + 600) / (1000 + 300 + 2000 + 600 + 3000 + 600)
    assert figures["tcp_share_overall"] == pytest.approx(overall, abs=1e-4)


def test_stair_figures_without_a_passing_step_fall_back_to_the_first() -> None:
    crit = stairs.Criteria()
    results = [stairs.judge(1, 1000, _measure(1000, tcp_ratio=0.25, max_ms=2000, p99_ms=1500),
                          crit)]
    figures = stair_recorder.stair_figures(results, [{"truncated_per_s": 250, "server_cpu_pct": 1,
                                                "udp_rcvbuf_errors": 0, "udp_in_errors": 0,
                                                "listen_overflows": 0, "listen_drops": 0}])
    assert figures["capacity_qps"] is None
    assert figures["max_latency_ms_at_capacity"] is None
    assert figures["tcp_share"] == pytest.approx(0.2, abs=1e-3)
    assert figures["first_fail_qps"] == 1000


def test_tcp_share_of_the_seed_mix() -> None:
    # 30 % of UDP queries truncated -> 23 % of all queries the server sees arrive over TCP
    assert responses.tcp_share_of(0.30) == pytest.approx(0.2308, abs=1e-4)
    assert responses.tcp_share_of(0.0) == 0.0


class BatchLab:
    """A lab whose client asks a batch of queries at once (`Lab.ask_many`): the names that
    start with "big" come back truncated, "gone" gets no answer."""

    def __init__(self) -> None:
        self.batches: list[list] = []

    def address(self, node: str) -> str:
        return "198.18.0.11"

    def ask_many(self, node: str, queries: list) -> list:
        from dnslab import probe

        self.batches.append(queries)
        return [None if q.name.startswith("gone") else probe.Answer(
            rcode="NOERROR", authoritative=True, answers=1, serial=None, size=100,
            truncated=q.name.startswith("big")) for q in queries]


def test_the_truncated_share_asks_each_distinct_query_once_in_one_batch(tmp_path) -> None:
    """On another host a batch is one host command, not one round trip a query."""
    qfile = tmp_path / "queries.txt"
    qfile.write_text("big.a.test. NAPTR\nsmall.a.test. A\nbig.a.test. NAPTR\n"
                     "small.a.test. A\n# comment\nsmall.b.test. AAAA\n")
    lab = BatchLab()
    share = responses.truncated_share(lab, "client", "primary", qfile, 4096)  # type: ignore
    assert share == pytest.approx(2 / 5)
    (batch,) = lab.batches
    assert [(q.name, q.rdtype, q.tcp) for q in batch] == [
        ("big.a.test.", "NAPTR", False), ("small.a.test.", "A", False),
        ("small.b.test.", "AAAA", False)]
    assert batch[0].options == {"payload": 4096, "recursion": False}
    qfile.write_text("gone.a.test. A\n")
    with pytest.raises(LabError, match="198.18.0.11 did not answer gone.a.test. A from client"):
        responses.truncated_share(lab, "client", "primary", qfile, 4096)  # type: ignore


BASE = {"udp_payload": 4096, "bind_options": {"minimal_responses": "no"},
        "bind_tuned": {"tcp-clients": 10000, "tcp-listen-queue": 65535},
        "knot_options": {}, "knot_tuned": {"tcp-max-clients": 10000, "server": {"tcp-workers": 4}},
        "nsd_options": {"server": {"ipv4-edns-size": 1232}}, "nsd_tuned": {"tcp-count": 1000}}


def test_server_options_set_the_udp_payload_and_tuning_per_server() -> None:
    bind = fallback.server_options(BASE, "bind", tuned=False)
    assert bind == {"minimal_responses": "no", "max-udp-size": 4096, "edns-udp-size": 4096}
    bind_tuned = fallback.server_options(BASE, "bind", tuned=True)
    assert bind_tuned["tcp-listen-queue"] == 65535 and bind_tuned["minimal_responses"] == "no"
    knot = fallback.server_options(BASE, "knot", tuned=True)
    assert knot["server"] == {"udp-max-payload": 4096, "tcp-workers": 4}
    assert knot["tcp-max-clients"] == 10000
    # an explicit per-server value wins over UDP_PAYLOAD
    nsd = fallback.server_options(BASE, "nsd", tuned=False)
    assert nsd["server"] == {"ipv4-edns-size": 1232} and "tcp-count" not in nsd
    plain = fallback.server_options({**BASE, "udp_payload": 0}, "bind", tuned=False)
    assert "max-udp-size" not in plain
    # an image variant (bind916) speaks its server kind's options, with its own base options
    variant = fallback.server_options({**BASE, "bind916_options": {"minimal_responses": "no"}},
                                      "bind916", tuned=False, kind="bind")
    assert variant == bind


def test_the_before_mix_drops_aaaa_and_leaves_the_module_mix_alone(tmp_path) -> None:
    before = dict(queries.MOBILE_MIX)
    zone_set = zones.ensure("3gpp", {"profile": "before", "tacs": 4, "apns": 2, "areas": 2},
                            seed=3, out_root=tmp_path)
    mix = fallback.mix_for(zone_set)
    assert mix["AAAA"] == 0.0 and mix["NAPTR"] == before["NAPTR"]
    qfile = queries.mobile_core(zone_set, count=2000, truncating=0.3, seed=3, mix=mix)
    assert queries.MOBILE_MIX == before
    assert qfile.manifest["params"]["mix"] == mix
    types = {line.split()[1] for line in qfile.path.read_text().splitlines()}
    assert "AAAA" not in types and "NAPTR" in types
    assert qfile.manifest["measured"]["truncated_share"] == pytest.approx(0.3, abs=0.03)


def test_response_figures_pick_the_largest_modelled_name() -> None:
    rows = []
    for kind, name, model_size in (("tac", "t1", 22788), ("tac", "t2", 100), ("apn", "a1", 6124)):
        base = {"kind": kind, "qname": name}
        rows += [{**base, "source": "udp", "size": 84, "answer": 0, "additional": 1,
                  "truncated": True},
                 {**base, "source": "tcp", "size": model_size // 2, "answer": 93,
                  "additional": 1, "truncated": False},
                 {**base, "source": "model", "size": model_size, "answer": 93,
                  "additional": 219, "truncated": True}]
    figures = responses.response_figures(rows)
    assert figures["tac_name"] == "t1" and figures["tac_tcp_size"] == 11394
    assert figures["tac_model_additional"] == 219 and figures["tac_udp_truncated"] is True
    assert figures["apn_model_size"] == 6124


def test_cache_curve_figures_find_the_onset_above_the_cache_size() -> None:
    results = cache_model.amplification_curve([200, 400, 500, 600, 800], 500, lookup_rate=200,
                                              duration=1200, ttl=100, seed=1)
    figures = fallback_cache.curve_figures(results, margin=0.05)
    assert figures["records"] == [200, 400, 500, 600, 800]
    assert figures["amplification"][0] == pytest.approx(1.0, abs=0.01)
    assert figures["onset_records"] is not None and figures["onset_records"] > 400
    assert figures["max_amplification"] > 1.05


def test_function_test_bumps_the_soa_serial():
    from experiments.f1_tcp_fallback.zone_changes import _bump_serial

    text = "$ORIGIN epc.test.\n$TTL 300\n@ SOA ns01 hostmaster 2024010101 3600 900 1209600 300\n"
    bumped, serial = _bump_serial(text)
    assert serial == 2024010102
    assert "@ SOA ns01 hostmaster 2024010102 3600 900 1209600 300" in bumped
    with pytest.raises(LabError, match="SOA serial"):
        _bump_serial("$TTL 300\n")


class _StubRun:
    """Just what `usable_servers` touches of a Run: the parameters, the topology, the
    experiment's defaults, a node check that fails for the image node when its image is
    missing, and a run folder (`writer`) in `folder`."""

    def __init__(self, servers: list[str], image_built: bool, folder: Path) -> None:
        self.params = {"servers": servers}
        self.spec = type("Spec", (), {"params": {"servers": ["bind916", "bind", "knot", "nsd"]}})
        run_id = f"stub-{len(results.run_dirs(folder))}"
        self.writer = results.RunWriter.create(folder, "tcp-fallback", run_id, {})
        self.topology = topology.load("mobile")
        self.image_built = image_built
        self.prepared: list[list[str]] = []

    def prepare_nodes(self, nodes: list[str]) -> None:
        if "sec-bind916" in nodes and not self.image_built:
            raise LabError("image dnslab/bind9-bullseye is not built", hint="make images")
        self.prepared.append(nodes)


def _usable(run: _StubRun) -> list[str]:
    return fallback.usable_servers(run, fallback.MobileNodes.of(run.topology))


def test_bind916_leaves_the_default_servers_only_when_its_image_is_missing(tmp_path):
    run = _StubRun(["bind916", "bind", "knot", "nsd"], image_built=False, folder=tmp_path)
    assert _usable(run) == ["bind", "knot", "nsd"]
    assert "not built" in results.read_meta(run.writer.dir)["servers_skipped"]["bind916"]
    built = _StubRun(["bind916", "bind", "knot", "nsd"], image_built=True, folder=tmp_path)
    assert _usable(built) == ["bind916", "bind", "knot", "nsd"]
    # asked for by name, a missing image is an error, not a silent skip
    with pytest.raises(LabError, match="not built"):
        _usable(_StubRun(["bind916"], image_built=False, folder=tmp_path))


class _PlannedRun:
    """The parts of a Run that tcp_fallback's loop uses; `done` cells count as finished."""

    def __init__(self, params: dict, done: set[str]):
        self.params = params
        self.done = done
        self.topology = None
        self.planned: int | None = None
        self.planned_s = 0.0
        self.estimate: Callable[[str], float] | None = None

    def placement(self) -> str:
        return "placement"

    def plan(self, cells: int, per_cell_s: float,
             cell_estimate: Callable[[str], float] | None = None) -> None:
        assert per_cell_s > 0
        self.planned, self.planned_s, self.estimate = cells, cells * per_cell_s, cell_estimate

    def finished(self, cell_id: str) -> dict | None:
        return {"capacity_qps": 1} if cell_id in self.done else None


def _cells_run(monkeypatch, done: set[str]) -> tuple[list[str], _PlannedRun]:
    ran: list[str] = []
    monkeypatch.setattr(fallback.MobileNodes, "of", classmethod(lambda cls, topo: None))
    monkeypatch.setattr(fallback, "usable_servers", lambda run, nodes: ["bind916", "bind"])
    monkeypatch.setattr(fallback, "ensure_dnsload", lambda: None)
    monkeypatch.setattr(fallback.zones, "ensure", lambda *a, **k: f"zones-{a[1]['profile']}")
    monkeypatch.setattr(fallback, "mix_for", lambda zone_set: {})
    monkeypatch.setattr(fallback.queries, "mobile_core", lambda zone_set, **k: "qfile")
    monkeypatch.setattr(fallback, "run_ceiling", lambda run, nodes, records, *a:
                        ran.append(f"server=ceiling,records={records}"))
    monkeypatch.setattr(fallback, "run_cell", lambda run, nodes, server, records, tuning, *a:
                        ran.append(f"server={server},records={records},tuning={tuning}"))
    params = {"records": ["before", "after"], "tunings": ["untuned", "tuned"], "ceiling": True,
              "seed": 1, "queries": 10, "truncating": 0.3, "client_bufsize": 4096,
              "step_s": 60, "burst_s": 600, "burst_search_steps": 6,
              "burst_probe_s": 120, "function_s": 60, "ceiling_step_s": 20}
    run = _PlannedRun(params, done)
    fallback.tcp_fallback(run)  # type: ignore[arg-type]
    return ran, run


def test_tcp_fallback_runs_the_ceilings_then_one_server_at_a_time(monkeypatch) -> None:
    ran, run = _cells_run(monkeypatch, set())
    assert run.planned == 10 and len(ran) == 10
    assert ran[:2] == ["server=ceiling,records=before", "server=ceiling,records=after"]
    assert ran[2:6] == [f"server=bind916,records={r},tuning={t}"
                        for r in ("before", "after") for t in ("untuned", "tuned")]
    assert all(cell.startswith("server=bind,") for cell in ran[6:])
    # each cell's estimate: a ceiling is short beside a stair, and they add up to the plan
    assert run.estimate is not None
    assert run.estimate(ran[0]) * 2 < run.estimate(ran[2])
    assert sum(run.estimate(cell) for cell in ran) == pytest.approx(run.planned_s)


def test_a_resumed_tcp_fallback_skips_finished_cells(monkeypatch) -> None:
    done = {"server=ceiling,records=before", "server=ceiling,records=after",
            "server=bind916,records=before,tuning=untuned"}
    ran, _ = _cells_run(monkeypatch, done)
    assert not done & set(ran)
    assert ran[0] == "server=bind916,records=before,tuning=tuned" and len(ran) == 7


class _Recorder:
    """Stands in for `StepRecorder` in `run_burst`: notes its file name, each mark and each
    row (with the phase it had then)."""

    made: list[_Recorder] = []

    def __init__(self, cell: object, lab: object, node: str, client: str, name: str = "stair",
                 **_: object) -> None:
        self.name, self.phase, self.events = name, "coarse", ["mark"]
        _Recorder.made.append(self)

    def mark(self) -> None:
        self.events.append("mark")

    def __call__(self, result: stairs.StepResult) -> None:
        self.events.append((self.phase, result.target_qps, result.passed))


def test_run_burst_records_the_search_below_a_failed_burst(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    from tests.unit.test_stairs import GEN, TiringServer

    _Recorder.made = []
    monkeypatch.setattr(fallback, "StepRecorder", _Recorder)
    params = {"max_tat_ms": 1000, "burst_s": 600, "burst_probe_s": 120,
              "burst_search_steps": 6, "descent_factor": 0.8, "fine_share": 0.05,
              "stair_floor": 100, "max_error_rate": 0.001, "tat_stat": "max", "warmup_s": 5}
    cell = SimpleNamespace(run=SimpleNamespace(params=params))
    figures = fallback.run_burst(cell, object(), "sec", "client",  # type: ignore[arg-type]
                                 TiringServer(capacity=2000, sustained=1700),
                                 GEN, 2000.0)
    assert figures["burst_stair_qps"] == 2000 and figures["burst_stair_passed"] is False
    assert figures["burst_qps"] == 1700 and figures["burst_passed"] is True
    assert figures["burst_search_resolution"] == pytest.approx(50 / 1700, abs=1e-4)
    kinds = [(s["kind"], s["qps"], s["passed"]) for s in figures["burst_search"]]
    # 120 s probes already fail above 1,700 here: a failed probe spares the full burst
    assert kinds == [("burst", 2000.0, False), ("probe", 1600.0, True), ("burst", 1600.0, True),
                     ("probe", 1800.0, False), ("probe", 1700.0, True), ("burst", 1700.0, True),
                     ("probe", 1750.0, False)]
    assert figures["burst_probes"] == sum(1 for k, *_ in kinds if k == "probe")
    bursts, probes = _Recorder.made
    assert (bursts.name, probes.name) == ("burst", "burst-probe")
    # each step follows its own mark; rows carry their phase
    assert all(e == "mark" for e in bursts.events[1::2])
    assert [e[0] for e in probes.events if e != "mark"] == ["probe"] * figures["burst_probes"]
    assert [e[1] for e in bursts.events if e != "mark"] == [
        q for k, q, _ in kinds if k == "burst"]
