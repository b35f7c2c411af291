"""F1 synthetic runs: stairs per server, record set and tuning, generator-ceiling cells and
answer sizes, shaped like the seed (or not) by their parameters.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from analysis.synthetic import CellData, write_run
from experiments.f1_tcp_fallback.fallback_cache import CACHE_COLUMNS

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
               fail_drops: int = 0, rcvbuf: dict[float, int] | None = None,
               foreign: float = 0.0) -> list[list[Any]]:
    """A stair from `start` in `step`s that passes up to `capacity` and ends after two
    failing steps (or at `stop`); worst TAT grows towards 1 s at the capacity, p99 is a third
    of it unless `p99_ms` gives it. `first`: rates run before it, in that order (a coarse
    pass above the capacity before a descent, as a real stair runs: rows in run order, not by
    rate). `cpu`: the server's cores' busy % at the capacity (in proportion to the rate below
    it, at the capacity's above; None: not recorded); `fail_drops`: SYNs dropped at LISTEN
    (and listen-queue overflows) in each failing step, `rcvbuf`: UDP receive-buffer errors
    per rate; `foreign`: points of the server's cores other processes kept busy (a shared
    machine: the cores' busy % is then more than the server's own CPU)."""
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
                     "" if busy is None else round(min(busy + foreign, 100.0), 1),
                     "" if cpu is None else "0"])
        return passed

    for rate in first:
        step_row(rate)
    rate, fails = start, 0
    while fails < 2 and (stop is None or rate <= stop):
        fails = 0 if step_row(rate) else fails + 1
        rate += step
    return rows


def _burst_row(step: int, rate: float, passed: bool, cpu: float | None, foreign: float,
               tcp_share: float, drops: int, max_ms: float | None = None) -> list[Any]:
    busy = "" if cpu is None else cpu
    cores_busy = "" if cpu is None else min(cpu + foreign, 100.0)
    worst = max_ms if max_ms is not None else (400.0 if passed else 3500.0)
    return [step, rate, rate, rate * (1 if passed else 0.97), int(passed), worst, 120.0,
            tcp_share, drops, "" if passed else "max TAT", 0, 0, drops, 0, 0, busy, cores_busy,
            "" if cpu is None else "0"]


def fallback_cell(server: str, records: str, tuning: str, capacity: float, *,
                  ceiling: float | None = 30000, figures: dict[str, Any] | None = None,
                  burst: bool | None = True, function: tuple[int, int, bool] | None = None,
                  cpu: float | None = 40.0, burst_drops: int = 0, histograms: bool = False,
                  search: list[tuple[str, float, bool]] | None = None,
                  other_pct: float | None = None, **stair: Any) -> CellData:
    """A stair cell; `burst`: whether the capacity held the seed's 600 s burst (None: no
    burst ran, as at SCALE=ci; its `burst.csv` row has the server's `cpu` busy % and
    `burst_drops` SYNs dropped); `search`: the steps of the search below a failed burst
    (`burst` is then False), each (kind "probe"|"burst", qps, passed), as `fallback.py`
    records them (`burst_qps` the highest full burst that held; the server's CPU there in
    proportion to the rate); `function`: (changes, synced, load passed) of the function
    test run at the load that held (the stair capacity without a search), as `fallback.py`
    records it (None: none ran); `other_pct`: what other processes used while the cell ran
    (% of a core, `monitor/cores.csv`; None: not recorded); `histograms`: each step keeps
    dnsload's raw output with its latency histogram (`dnsload/stair-<step>.jsonl`), as the
    procedure does."""
    figs = dict(figures or {})
    if ceiling is not None:
        figs["generator_ceiling_qps"] = ceiling
    rows = stair_rows(capacity, cpu=cpu, **stair)
    files = {"stair.csv": (STAIR_COLUMNS, rows)}
    foreign, tcp_share = stair.get("foreign", 0.0), stair.get("tcp_share", 0.23)
    load = capacity
    if search is not None:
        burst = False
    if burst is not None:
        figs.update({"burst_qps": capacity, "burst_passed": burst,
                     "burst_max_ms": 400.0 if burst else 3500.0,
                     "burst_stair_qps": capacity, "burst_stair_passed": burst})
        bursts = [_burst_row(1, capacity, burst, cpu, foreign, tcp_share, burst_drops)]
        steps: list[dict[str, Any]] = [{"kind": "burst", "qps": capacity, "passed": burst,
                                        "seconds": 600.0}]
        probes = []
        for kind, rate, passed in search or []:
            steps.append({"kind": kind, "qps": rate, "passed": passed,
                          "seconds": 600.0 if kind == "burst" else 120.0,
                          "max_ms": 400.0 if passed else 3500.0})
            share = None if cpu is None else cpu * rate / capacity
            made = bursts if kind == "burst" else probes
            made.append(_burst_row(len(made) + 1, rate, passed, share, foreign, tcp_share, 0))
        held = [st["qps"] for st in steps if st["kind"] == "burst" and st["passed"]]
        if held:
            load = max(held)
            figs.update({"burst_qps": load, "burst_passed": True, "burst_max_ms": 400.0})
        elif search is not None:
            load = None  # no function test without a load that held (runs before the
            # search ran it at a capacity whose burst failed: `function` without `search`)
        if search is not None:
            figs.update({"burst_search": steps, "burst_probes": len(probes)})
        files["burst.csv"] = (STAIR_COLUMNS, bursts)
        if probes:
            files["burst-probe.csv"] = (STAIR_COLUMNS, probes)
    if other_pct is not None:
        files["monitor/cores.csv"] = (["t", "other_pct"],
                                      [[float(t), other_pct] for t in range(0, 60, 5)])
    if function is not None and load is not None:
        changes, synced, passed = function
        figs.update({"function_qps": load, "function_passed": passed,
                     "function_max_ms": 300.0 if passed else 1060.0,
                     "function_changes": changes, "function_synced": synced,
                     "function_sync_max_s": 1.5})
    elif function is not None:
        figs["function_skipped"] = (f"the {capacity:,.0f} qps burst failed and the search "
                                    "below it found no load that held")
    raw = ({f"dnsload/stair-{row[0]:02d}.jsonl": dnsload_output(
        row[1], capacity, worst_ms=row[5], tcp_share=row[7], seed=row[0]) for row in rows}
        if histograms else {})
    return CellData({"server": server, "records": records, "tuning": tuning}, figs,
                    csv=files, files=raw)


def dnsload_output(rate: float, capacity: float, *, worst_ms: float, tcp_share: float,
                   seconds: float = 55.0, seed: int = 1) -> str:
    """What `dnsload run` prints for a step (its `steady` line, with `lat_hist_ms`): UDP
    answers in about a millisecond, TCP retries a round trip and a handshake later, both
    slower as the rate nears the capacity; past 900 ms worst, the slowest are retried SYNs
    (1 s, and 1 s + 2 s, as the seed's 3,241 ms)."""
    rng = np.random.default_rng(seed)
    load = min(rate / capacity, 1.5)
    samples = 20000
    udp = rng.lognormal(np.log(0.3 + 2 * load), 0.5, int(samples * (1 - tcp_share)))
    tcp = rng.lognormal(np.log(1.0 + 6 * load), 0.6, int(samples * tcp_share))
    latencies = np.concatenate([udp, tcp])
    if worst_ms >= 900:
        retried = max(int(samples * 0.0005), 2)
        syn = np.where(rng.random(retried) < 0.7, 1000.0, 3000.0) + rng.exponential(30, retried)
        latencies = np.concatenate([latencies, syn])
    latencies = np.minimum(latencies, worst_ms)
    latencies[np.argmax(latencies)] = worst_ms
    edges = np.geomspace(0.001, 10_000.0, 64 * 24)  # ~1.6 % wide, as dnsload's buckets
    counts, _ = np.histogram(latencies, bins=np.append(0.0, edges))
    answered = int(rate * seconds)
    scale = answered / len(latencies)
    buckets = [[round(float(edge), 3), max(int(round(n * scale)), 1)]
               for edge, n in zip(edges, counts, strict=True) if n]
    quantiles = {name: round(float(np.quantile(latencies, q)), 3)
                 for name, q in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99))}
    steady = {"type": "steady", "seconds": seconds, "offered_qps": rate,
              "answered_qps": rate, "sent": answered, "answered": answered, "timeouts": 0,
              "lat_ms": {**quantiles, "max": worst_ms}, "lat_hist_ms": buckets}
    return json.dumps({"type": "start", "rate": rate}) + "\n" + json.dumps(steady) + "\n"


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




