"""F4 claims (caching resolver under dnsperf, seed 003).

Data read from `resolver-cache*` runs: one cell per (cache, outstanding), params `cache` =
`cold` | `warm` and `outstanding` (dnsperf -q); `cell.json` figures from dnsperf's output:
`qps`, `sent`, `lost`, `avg_latency_ms`, `rcode_SERVFAIL`.

Both effects come from the wide area: cold queries wait for round trips to distant servers,
and even a warm pass is held back by the slow and failing tail (SERVFAIL, lost queries) that
occupies dnsperf's outstanding-query slots. A lab whose emulated internet answers in
microseconds, or has no such tail, cannot show them: "not applicable", with the figure. So
is a pass that came within 10 % of dnsperf's own ceiling for the same pass (the run's
`phase=ceiling` cell: the same command against a canned responder on the resolver's cores;
a warm cache answered from memory can outrun one dnsperf thread), and a run without that
ceiling. dnsperf's CPU share (`generator_cpu_pct`) is kept but not judged: dnsperf
busy-waits, so it shows ~99 % of a core also while a pass waits seconds on slow names.
"""

from __future__ import annotations

from scipy.stats import mannwhitneyu

from analysis.claim import (
    DIRECTIONAL,
    TWO_SIDED,
    Verdict,
    claim,
    cores_condition,
    not_applicable,
    require,
)
from analysis.derived import GENERATOR_BOUND_SHARE, require_below_ceiling
from analysis.rundata import Cell, Run

SOURCE = "seed 003, the six dnsperf runs (cold/warm x -q 100/200/300) and their output"
SEED_CORES = 4  # Unbound's num-threads 4 on the seed's machine


def _by_q(run: Run, cache: str) -> dict[int, Cell]:
    return {int(c.params["outstanding"]): c
            for c in run.cells_where(cache=cache) if "outstanding" in c.params}


def _qps(cell: Cell) -> float:
    return float(cell.figure("qps"))


def _generator_free(run: Run, cells: dict[str, Cell]) -> None:
    """Not applicable when a compared pass came within 10 % of dnsperf's ceiling for the
    same pass (measured in the run), or the run measured none."""
    for name, cell in cells.items():
        require_below_ceiling(run, cell, _qps(cell), name,
                              "a generator with headroom: a faster core for dnsperf "
                              "(GENERATOR_CPUS), or a resolver slower than dnsperf")


@claim(
    "F4.warm-over-cold",
    title="A warm cache answers 2.3-4.2x faster than a cold one, at every -q",
    published="warm/cold 1,204/290 = 4.2x (-q 100), 1,463/630 = 2.3x (-q 200), "
              "1,710/563 = 3.0x (-q 300)",
    source=SOURCE, effect=TWO_SIDED,
    tolerance="qps(warm)/qps(cold) between {low}x and {high}x at every -q",
    precondition="the cold pass sees wide-area latency: average latency >= {min_cold_ms} ms "
                 "(the seed: 230-407 ms); every compared pass below {bound:.0%} of "
                 "dnsperf's own ceiling for it, measured in the run",
    fails_when="the warm cache gains less than {low}x, or more than {high}x (no upstream "
               "tail holding the warm pass back)",
    limits={"low": 2.0, "high": 4.8, "min_cold_ms": 20.0, "bound": GENERATOR_BOUND_SHARE},
)
def test_warm_over_cold(run: Run, verdict: Verdict, low: float, high: float,
                        min_cold_ms: float, bound: float) -> None:
    """The seed's three ratios span 2.3x (-q 200) to 4.2x (-q 100); the band is that range
    widened by ~15 % either side (2.0-4.8x) for the run-to-run spread of one pass each. The
    old 1.5-6x passed a 5.5x lab whose warm pass had no slow tail, which is not the seed's
    mechanism."""
    verdict.condition(cores_condition(run.meta, SEED_CORES, "Unbound"))
    cold, warm = _by_q(run, "cold"), _by_q(run, "warm")
    common = sorted(set(cold) & set(warm))
    if not common:
        not_applicable("no -q value measured both cold and warm")
    zero = [q for q in common if _qps(cold[q]) <= 0]
    require(not zero, f"the cold pass answered nothing at -q {zero}", "see the cold cells' logs")
    latency = min(float(cold[q].figure("avg_latency_ms")) for q in common)
    require(latency >= min_cold_ms,
            f"cold average latency {latency:,.1f} ms: the emulated internet is too close",
            "WAN delay on the emulated internet's links")
    _generator_free(run, {f"{state} -q {q}": cells[q] for q in common
                          for state, cells in (("cold", cold), ("warm", warm))})
    ratios = {q: _qps(warm[q]) / _qps(cold[q]) for q in common}
    verdict.measured = ", ".join(f"-q {q}: {r:.2f}x" for q, r in ratios.items())
    verdict.phrase = (f"warm/cold {min(ratios.values()):.1f}-{max(ratios.values()):.1f}x "
                      f"at -q {min(common)}-{max(common)}")
    off = [q for q, r in ratios.items() if not low <= r <= high]
    assert not off, ", ".join(f"{ratios[q]:.2f}x at -q {q}" for q in off)


