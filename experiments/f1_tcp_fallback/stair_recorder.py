"""The stair as the tcp-fallback cells run it: the coarse pass and the fine pass around the
knee (`coarse_and_fine`), each judged step written to `stair.csv` with the server's and the
client's counter deltas, CPU and core shares (`StepRecorder`), and the stair's figures
(`stair_figures`). The columns are listed in the docstring of `fallback.py` in this package.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from dnslab.counters import deltas, mean_cores, mean_cpu
from dnslab.experiment import Cell
from dnslab.lab import Lab
from experiments.common import write_rows
from experiments.f1_tcp_fallback import stairs
from experiments.generators.dnsload import DnsloadRunner

COUNTERS = ["udp_rcvbuf_errors", "udp_in_errors", "listen_overflows", "listen_drops"]
# counters read in the client's namespace, per step: SYNs it had to send again (each one a
# connection that waited 1 s more) and its retransmitted segments
CLIENT_COUNTERS = {"client_syn_retrans": "syn_retrans", "client_retrans_segs": "retrans_segs"}
STAIR_COLUMNS = [*stairs.CSV_COLUMNS, "truncated_per_s", "throttled", "net_errors", *COUNTERS,
                 "server_cpu_pct", "t_start", "t_end",
                 "phase", "req_q_full_drops", *CLIENT_COUNTERS, "generator_cpu_pct",
                 "server_cores_busy_pct", "generator_cores_busy_pct", "server_cpus",
                 "generator_cpus", "note"]


def _counters(lab: Lab, node: str) -> dict[str, int]:
    return lab.sample(node)


def step_note(row: dict[str, Any], max_tat_ms: float) -> str:
    """What a step's TCP counters say about its worst TAT: a SYN the client had to send
    again waited at least 1 s (the kernel's first SYN retransmission timer), so a step that
    fails on worst TAT with retried SYNs and a p99 under the limit failed on them."""
    retried = int(row.get("client_syn_retrans") or 0)
    if not retried:
        return ""
    drops = int(row.get("listen_overflows") or 0) + int(row.get("req_q_full_drops") or 0)
    note = (f"{retried} SYN retransmission(s) by the client, {drops} listen/SYN-queue "
            "drop(s) at the server")
    if (float(row["max_ms"]) > max_tat_ms >= float(row["p99_ms"])
            and float(row["max_ms"]) >= 1000.0):
        note = f"worst TAT {float(row['max_ms']):.0f} ms is a retried SYN: " + note
    return note


class StepRecorder:
    """Turns each judged step into a `stair.csv` row with the server's (`node`) and the
    client's (`client`, the generator's node) counter deltas, the generator's CPU time and
    the busy share of each side's cores."""

    def __init__(self, cell: Cell, lab: Lab, node: str, client: str, name: str = "stair",
                 runner: DnsloadRunner | None = None,
                 max_tat_ms: float = stairs.SEED_MAX_TAT_MS):
        self.cell, self.lab, self.node, self.client, self.name = cell, lab, node, client, name
        self.runner, self.max_tat_ms = runner, max_tat_ms
        self.phase = "coarse"
        assert cell.monitors is not None
        self.t0 = cell.monitors.t0
        self.rows: list[dict[str, Any]] = []
        self.raw_dir = cell.path / "dnsload"
        self.raw_dir.mkdir(exist_ok=True)
        self.server_cpus = lab.state.nodes[node].cpu_set or "any"
        self.generator_cpus = lab.state.nodes[client].cpu_set or "any"
        self.mark()

    def mark(self) -> None:
        self.before = _counters(self.lab, self.node)
        self.client_before = _counters(self.lab, self.client)
        self.started = time.monotonic() - self.t0

    def __call__(self, result: stairs.StepResult) -> None:
        after = _counters(self.lab, self.node)
        client_after = _counters(self.lab, self.client)
        ended = time.monotonic() - self.t0
        m = result.measure
        row = result.row()
        row.update(deltas(self.before, after, [*COUNTERS, "req_q_full_drops"]))
        client = deltas(self.client_before, client_after, list(CLIENT_COUNTERS.values()))
        row.update({column: client[key] for column, key in CLIENT_COUNTERS.items()})
        # each side's cores as its host counted them (one file when the lab is on one host)
        server_cores, generator_cores = (self.cell.cores_csv(self.node),
                                         self.cell.cores_csv(self.client))
        row.update({
            "truncated_per_s": round(m.truncated / m.seconds, 1) if m.seconds else None,
            "throttled": m.throttled, "net_errors": m.net_errors,
            "server_cpu_pct": mean_cpu(self.cell.path / "monitor" / f"{self.node}.csv",
                                        self.started, ended),
            "t_start": round(self.started, 3), "t_end": round(ended, 3),
            "phase": self.phase,
            "generator_cpu_pct": self.runner.cpu_pct if self.runner else None,
            "server_cores_busy_pct": mean_cores(server_cores, self.server_cpus, self.started,
                                                 ended),
            "generator_cores_busy_pct": mean_cores(generator_cores, self.generator_cpus,
                                                    self.started, ended),
            "server_cpus": self.server_cpus, "generator_cpus": self.generator_cpus,
        })
        row["note"] = step_note(row, self.max_tat_ms)
        self.rows.append(row)
        (self.raw_dir / f"{self.name}-{result.step:02d}.jsonl").write_text(result.raw)
        write_rows(self.cell.path / f"{self.name}.csv", STAIR_COLUMNS, self.rows)
        verdict = "pass" if result.passed else "FAIL " + "; ".join(result.reasons)
        print(f"  {self.cell.cell_id} {self.name} {self.phase} step {result.step}: "
              f"{result.target_qps:.0f} qps offered {m.offered_qps:.0f} answered "
              f"{m.answered_qps:.0f} tcp {result.tcp_share:.1%} p99 {m.p99_ms:.1f} ms "
              f"max {m.max_ms:.0f} ms: {verdict}"
              + (f" ({row['note']})" if row["note"] else ""), file=sys.stderr)
        self.mark()


