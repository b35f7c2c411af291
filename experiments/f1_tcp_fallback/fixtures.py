"""F1 synthetic runs: stairs per server, record set and tuning, generator-ceiling cells and
answer sizes, shaped like the seed (or not) by their parameters.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import yaml

from analysis.synthetic import CellData, write_run

STAIR_COLUMNS = ["step", "target_qps", "offered_qps", "answered_qps", "passed", "max_ms",
                 "p99_ms", "tcp_share", "listen_overflows", "reasons", "udp_rcvbuf_errors",
                 "udp_in_errors", "listen_drops", "client_syn_retrans", "req_q_full_drops",
                 "server_cpu_pct", "server_cores_busy_pct", "server_cpus"]


def stair_rows(capacity: float, *, start: float = 2000, step: float = 200,
               worst_ms: dict[float, float] | None = None, tcp_share: float = 0.23,
               overflows: dict[float, int] | None = None,
               syn_retrans: dict[float, int] | None = None,
               stop: float | None = None, first: tuple[float, ...] = (),
               p99_ms: dict[float, float] | None = None, cpu: float | None = 40.0,
               fail_drops: int = 0, rcvbuf: dict[float, int] | None = None
               ) -> list[list[Any]]:
    """A stair from `start` in `step`s that passes up to `capacity` and ends after two
    failing steps (or at `stop`); worst TAT grows towards 1 s at the capacity, p99 is a third
    of it unless `p99_ms` gives it. `first`: rates run before it, in that order (a coarse
    pass above the capacity before a descent, as a real stair runs: rows in run order, not by
    rate). `cpu`: the server's cores' busy % at the capacity (in proportion to the rate below
    it, at the capacity's above; None: not recorded); `fail_drops`: SYNs dropped at LISTEN
    (and listen-queue overflows) in each failing step, `rcvbuf`: UDP receive-buffer errors
    per rate."""
    rows = []

    def step_row(rate: float) -> bool:
        passed = rate <= capacity
        worst = (worst_ms or {}).get(rate, 50 + 600 * rate / capacity if passed else 1500.0)
        p99 = (p99_ms or {}).get(rate, worst / 3)
        busy = None if cpu is None else min(cpu * min(rate / capacity, 1.0), 100.0)
        drops = 0 if passed else fail_drops
        rows.append([len(rows) + 1, rate, rate, rate * (1 if passed else 0.97), int(passed),
                     round(worst, 1), round(p99, 1), tcp_share,
                     (overflows or {}).get(rate, drops), "" if passed else "max TAT",
                     (rcvbuf or {}).get(rate, 0), 0, drops,
                     (syn_retrans or {}).get(rate, 0), 0,
                     "" if busy is None else round(busy, 1),
                     "" if busy is None else round(busy, 1), "" if cpu is None else "0"])
        return passed

    for rate in first:
        step_row(rate)
    rate, fails = start, 0
    while fails < 2 and (stop is None or rate <= stop):
        fails = 0 if step_row(rate) else fails + 1
        rate += step
    return rows


def fallback_cell(server: str, records: str, tuning: str, capacity: float, *,
                  ceiling: float | None = 30000, figures: dict[str, Any] | None = None,
                  burst: bool | None = True, function: tuple[int, int, bool] | None = None,
                  cpu: float | None = 40.0, burst_drops: int = 0, **stair: Any) -> CellData:
    """A stair cell; `burst`: whether the capacity held the seed's 600 s burst (None: no
    burst ran, as at SCALE=ci; its `burst.csv` row has the server's `cpu` busy % and
    `burst_drops` SYNs dropped); `function`: (changes, synced, load passed) of the function
    test run at the capacity, as `fallback.py` records it (None: none ran)."""
    figs = dict(figures or {})
    if ceiling is not None:
        figs["generator_ceiling_qps"] = ceiling
    files = {"stair.csv": (STAIR_COLUMNS, stair_rows(capacity, cpu=cpu, **stair))}
    if burst is not None:
        figs.update({"burst_qps": capacity, "burst_passed": burst,
                     "burst_max_ms": 400.0 if burst else 3500.0})
        busy = "" if cpu is None else cpu
        files["burst.csv"] = (STAIR_COLUMNS, [[
            1, capacity, capacity, capacity * (1 if burst else 0.97), int(burst),
            400.0 if burst else 3500.0, 120.0, stair.get("tcp_share", 0.23), burst_drops,
            "" if burst else "max TAT", 0, 0, burst_drops, 0, 0, busy, busy,
            "" if cpu is None else "0"]])
    if function is not None:
        changes, synced, passed = function
        figs.update({"function_qps": capacity, "function_passed": passed,
                     "function_max_ms": 300.0 if passed else 1060.0,
                     "function_changes": changes, "function_synced": synced,
                     "function_sync_max_s": 1.5})
    return CellData({"server": server, "records": records, "tuning": tuning}, figs,
                    csv=files)


def ceiling_cell(records: str, capacity: float) -> CellData:
    """tcp-fallback's `server=ceiling` cell: the generator against `dnsload serve` on the
    run's placement, a stair that breaks at the generator's ceiling."""
    return CellData({"server": "ceiling", "records": records, "responder": "dnsload serve"},
                    {}, csv={"stair.csv": (STAIR_COLUMNS, stair_rows(
                        capacity, start=capacity / 4, step=capacity / 40))})


def answer_sizes(sent: int, extra: int, full: int = 23069, full_extra: int = 230
                 ) -> dict[str, Any]:
    return {"tac_tcp_size": sent, "tac_tcp_additional": extra + 1, "tac_model_size": full,
            "tac_model_additional": full_extra + 1, "tac_tcp_answer": 93, "tac_model_answer": 93}


FALLBACK_SEED_SERVERS = yaml.safe_load(
    (Path(__file__).resolve().parent / "tcp-fallback.yaml").read_text()
)["params"]["seed_servers"]


def fallback_run(root: Path, cells: list[CellData], **kwargs: Any) -> Path:
    return write_run(root, "tcp-fallback", cells,
                     params={"servers": sorted({str(c.params["server"]) for c in cells}),
                             "seed_servers": FALLBACK_SEED_SERVERS, "truncating": 0.30},
                     topology={"name": "mobile", "file": "mobile.clab.yml", "nodes": {}},
                     **kwargs)


def seed_like_fallback_cells(before: float = 8000, after: float = 4000, tuned: float = 6000,
                             **kwargs: Any) -> list[CellData]:
    """BIND 9.16 as the seed's BIND: capacity halves, tuning gives 1.5x, latency grows."""
    after_worst = {r: 3241.0 for r in np.arange(2000, 10001, 200)}
    return [
        fallback_cell("bind916", "before", "untuned", before, **kwargs),
        fallback_cell("bind916", "after", "untuned", after, worst_ms=after_worst,
                      figures=answer_sizes(23069, 230), tcp_share=0.228, **kwargs),
        fallback_cell("bind916", "after", "tuned", tuned, **kwargs),
    ]