def full_scale_fallback_run(root: Path) -> Path:
    """tcp-fallback at its full scale's shape: BIND 9.16 and today's BIND x record sets x
    tunings, each stair step with dnsload's raw output and histogram, and the generator's
    ceiling per record set. bind916's first stair runs a coarse pass above its capacity, then
    steps from 2,000."""
    cells = []
    for server, (before, after, tuned) in {"bind916": (8000, 4000, 6000),
                                           "bind": (9000, 8600, 9400)}.items():
        version = {"server_version": "9.16.50" if server == "bind916" else "9.18.49"}
        sizes = answer_sizes(23069, 230) if server == "bind916" else answer_sizes(9000, 0)
        slow = ({"worst_ms": {float(r): 3241.0 for r in range(4200, 10001, 200)}}
                if server == "bind916" else {})
        cells += [fallback_cell(server, "before", "untuned", before, figures=version,
                                histograms=True,
                                first=(12000.0, 16000.0) if server == "bind916" else ()),
                  fallback_cell(server, "before", "tuned", before * 1.1, figures=version,
                                histograms=True),
                  fallback_cell(server, "after", "untuned", after, figures={**version, **sizes},
                                histograms=True, **slow),
                  fallback_cell(server, "after", "tuned", tuned, figures={**version, **sizes},
                                histograms=True)]
    cells += [ceiling_cell("before", 30000), ceiling_cell("after", 30000)]
    return write_run(root, "tcp-fallback", cells,
                     params={"servers": ["bind916", "bind"], "seed_servers":
                             FALLBACK_SEED_SERVERS, "truncating": 0.30, "max_tat_ms": 1000,
                             "timeout_s": 5, "step_s": 60, "warmup_s": 5},
                     topology={"name": "mobile", "file": "mobile.clab.yml", "nodes": {}})


