"""Unit tests of the F1 load protocols (stair, burst, soak) on synthetic generator output."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from dnslab.errors import LabError
from experiments.f1_tcp_fallback import stairs
from experiments.generators import dnsload
from tests.fixtures import stair_protocols as protocols

TC_FRACTION = 0.3


def _line(kind: str, rate: float, seconds: float, *, answered_ratio: float = 1.0,
          timeouts: int = 0, servfail: int = 0, throttled: int = 0, max_ms: float = 20.0,
          p99_ms: float = 5.0) -> dict:
    sent = int(rate * seconds) - throttled
    answered = int(sent * answered_ratio) - timeouts - servfail
    tcp = int(sent * TC_FRACTION)
    return {
        "type": kind, "t": seconds, "seconds": seconds, "offered_qps": rate,
        "answered_qps": (answered + servfail) / seconds, "sent": sent,
        "answered": answered + servfail, "udp": sent, "udp_answered": answered - tcp, "tcp": tcp,
        "tcp_answered": tcp, "truncated": tcp, "timeouts": timeouts, "throttled": throttled,
        "net_errors": 0, "recv_errors": 0, "late": 0, "mismatched": 0,
        "rcodes": {"NOERROR": answered, **({"SERVFAIL": servfail} if servfail else {})},
        "outstanding": 0,
        "lat_ms": {"p50": 0.5, "p90": 1.0, "p99": p99_ms, "max": max_ms},
    }


class FakeServer:
    """Stands in for `run`: parses dnsload's argv and answers like a server whose capacity
    is `capacity` qps (beyond it: timeouts and seconds-long TATs)."""

    def __init__(self, capacity: float) -> None:
        self.capacity = capacity
        self.calls: list[list[str]] = []

    def __call__(self, argv: list[str]) -> str:
        self.calls.append(argv)
        rate = float(argv[argv.index("-Q") + 1])
        duration = float(argv[argv.index("-l") + 1])
        warm = float(argv[argv.index("-warmup") + 1]) if "-warmup" in argv else 0.0
        over = rate > self.capacity
        kw = {"timeouts": int(rate * 0.01 * (duration - warm)), "max_ms": 3241.0,
              "p99_ms": 900.0} if over else {}
        out = [json.dumps({"type": "start"}),
               json.dumps(_line("interval", rate, 1.0)),
               json.dumps(_line("total", rate, duration, **kw))]
        if warm:
            out.append(json.dumps(_line("steady", rate, duration - warm, **kw)))
        return "\n".join(out) + "\n"


GEN = dnsload.DnsloadGenerator(server="198.18.0.11:53", query_file="/tmp/q.txt", binary="dnsload")


def test_stair_capacity_is_highest_passing_step(tmp_path: Path) -> None:
    fake = FakeServer(capacity=12_000)
    res = protocols.stair(fake, GEN, 2000, 25_000, 1000, 60)
    assert [r.target_qps for r in res] == [float(q) for q in range(2000, 25_001, 1000)]
    assert stairs.capacity(res) == 12_000
    assert all(r.passed for r in res if r.target_qps <= 12_000)
    failing = [r for r in res if not r.passed]
    assert failing and all(r.target_qps > 12_000 for r in failing)
    assert "error rate 1.000% > 0.100%" in failing[0].reasons[0]
    assert any("max TAT 3241 ms > 1000 ms" in x for x in failing[0].reasons)
    # the warm-up was passed on and the steady window was used
    assert all("-warmup" in c and c[c.index("-warmup") + 1] == "5" for c in fake.calls)
    assert res[0].measure.seconds == 55
    assert res[0].tcp_share == pytest.approx(TC_FRACTION / (1 + TC_FRACTION), abs=1e-3)


def test_stair_stops_after_failures() -> None:
    fake = FakeServer(capacity=4000)
    res = protocols.stair(fake, GEN, 2000, 25_000, 1000, 30, stop_after_failures=2)
    assert [r.target_qps for r in res] == [2000, 3000, 4000, 5000, 6000]
    assert stairs.capacity(res) == 4000


def test_judge_p99_criterion_and_throttling() -> None:
    m = GEN.parse(json.dumps(_line("total", 10_000, 60, max_ms=1500.0, p99_ms=40.0)))
    strict = stairs.judge(1, 10_000, m, stairs.Criteria(tat_stat="max"))
    lenient = stairs.judge(1, 10_000, m, stairs.Criteria(tat_stat="p99"))
    assert not strict.passed and lenient.passed
    # queries the generator had to hold back are failures, not silently dropped
    m = GEN.parse(json.dumps(_line("total", 10_000, 60, throttled=3000)))
    r = stairs.judge(1, 10_000, m, stairs.Criteria())
    assert r.errors == 3000 and r.error_rate == pytest.approx(0.005) and not r.passed


def test_judge_error_rcodes_and_threshold() -> None:
    # 0.05 % SERVFAIL passes a 0.1 % threshold, fails a 0.01 % one
    m = GEN.parse(json.dumps(_line("total", 10_000, 100, servfail=500)))
    assert stairs.judge(1, 10_000, m, stairs.Criteria()).passed
    r = stairs.judge(1, 10_000, m, stairs.Criteria(max_error_rate=0.0001))
    assert not r.passed and r.errors == 500
    # NXDOMAIN is an answer, not an error, unless asked for
    line = _line("total", 10_000, 100)
    line["rcodes"] = {"NXDOMAIN": line["answered"]}
    m = GEN.parse(json.dumps(line))
    assert stairs.judge(1, 10_000, m, stairs.Criteria()).passed
    assert not stairs.judge(1, 10_000, m, stairs.Criteria(error_rcodes=("NXDOMAIN",))).passed


def test_judge_generator_shortfall() -> None:
    line = _line("total", 10_000, 60)
    line["offered_qps"] = 8000
    r = stairs.judge(1, 10_000, GEN.parse(json.dumps(line)), stairs.Criteria())
    assert not r.passed and r.reasons == ["offered 8000 qps < 95% of 10000"]


def test_burst_and_soak() -> None:
    fake = FakeServer(capacity=18_000)
    assert stairs.burst(fake, GEN, 18_000, 600).passed
    assert not stairs.burst(fake, GEN, 19_000, 600).passed
    chunks = protocols.soak(fake, GEN, 18_000, 1500, chunk_s=600)
    assert [float(c[c.index("-l") + 1]) for c in fake.calls[2:]] == [600, 600, 300]
    # only the first chunk drops a warm-up
    assert ["-warmup" in c for c in fake.calls[2:]] == [True, False, False]
    s = protocols.summarize(chunks)
    assert s.passed and s.failures == 0 and s.max_tat_ms == 20.0
    assert s.queries == 18_000 * (595 + 600 + 300)


def test_write_csv(tmp_path: Path) -> None:
    res = protocols.stair(FakeServer(capacity=3000), GEN, 2000, 4000, 1000, 10)
    path = protocols.write_csv(res, tmp_path / "stair.csv")
    rows = list(csv.DictReader(path.open()))
    assert list(rows[0])[:14] == ["step", "offered_qps", "answered_qps", "udp", "tcp",
                                  "truncated", "timeouts", "errors", "p50_ms", "p90_ms",
                                  "p99_ms", "max_ms", "tcp_share", "passed"]
    assert [r["passed"] for r in rows] == ["True", "True", "False"]
    assert rows[2]["timeouts"] == str(int(4000 * 0.01 * 5))


def test_command_and_parse_errors() -> None:
    argv = GEN.command(12_000, 60, 5)
    assert argv[:2] == ["dnsload", "run"]
    assert argv[argv.index("-Q") + 1] == "12000" and argv[argv.index("-t") + 1] == "5"
    assert "-warmup" not in GEN.command(1000, 3, 5)
    with pytest.raises(LabError):
        GEN.parse("dnsload: error: refusing target 8.8.8.8\n")
    with pytest.raises(LabError):
        protocols.stair(FakeServer(1), GEN, 5000, 1000, 1000, 60)
    with pytest.raises(LabError):
        protocols.local_runner(["/nonexistent/dnsload", "run"])


def test_exec_runner_adapts_popen() -> None:
    def fake_exec(node: str, argv: list[str]) -> subprocess.Popen:
        code = f"import sys; print({node!r}, {len(argv)}); sys.exit({1 if 'bad' in argv else 0})"
        return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)

    run = protocols.exec_runner(fake_exec, "client1")
    assert run(["dnsload", "run"]).strip() == "client1 2"
    with pytest.raises(LabError, match="dnsload failed on client1"):
        run(["dnsload", "bad"])


def test_function_runs_changes_while_the_load_runs() -> None:
    import threading
    import time

    fake = FakeServer(capacity=18_000)
    events: list[str] = []
    started = threading.Event()

    def runner(argv: list[str]) -> str:
        started.set()
        time.sleep(0.3)
        events.append("load done")
        return fake(argv)

    def changes() -> list[str]:
        assert started.wait(5), "the load did not start before the changes"
        events.append("changed")
        return ["sync ok"]

    step, outcome = stairs.function(runner, GEN, 18_000, 60, changes)
    assert outcome == ["sync ok"] and step.passed
    assert events == ["changed", "load done"]
    # an overload during the changes fails the step as any other
    step, _ = stairs.function(fake, GEN, 19_000, 60, lambda: None)
    assert not step.passed


def test_fine_pass_runs_between_the_coarse_capacity_and_the_first_failure():
    server = FakeServer(capacity=2600)
    gen = dnsload.DnsloadGenerator(server="127.0.0.1:5300", query_file="q.txt")
    coarse = protocols.stair(server, gen, 1000, 5000, 1000, 10, stop_after_failures=2)
    assert stairs.capacity(coarse) == 2000
    # steps of at most 5 % of the coarse capacity (100 qps), up to the first failure (3000)
    fine = stairs.fine_rates(coarse, 0.05)
    assert fine == [2100, 2200, 2300, 2400, 2500, 2600, 2700, 2800, 2900]
    assert all(b - a <= 0.05 * 2000 for a, b in zip([2000, *fine], fine, strict=False))
    results = stairs.steps(server, gen, fine, 10, stop_after_failures=2,
                         first_step=len(coarse) + 1)
    assert stairs.capacity(coarse + results) == 2600
    assert results[0].step == len(coarse) + 1
    # nothing to refine: no step passed, none failed, or no fine share
    assert stairs.fine_rates(protocols.stair(server, gen, 1000, 2000, 1000, 10), 0.05) == []
    assert stairs.fine_rates(coarse, 0.0) == []
    no_pass = protocols.stair(FakeServer(100), gen, 1000, 2000, 1000, 10)
    assert stairs.fine_rates(no_pass, 0.05) == []


def test_geometric_rates_grow_by_the_factor_up_to_the_stop():
    assert stairs.geometric_rates(2000, 5000, 1.25) == [2000, 2500, 3125, 3906, 4882]
    assert stairs.geometric_rates(500, 2000, 2) == [500, 1000, 2000]
    with pytest.raises(LabError):
        stairs.geometric_rates(1000, 2000, 1.0)


def test_a_server_slower_than_the_first_step_gets_a_descent_then_the_fine_pass() -> None:
    server = FakeServer(capacity=1700)
    coarse = stairs.steps(server, GEN, [2000, 3000], 10, stop_after_failures=2)
    assert stairs.capacity(coarse) is None and stairs.fine_rates(coarse, 0.05) == []
    down = stairs.descend(server, GEN, 2000, 100, 10, first_step=3)
    assert [(r.step, r.target_qps, r.passed) for r in down] == [(3, 1600, True)]
    fine = stairs.fine_rates(coarse + down, 0.05)
    assert fine == [1680, 1760, 1840, 1920]
    found = stairs.steps(server, GEN, fine, 10, stop_after_failures=2)
    assert stairs.capacity(coarse + down + found) == 1680


def test_the_descent_stops_at_its_floor() -> None:
    down = stairs.descend(FakeServer(capacity=100), GEN, 2000, 700, 10, factor=0.5)
    assert [r.target_qps for r in down] == [1000]
    assert not any(r.passed for r in down)
    down = stairs.descend(FakeServer(capacity=100), GEN, 2000, 200, 10, factor=0.5)
    assert [r.target_qps for r in down] == [1000, 500, 250]
    assert stairs.descend(FakeServer(capacity=100), GEN, 2000, 0, 10) == []
    with pytest.raises(LabError, match="descent factor"):
        stairs.descend(FakeServer(capacity=100), GEN, 2000, 100, 10, factor=1.0)


def test_below_continues_the_descent_grid_whatever_passes() -> None:
    # from 1,280 (2,000 x 0.8 x 0.8): the rates a stair descending from 2,000 would run
    down = stairs.below(FakeServer(capacity=700), GEN, 1280, 4, 100, 10, first_step=5)
    assert [(r.step, r.target_qps, r.passed) for r in down] == [
        (5, 1024, False), (6, 819, False), (7, 655, True), (8, 524, True)]
    assert [r.target_qps for r in stairs.below(FakeServer(capacity=700), GEN, 1280, 4, 700,
                                               10)] == [1024, 819]
    assert stairs.below(FakeServer(capacity=700), GEN, 1280, 0, 100, 10) == []


class _Phases:
    """Stands in for the StepRecorder: notes each step's pass and phase."""

    def __init__(self) -> None:
        self.phase = ""
        self.seen: list[tuple[str, int, float]] = []

    def __call__(self, result: stairs.StepResult) -> None:
        self.seen.append((self.phase, result.step, result.target_qps))


