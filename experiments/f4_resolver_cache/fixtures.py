"""F4 synthetic runs: cold and warm passes at several -q, beside dnsperf's ceiling."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from analysis.synthetic import CellData, write_run

TRIAL_COLUMNS = ["trial", "qps", "sent", "completed", "lost"]
# the experiment file's emulated internet: per tier, a round trip to its servers takes
# delay_ms more
WAN = {"root": {"delay_ms": 20, "jitter_ms": 5}, "tld": {"delay_ms": 30, "jitter_ms": 8},
       "sld": {"delay_ms": 40, "jitter_ms": 15, "loss_pct": 0.5},
       "sld-slow": {"delay_ms": 400, "jitter_ms": 200, "loss_pct": 10},
       "sld-dead": {"loss_pct": 100}, "sld-broken": {"delay_ms": 250, "jitter_ms": 50}}


def resolver_ceiling(generator_max: float, qs: tuple[int, ...] = (100, 200, 300)) -> CellData:
    """resolver-cache's `phase=ceiling` cell: dnsperf's one-pass ceiling `generator_max` at
    every -q (against the canned responder)."""
    return CellData({"phase": "ceiling", "responder": "dnsload serve", "outstanding": list(qs)},
                    {f"ceiling_qps_q{q}": generator_max for q in qs})


def resolver_run(root: Path, qps: dict[tuple[str, int], float], *, cold_latency_ms: float = 300,
                 tail: float = 0.015, sent: int = 10000, generator_cpu: float | None = None,
                 trials: dict[tuple[str, int], list[float]] | None = None,
                 generator_max: float | None = 1e6,
                 ramps: dict[str, tuple[float, float]] | None = None,
                 slowest_ms: float | dict[tuple[str, int], float] | None = 4900.0,
                 histograms: bool = False,
                 healthy_ms: dict[str, float] | None = None,
                 failing_s: dict[str, float] | None = None, split: bool = True,
                 timeout_s: float = 5.0, **kwargs: Any) -> Path:
    """A resolver-cache run with one cell per (cache, -q) answering `qps`; `generator_max`:
    dnsperf's ceiling at every -q in the run's `phase=ceiling` cell (None: no ceiling cell,
    as in runs before it existed); `ramps`: a resperf ramp cell per cache state, {cache:
    (the ramp's top, the resolver's capacity)}: responses follow the offered rate up to the
    capacity and stay there. Each pass runs `sent / qps` seconds and its slowest answer takes
    `slowest_ms` (the seed's: 4.8-5.0 s; a {(cache, -q): ms} for some passes; None: not
    recorded). `histograms`: each trial's pass keeps `trials.csv`'s row and its
    answer-latency histogram (`latency-<trial>.csv`, as dnsperf -v gives the procedure), over
    the experiment file's emulated WAN. The waiting split by response code (`split`; False:
    not recorded, as before dnsperf -v kept it): the healthy names' mean latency per cache
    state (`healthy_ms`, default cold 250 ms, warm 0.2 ms: the cache answers from memory)
    and each failing name's slot seconds (`failing_s`, default 4.9 s cold and warm: the
    seed's SERVFAILs, the tail the same either way)."""
    healthy_ms = {"cold": 250.0, "warm": 0.2, **(healthy_ms or {})}
    failing_s = {"cold": 4.9, "warm": 4.9, **(failing_s or {})}
    cells = []
    if generator_max is not None:
        cells.append(resolver_ceiling(generator_max, tuple(sorted({q for _, q in qps}))))
    for (cache, q), value in qps.items():
        bad = round(tail * sent)
        figures: dict[str, Any] = {
            "qps": value, "sent": sent, "lost": bad // 3, "rcode_SERVFAIL": bad - bad // 3,
            "avg_latency_ms": cold_latency_ms if cache == "cold" else 40.0}
        if generator_cpu is not None:
            figures["generator_cpu_pct"] = generator_cpu
        if split:
            healthy = sent - bad
            figures.update({"healthy_answers": healthy, "healthy_mean_ms": healthy_ms[cache],
                            "healthy_slot_s": round(healthy * healthy_ms[cache] / 1000, 3),
                            "tail_slot_s": round(bad * failing_s[cache], 3)})
        slowest = (slowest_ms.get((cache, q), 4900.0) if isinstance(slowest_ms, dict)
                   else slowest_ms)
        if slowest is not None and value > 0:
            figures.update({"run_time_s": round(sent / value, 3), "max_latency_ms": slowest})
        if trials and (cache, q) in trials:
            figures["qps_trials"] = trials[(cache, q)]
        csv: dict[str, tuple[list[str], list[list[Any]]]] = {}
        if histograms:
            rng = np.random.default_rng(q + (cache == "warm"))
            rows = []
            for trial, trial_qps in enumerate((trials or {}).get((cache, q), [value]), 1):
                lost = round(0.003 * sent)  # the dead zones' names
                rows.append([trial, trial_qps, sent, sent - lost, lost])
                csv[f"latency-{trial}.csv"] = resolver_histogram(cache, sent - lost, rng)
            csv["trials.csv"] = (TRIAL_COLUMNS, rows)
        cells.append(CellData({"cache": cache, "outstanding": q}, figures, csv=csv))
    for cache, (top, capacity) in (ramps or {}).items():
        rows = [[t / 2, top * t / 60, min(top * t / 60, capacity), 0.01 * top * t / 60]
                for t in range(1, 61)]
        cells.append(CellData({"cache": cache, "tool": "resperf"},
                              {"peak_responses_per_s": min(top, capacity)},
                              csv={"resperf.csv": (["time_s", "target_qps", "responses_per_s",
                                                    "failures_per_s"], rows)}))
    return write_run(root, "resolver-cache", cells,
                     params={"names": 10000, "timeout_s": timeout_s, "wan": WAN}, **kwargs)