def like_54c4(root: Path) -> Path:
    """A run shaped like the full `tcp-fallback` run 20261125T204012Z-54c4 (BIND 9.16) as
    NOTES.md describes it: the seed's coarse steps failing, a descent and a fine pass to the
    stair capacities 1,600 / 2,000 (before, untuned / tuned) and 1,075 / 1,840 (after) at 72 /
    87 / 65 / 96 % CPU, every 600 s burst failed, the untuned stairs' failing steps ending on a
    retried SYN (worst TAT 1,049-1,096 ms), 24 of 24 function-test changes synced with three of
    the four loads failing, answers 17,907 -> 24,554 B (model 14,616 -> 22,788 B), 23.1 % over
    TCP, the generator's ceiling 21,417 qps. What the notes do not give is chosen and said:
    p99 TAT 5 ms where a step passed, 300 ms where it failed; two SYNs dropped in each untuned
    failing step, none in the tuned stairs' passing steps; the tuned `before` function-test
    load the one that passed."""
    def cell(records: str, tuning: str, capacity: float, step: float, first: tuple[float, ...],
             cpu: float, burst_ms: float, passed_function: bool, worst_pass: float,
             worst_fail: float, drops: int, sizes: dict[str, Any]) -> CellData:
        start = capacity - step
        rates = [*first, *np.arange(start, capacity + 2.5 * step, step)]
        worst = {float(r): (worst_pass if r <= capacity else worst_fail) for r in rates}
        p99 = {float(r): (5.0 if r <= capacity else 300.0) for r in rates}
        made = fallback_cell("bind916", records, tuning, capacity, ceiling=21417,
                             figures=sizes, burst=False, cpu=cpu, start=start, step=step,
                             first=first, worst_ms=worst, p99_ms=p99, fail_drops=drops,
                             tcp_share=0.231, function=(6, 6, passed_function))
        made.figures["burst_max_ms"] = burst_ms
        return made

    before = answer_sizes(17907, 172, full=14616, full_extra=172)
    after = answer_sizes(24554, 218, full=22788, full_extra=218)
    cells = [
        cell("before", "untuned", 1600, 80, (2000.0, 3000.0), 72.0, 1193.0, False, 43.0,
             1096.0, 2, before),
        cell("before", "tuned", 2000, 100, (3000.0,), 87.0, 5000.0, True, 60.0, 5000.0, 0,
             before),
        cell("after", "untuned", 1075, 51, (2000.0, 3000.0, 1600.0, 1280.0), 65.0, 1049.0,
             False, 45.0, 1096.0, 2, after),
        cell("after", "tuned", 1840, 92, (2000.0, 3000.0), 96.0, 3500.0, False, 70.0, 5000.0,
             0, after),
    ]
    return fallback_run(root, cells, run_id="20261125T204012Z-54c4")