def test_the_stair_descends_when_no_coarse_step_passes() -> None:
    from experiments.f1_tcp_fallback.stair_recorder import coarse_and_fine

    params = {"stop_after_failures": 2, "step_s": 10, "fine_step_s": 0, "fine_share": 0.05,
              "warmup_s": 0, "max_error_rate": 0.001, "max_tat_ms": 1000, "tat_stat": "max",
              "stair_floor": 100, "descent_factor": 0.8}
    phases = _Phases()
    results = coarse_and_fine(FakeServer(capacity=1700), GEN, phases, params,  # type: ignore[arg-type]
                              [2000.0, 3000.0, 4000.0])
    assert stairs.capacity(results) == 1680
    assert phases.seen == [("coarse", 1, 2000), ("coarse", 2, 3000), ("descent", 3, 1600),
                           ("fine", 4, 1680), ("fine", 5, 1760), ("fine", 6, 1840)]
    phases = _Phases()
    coarse_and_fine(FakeServer(capacity=1700), GEN, phases, {**params, "stair_floor": 0},  # type: ignore[arg-type]
                    [2000.0, 3000.0])
    assert [p for p, _, _ in phases.seen] == ["coarse", "coarse"]


def test_the_descent_goes_on_below_its_passing_step() -> None:
    """DESCENT_BELOW: the descent's grid continued under the step that passed (where a
    burst search may find the capacity), then the fine pass above it as before; a stair
    whose coarse steps passed runs none."""
    from experiments.f1_tcp_fallback.stair_recorder import coarse_and_fine

    params = {"stop_after_failures": 2, "step_s": 10, "fine_step_s": 0, "fine_share": 0.05,
              "warmup_s": 0, "max_error_rate": 0.001, "max_tat_ms": 1000, "tat_stat": "max",
              "stair_floor": 100, "descent_factor": 0.8, "descent_below": 2}
    phases = _Phases()
    results = coarse_and_fine(FakeServer(capacity=1700), GEN, phases, params,  # type: ignore[arg-type]
                              [2000.0, 3000.0])
    assert stairs.capacity(results) == 1680
    assert phases.seen == [("coarse", 1, 2000), ("coarse", 2, 3000), ("descent", 3, 1600),
                           ("below", 4, 1280), ("below", 5, 1024), ("fine", 6, 1680),
                           ("fine", 7, 1760), ("fine", 8, 1840)]
    phases = _Phases()
    coarse_and_fine(FakeServer(capacity=2500), GEN, phases, params,  # type: ignore[arg-type]
                    [2000.0, 3000.0, 4000.0])
    assert "below" not in {p for p, _, _ in phases.seen}