def resolver_histogram(cache: str, answers: int, rng: np.random.Generator
                       ) -> tuple[list[str], list[list[Any]]]:
    """One pass's answer latencies as dnsperf -v's histogram (upper edges in s) over the
    emulated WAN: cold, a name waits for its second-level server's round trip (and the root's
    and TLD's for the first names of a TLD); warm, the cache answers in well under a
    millisecond; either way the slow tier's names take its 400 ms round trips, and the broken
    tier's fail with SERVFAIL after 1.3-1.9 s (failures are not kept in the cache)."""
    from experiments.generators.perf import LATENCY_BINS

    slow, broken = int(answers * 0.03), int(answers * 0.013)
    rest = answers - slow - broken
    if cache == "cold":
        chain = int(rest * 0.05)
        body = np.concatenate([40 + rng.gamma(2.0, 8.0, rest - chain),
                               90 + rng.gamma(2.0, 12.0, chain)])
    else:
        body = rng.lognormal(np.log(0.15), 0.4, rest)
    tail = np.concatenate([400 + rng.gamma(2.0, 150.0, slow), rng.uniform(1300, 1900, broken)])
    edges = np.array([0.0, *LATENCY_BINS, np.inf])
    counts, _ = np.histogram(np.concatenate([body, tail]) / 1000.0, bins=edges)
    return ["upper_s", "count"], [[f"{edge:.6g}", int(n)] for edge, n in
                                  zip([*LATENCY_BINS, float("inf")], counts, strict=True)]


def full_scale_resolver_run(root: Path) -> Path:
    """resolver-cache at its full scale's shape: cold and warm at -q 100/200/300, five
    trials each with their latency histograms, resperf ramps, dnsperf's ceiling."""
    qps = {(cache, q): (3000 if cache == "cold" else 12000) * (1 + q / 1000)
           for cache in ("cold", "warm") for q in (100, 200, 300)}
    trials = {k: [v * f for f in (0.97, 0.99, 1.0, 1.01, 1.03)] for k, v in qps.items()}
    return resolver_run(root, qps, trials=trials, histograms=True,
                        ramps={"cold": (3200, 3200), "warm": (20000, 14000)})


SEED_F4 = {("cold", 100): 290, ("warm", 100): 1204, ("cold", 200): 630, ("warm", 200): 1463,
           ("cold", 300): 563, ("warm", 300): 1710}



def full_scale_runs() -> list[tuple[str, Callable[[Path], Path]]]:
    """The package's runs at their full scale's shape, for the figure layout tests."""
    return [("resolver-cache: cold and warm at -q 100/200/300, 5 trials, ramps",
             full_scale_resolver_run)]


def seed_like_runs() -> dict[str, Callable[[Path], Path]]:
    """{experiment: a run where every claim it names holds}: the altered-data test removes
    each claim's effect from it and expects nothing reproduced. Built as the claim cases'
    'present' runs (cases.py beside this module)."""
    from experiments.f4_resolver_cache import cases

    return {"resolver-cache": cases.f4()}


def like_6566(root: Path) -> Path:
    """A run shaped like the full `resolver-cache` run 20261125T182917Z-6566 as NOTES.md gives
    it: cold / warm 570 / 2,880 qps at -q 100, 1,096 / 5,093 at -q 200, 1,585 / 5,171 at
    -q 300, dnsperf's ceiling 87,293-96,184 qps (the lowest taken for every -q), a warm tail of
    1.46 % SERVFAIL and 0.3 % lost. Not in those notes, taken from the run before it (8d78):
    the cold passes' 95 ms average latency and the slowest answer, 1.9 s (its SERVFAILs)."""
    qps = {("cold", 100): 570, ("warm", 100): 2880, ("cold", 200): 1096, ("warm", 200): 5093,
           ("cold", 300): 1585, ("warm", 300): 5171}
    return resolver_run(root, qps, cold_latency_ms=95.0, tail=0.018, generator_max=87293,
                        slowest_ms=1900.0, run_id="20261125T182917Z-6566")
