"""F2 synthetic runs: dnsdist floods, untuned and tuned, beside a generator ceiling."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from analysis.synthetic import CellData, write_run

FLOOD_TRIAL_COLUMNS = ["trial", "sent", "received", "duration_s", "offered_qps", "qps",
                       "failures_per_s"]


def flood_trials(offered: float, answered: float, seconds: float = 20.0
                 ) -> dict[str, tuple[list[str], list[list[Any]]]]:
    """kxdpgun's per-trial rows (`trials.csv`): what it sent and what came back."""
    sent, received = int(offered * seconds), int(answered * seconds)
    return {"trials.csv": (FLOOD_TRIAL_COLUMNS, [[1, sent, received, seconds, offered, answered,
                                                  (sent - received) / seconds]])}


def dnsdist_run(root: Path, *, untuned: float, tuned: float, ceiling: float | None = 1e6,
                listeners: int = 8, untuned_fail: float = 100.0, tuned_fail: float = 0.0,
                generator: str = "dnsperf", flood_qps: float | None = None,
                tuned_fail_trials: list[float] | None = None,
                histograms: bool = False, trials_per_cell: int = 5, spread: float = 0.0,
                **kwargs: Any) -> Path:
    """dnsdist-listeners: `generator=dnsperf` (closed loop, the ceiling is the sink's
    answered qps) or `kxdpgun` (open loop at `flood_qps`, default the ceiling: the ceiling is
    the rate it sent; each variant answers its qps and fails the rest). `histograms`
    (dnsperf): `trials_per_cell` trials each with its latency histogram, as LATENCY_HISTOGRAM
    gives the procedure, their qps spread by `spread` (relative) around the variant's."""
    # the procedure's placement: the generator on one core, dnsdist on the others
    server_cores = max(int(kwargs.get("cpus", 2)) - 1, 1)

    def params(variant: str) -> dict[str, Any]:
        return {"variant": variant, "generator": generator, "server_cores": server_cores}

    def trials(answered: float, failures: float | list[float] = 0.0
               ) -> dict[str, tuple[list[str], list[list[Any]]]]:
        if generator == "dnsperf" and histograms:
            return dnsperf_trials(answered, failures, trials_per_cell, spread=spread)
        if generator != "kxdpgun":
            return {}
        return flood_trials(flood_qps or ceiling or answered, answered)

    cells = []
    if ceiling is not None:
        # an open-loop flood's ceiling cell: the sink answers part of what was sent
        sink = ceiling * 0.4 if generator == "kxdpgun" else ceiling
        figures = {"qps": sink, "failures_per_s": 0.0}
        if generator == "kxdpgun":  # as dnsdist.py records it: the rate the flood sent
            figures["ceiling_qps"] = ceiling
        cells.append(CellData(params("ceiling"), figures,
                              csv=flood_trials(ceiling, sink) if generator == "kxdpgun"
                              else trials(sink)))
    cells += [CellData(params("untuned"), {"qps": untuned, "failures_per_s": untuned_fail,
                                           "listeners": 1},
                       csv=trials(untuned, untuned_fail)),
              CellData(params("tuned"), {"qps": tuned, "failures_per_s": tuned_fail,
                                         "listeners": listeners},
                       csv=trials(tuned, tuned_fail_trials or tuned_fail))]
    return write_run(root, "dnsdist-listeners", cells,
                     params={"workers": 1000, "generator": generator, "timeout_s": 2.0,
                             "outstanding": 1000, "duration_s": 20}, **kwargs)


def dnsperf_trials(answered: float, failures: float | list[float], trials: int,
                   seconds: float = 20.0,
                   outstanding: int = 1000, spread: float = 0.0
                   ) -> dict[str, tuple[list[str], list[list[Any]]]]:
    """dnsperf's trials of a closed-loop variant: `trials.csv` and per trial the answers'
    latency histogram (dnsperf -v's bins, upper edges in s): `outstanding` queries in flight
    wait outstanding / qps in the queue (Little's law), with a tail of drops retried by no
    one (lost, after the 2 s timeout)."""
    from experiments.generators.perf import LATENCY_BINS

    rng = np.random.default_rng(int(answered) % 1000)
    queue_ms = 1000.0 * outstanding / max(answered, 1.0)
    edges = np.array([0.0, *LATENCY_BINS, np.inf])
    rows, files = [], {}
    each = failures if isinstance(failures, list) else [failures] * trials
    for trial, failed in enumerate(each, start=1):
        lost = int(failed * seconds)
        sample = rng.gamma(4.0, queue_ms / 4.0, 20000)
        counts, _ = np.histogram(sample / 1000.0, bins=edges)
        counts = np.round(counts * answered * seconds / len(sample)).astype(int)
        qps = answered * (1 + spread * float(rng.standard_normal())) if spread else answered
        rows.append([trial, round(qps, 1), int(qps * seconds) + lost, lost, failed])
        files[f"latency-{trial}.csv"] = (["upper_s", "count"], [
            [f"{edge:.6g}", int(n)] for edge, n in
            zip([*LATENCY_BINS, float("inf")], counts, strict=True)])
    return {"trials.csv": (["trial", "qps", "sent", "lost", "failures_per_s"], rows), **files}


def full_scale_runs() -> list[tuple[str, Callable[[Path], Path]]]:
    """Runs of dnsdist-listeners at its full scale's shape (ceiling, untuned, tuned, five
    trials each), for the figure layout tests: the kxdpgun flood (the figures of the full
    run of 2026-11-25, its default then) and dnsperf with LATENCY_HISTOGRAM=true."""
    return [
        ("dnsdist-listeners, kxdpgun flood", lambda root: dnsdist_run(
            root, untuned=128776, tuned=162950, ceiling=331644, generator="kxdpgun",
            flood_qps=400000)),
        ("dnsdist-listeners, GENERATOR=dnsperf LATENCY_HISTOGRAM=true", lambda root:
            dnsdist_run(root, untuned=20000, tuned=24000, histograms=True)),
    ]



def seed_like_runs() -> dict[str, Callable[[Path], Path]]:
    """{experiment: a run where every claim it names holds}: the altered-data test removes
    each claim's effect from it and expects nothing reproduced. Built as the claim cases'
    'present' runs (cases.py beside this module)."""
    from experiments.f2_dnsdist import cases

    return {"dnsdist-listeners": cases.f2()}


def like_eb86(root: Path) -> Path:
    """A run shaped like the full `dnsdist-listeners` run 20261125T220415Z-eb86 (kxdpgun open
    loop, 2 cores: dnsdist on one) as NOTES.md gives it: the flood sent 331,644 qps to the
    sink's ceiling cell and 285,332 to dnsdist; one listener answered 128,776 (171,823
    failed/s), one reusePort listener with big buffers and recvmmsg 162,950 (122,381)."""
    return dnsdist_run(root, untuned=128776, tuned=162950, ceiling=331644, listeners=1,
                       untuned_fail=171823.0, tuned_fail=122381.0, generator="kxdpgun",
                       flood_qps=285332, cpus=2, run_id="20261125T220415Z-eb86")


def like_6db9(root: Path) -> Path:
    """A run shaped like the full `dnsdist-listeners GENERATOR=dnsperf` run
    20261124T085657Z-6db9: dnsperf's ceiling 67,589 qps; one listener 67,742 qps with 344.3
    failed/s, the tuned listener 70,015 with none; dnsdist on one core."""
    return dnsdist_run(root, untuned=67742, tuned=70015, ceiling=67589, listeners=1,
                       untuned_fail=344.3, tuned_fail=0.0, cpus=2,
                       run_id="20261124T085657Z-6db9")