class TiringServer(FakeServer):
    """A server that holds `capacity` qps for a short step but only `sustained` qps for a
    step longer than `long_s` (the seed's stair capacity whose 10-minute burst failed)."""

    def __init__(self, capacity: float, sustained: float, long_s: float = 100) -> None:
        super().__init__(capacity)
        self.sustained, self.long_s = sustained, long_s

    def __call__(self, argv: list[str]) -> str:
        duration = float(argv[argv.index("-l") + 1])
        limit = self.capacity if duration <= self.long_s else self.sustained
        saved, self.capacity = self.capacity, limit
        try:
            return super().__call__(argv)
        finally:
            self.capacity = saved


def _ran(server: FakeServer) -> list[tuple[float, float]]:
    """(rate, seconds) of every step the server was offered, in order."""
    return [(float(a[a.index("-Q") + 1]), float(a[a.index("-l") + 1])) for a in server.calls]


def test_the_burst_holding_at_the_stair_capacity_runs_no_search() -> None:
    server = TiringServer(capacity=2000, sustained=2000)
    found = stairs.held_burst(server, GEN, 2000, 600, 60, 8)
    assert found.held_qps == 2000 and found.probes == []
    assert _ran(server) == [(2000, 600)]
    assert [s["kind"] for s in found.steps()] == ["burst"]