def stair_figures(results: list[stairs.StepResult], rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The figures of a stair: capacity, and the measurements at the capacity step."""
    cap = stairs.capacity(results)
    at = next((i for i, r in enumerate(results) if r.passed and r.target_qps == cap), None)
    ref = at if at is not None else 0
    queries_all = sum(r.measure.sent + r.measure.tcp for r in results)
    figures: dict[str, Any] = {
        "capacity_qps": cap,
        "capacity_step": results[at].step if at is not None else None,
        "steps_run": len(results),
        "tcp_share": round(results[ref].tcp_share, 4) if results else None,
        "tcp_share_overall": round(sum(r.measure.tcp for r in results) / queries_all, 4)
        if queries_all else None,
        "truncated_per_s": rows[ref]["truncated_per_s"] if rows else None,
        "max_latency_ms_at_capacity": results[at].measure.max_ms if at is not None else None,
        "p99_ms_at_capacity": results[at].measure.p99_ms if at is not None else None,
        "answered_qps_at_capacity": round(results[at].measure.answered_qps, 1)
        if at is not None else None,
        "server_cpu_pct_at_capacity": rows[at]["server_cpu_pct"] if at is not None else None,
        "max_ms_by_qps": {f"{r.target_qps:g}": r.measure.max_ms for r in results},
        "p99_ms_by_qps": {f"{r.target_qps:g}": r.measure.p99_ms for r in results},
    }
    above = [r for r in results if not r.passed and (cap is None or r.target_qps > cap)]
    figures["first_fail_qps"] = above[0].target_qps if above else None
    figures["first_fail_reasons"] = "; ".join(above[0].reasons) if above else None
    for key in [*COUNTERS, "req_q_full_drops", *CLIENT_COUNTERS]:
        figures[key] = sum(int(row.get(key) or 0) for row in rows)
    return figures


# --- one cell -------------------------------------------------------------------------------


def criteria(params: dict[str, Any]) -> stairs.Criteria:
    return stairs.Criteria(max_error_rate=float(params["max_error_rate"]),
                         max_tat_ms=float(params["max_tat_ms"]), tat_stat=params["tat_stat"],
                         warmup_s=float(params["warmup_s"]))


def coarse_and_fine(runner: stairs.Runner, gen: stairs.LoadGenerator, recorder: StepRecorder,
                    params: dict[str, Any], rates: list[float]) -> list[stairs.StepResult]:
    """The stair as the seed ran it, made finer around the knee: the coarse rates (ending
    after STOP_AFTER_FAILURES failing steps in a row); when no coarse step passed (a server
    slower than the first step), a descent from the first rate in steps of DESCENT_FACTOR
    until a step passes, down to STAIR_FLOOR, and DESCENT_BELOW more steps down the same grid
    (phase `below`: where a burst search may later find the capacity, both record sets' stairs
    then have steps for F1.latency-grows to compare); then a fine pass from the capacity up
    to the first failing rate, in steps of at most FINE_SHARE of that capacity (FINE_STEP_S
    each). Step numbers run on; `stair.csv`'s `phase` says which pass."""
    stop_after = int(params["stop_after_failures"]) or None
    recorder.phase = "coarse"
    results = stairs.steps(runner, gen, rates, float(params["step_s"]), criteria(params),
                         stop_after_failures=stop_after, on_step=recorder)
    floor = float(params.get("stair_floor") or 0)
    if stairs.capacity(results) is None and results and floor > 0:
        recorder.phase = "descent"
        results += stairs.descend(runner, gen, min(r.target_qps for r in results), floor,
                                  float(params["step_s"]), criteria(params), on_step=recorder,
                                  first_step=len(results) + 1,
                                  factor=float(params.get("descent_factor") or 0.8))
        passed = stairs.capacity(results)
        if passed is not None and int(params.get("descent_below") or 0) > 0:
            recorder.phase = "below"
            results += stairs.below(runner, gen, passed, int(params["descent_below"]), floor,
                                    float(params["step_s"]), criteria(params),
                                    on_step=recorder, first_step=len(results) + 1,
                                    factor=float(params.get("descent_factor") or 0.8))
    fine = stairs.fine_rates(results, float(params["fine_share"]))
    if fine:
        recorder.phase = "fine"
        results += stairs.steps(runner, gen, fine,
                              float(params["fine_step_s"] or params["step_s"]),
                              criteria(params), stop_after_failures=stop_after,
                              on_step=recorder, first_step=len(results) + 1)
    return results