@claim(
    "F4.warm-scales-with-q",
    title="Warm cache: more outstanding queries give more qps",
    published="warm: 1,204 (-q 100) -> 1,463 (-q 200) -> 1,710 qps (-q 300): +22 %, +17 %",
    source=SOURCE, effect=DIRECTIONAL,
    tolerance="each larger -q up to the seed's {max_q} gives >= {min_gain:.0%} more warm qps "
              "than the previous one (medians; with >= 3 trials each, also a one-sided "
              "Mann-Whitney p < {alpha} over the trials)",
    precondition="the warm pass is warm (average latency at most half the cold one) and has "
                 "a slow or failing tail: SERVFAIL + lost >= {min_tail:.1%} of the queries "
                 "(the seed: 1.1-2.0 %); every warm pass below {bound:.0%} of dnsperf's own "
                 "ceiling for it, measured in the run",
    fails_when="warm qps stays flat or falls as -q grows, or the trials overlap so much that "
               "the gain is not significant",
    limits={"min_gain": 0.05, "min_tail": 0.005, "max_q": 300, "alpha": 0.05,
            "bound": GENERATOR_BOUND_SHARE},
)
def test_warm_scales(run: Run, verdict: Verdict, min_gain: float, min_tail: float,
                     max_q: int, alpha: float, bound: float) -> None:
    warm = {q: c for q, c in _by_q(run, "warm").items() if q <= max_q}
    cold = _by_q(run, "cold")
    if len(warm) < 2:
        not_applicable(f"fewer than two -q values <= {max_q} with a warm cache")
    qs = sorted(warm)
    verdict.condition(cores_condition(run.meta, SEED_CORES, "Unbound"))
    for q in qs:
        if q in cold:
            w_ms = float(warm[q].figure("avg_latency_ms"))
            c_ms = float(cold[q].figure("avg_latency_ms"))
            require(w_ms <= c_ms / 2, f"-q {q}: the warm pass averaged {w_ms:,.1f} ms against "
                    f"{c_ms:,.1f} ms cold (the cache did not serve it)",
                    "a warm-up pass over the same names before the measured one")
    tails = {}
    for q in qs:
        cell = warm[q]
        sent = float(cell.figure("sent"))
        bad = float(cell.figure("lost")) + float(cell.figure("rcode_SERVFAIL", optional=True) or 0)
        tails[q] = bad / sent if sent else 0.0
    require(min(tails.values()) >= min_tail,
            f"warm tail (SERVFAIL + lost) {min(tails.values()):.2%} of queries",
            "slow and failing names in the emulated internet")
    _generator_free(run, {f"warm -q {q}": warm[q] for q in qs})
    verdict.measured = " -> ".join(f"{_qps(warm[q]):,.0f} (-q {q})" for q in qs)
    verdict.phrase = "warm qps " + " -> ".join(f"{_qps(warm[q]):,.0f}" for q in qs) + (
        f" at -q {qs[0]}-{qs[-1]}")
    for a, b in zip(qs, qs[1:], strict=False):
        assert _qps(warm[b]) >= (1 + min_gain) * _qps(warm[a]), (
            f"warm qps from -q {a} to -q {b}: {_qps(warm[b]) / _qps(warm[a]) - 1:+.0%}")
        low_trials = warm[a].figure("qps_trials", optional=True) or []
        high_trials = warm[b].figure("qps_trials", optional=True) or []
        if min(len(low_trials), len(high_trials)) >= 3:
            p = float(mannwhitneyu(high_trials, low_trials, alternative="greater").pvalue)
            verdict.note(f"-q {a} -> {b}: Mann-Whitney p={p:.3f} over "
                         f"{len(low_trials)}/{len(high_trials)} trials")
            assert p < alpha, (f"warm qps from -q {a} to -q {b}: the trials overlap "
                               f"(p={p:.3f}; {min(low_trials):,.0f}-{max(low_trials):,.0f} vs "
                               f"{min(high_trials):,.0f}-{max(high_trials):,.0f})")