def test_a_failed_burst_searches_below_the_stair_capacity_for_the_load_that_holds() -> None:
    # steps of a minute hold 2,000 qps, ten minutes only 1,700 (the seed: stair 19,000,
    # burst held at 18,000): down by 0.8 to 1,600 (held), then bisected to 5 %
    server = TiringServer(capacity=2000, sustained=1700)
    seen: list[tuple[str, str]] = []
    found = stairs.held_burst(server, GEN, 2000, 600, 60, 8, stairs.Criteria(warmup_s=0),
                              before_step=lambda kind: seen.append(("before", kind)),
                              on_step=lambda kind, r: seen.append(("after", kind)))
    assert _ran(server) == [(2000, 600), (1600, 60), (1600, 600), (1800, 60), (1800, 600),
                            (1700, 60), (1700, 600), (1750, 60), (1750, 600)]
    assert found.held_qps == 1700 and found.resolution() == pytest.approx(50 / 1700)
    assert not found.bursts[0].passed and [r.step for r in found.bursts] == [1, 2, 3, 4, 5]
    # every step recorded, each after its own `before` mark
    assert seen == [(w, k) for k in [kind for kind, _ in found.order]
                    for w in ("before", "after")]
    assert [s["kind"] for s in found.steps()] == [k for k, _ in found.order]