def full_scale_cache_run(root: Path) -> Path:
    """tcp-fallback-cache at its full scale's shape: the amplification over twelve record
    counts around a 1,000-record cache, uniform and zipf lookups."""
    counts = [250, 500, 900, 950, 1000, 1050, 1100, 1200, 1500, 2000, 3000, 4000]
    cells = []
    for dist, steep in (("uniform", 1.0), ("zipf", 0.4)):
        rows = [[dist, n, 1000, 1 if n < 950 else 2 if n <= 1050 else 3, 3_600_000, 0, 0, 0.0,
                 0.0, round(1 + max(0.0, n / 1000 - 0.95) * steep * 40, 3), 0.9]
                for n in counts]
        onset = next(n for n, row in zip(counts, rows, strict=True) if row[9] > 1.05)
        cells.append(CellData({"dist": dist, "cache_size": 1000, "record_counts": counts},
                              {"cache_size": 1000, "onset_records": onset,
                               "max_amplification": max(row[9] for row in rows)},
                              csv={"cache.csv": (CACHE_COLUMNS, rows)}))
    return write_run(root, "tcp-fallback-cache", cells,
                     params={"cache_size": 1000, "record_counts": counts,
                             "dists": ["uniform", "zipf"]})


def full_scale_runs() -> list[tuple[str, Callable[[Path], Path]]]:
    """The package's runs at their full scale's shape, for the figure layout tests."""
    return [("tcp-fallback: BIND 9.16 and 9.18 x record sets x tunings", full_scale_fallback_run),
            ("tcp-fallback-cache: 12 record counts, uniform and zipf", full_scale_cache_run)]


def seed_like_runs() -> dict[str, Callable[[Path], Path]]:
    """{experiment: a run where every claim it names holds}: the altered-data test removes
    each claim's effect from it and expects nothing reproduced. Built as the claim cases'
    'present' runs (cases.py beside this module), the untuned failing step dropping 40 SYNs
    (d008's dropped 73): the seed gives no count, and 5 against none is too few to tell the
    tuned rate below a tenth of it (F1.queue-symptoms: inconclusive)."""
    from experiments.f1_tcp_fallback import cases

    return {"tcp-fallback": cases.f1(function=(3, 3, True), after_kw={"fail_drops": 40})}


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