def test_a_failing_probe_spares_the_full_burst() -> None:
    server = TiringServer(capacity=1000, sustained=1000)  # short and long hold the same
    found = stairs.held_burst(server, GEN, 2000, 600, 60, 10)
    # 1,600 and 1,280 fail their probes (no full burst there), 1,024 too, 819 holds both
    assert _ran(server)[:5] == [(2000, 600), (1600, 60), (1280, 60), (1024, 60), (819, 60)]
    assert _ran(server)[5] == (819, 600)
    held = found.held_qps
    assert held is not None and held <= 1000
    assert found.resolution() is not None and found.resolution() <= 0.05  # type: ignore[operator]


def test_the_search_finding_nothing_keeps_the_failed_burst() -> None:
    server = TiringServer(capacity=2000, sustained=10)
    found = stairs.held_burst(server, GEN, 2000, 600, 60, 3, floor=100)
    assert found.held_qps is None and found.resolution() is None
    assert [r.target_qps for r in found.bursts] == [2000, 1600, 1280, 1024]
    assert not any(r.passed for r in found.bursts)
    # nothing under the floor is offered
    assert len(stairs.held_burst(server, GEN, 110, 600, 60, 5, floor=100).bursts) == 1
    # BURST_SEARCH_STEPS=0: the stair capacity's burst only
    assert len(stairs.held_burst(server, GEN, 2000, 600, 60, 0).order) == 1
    with pytest.raises(LabError, match="descent factor"):
        stairs.held_burst(server, GEN, 2000, 600, 60, 3, factor=1.0)
