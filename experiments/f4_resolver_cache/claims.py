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

import yaml
from scipy.stats import mannwhitneyu

from analysis.claim import (
    CALIBRATION,
    DIRECTIONAL,
    MACHINE,
    SETTING,
    TWO_SIDED,
    Judged,
    Verdict,
    claim,
    cores_condition,
    decide,
    not_applicable,
    require,
)
from analysis.derived import GENERATOR_BOUND_SHARE, require_below_ceiling
from analysis.rundata import Cell, Run
from analysis.stats import rank_ratio_interval
from dnslab import findings

SOURCE = "seed 003, the six dnsperf runs (cold/warm x -q 100/200/300) and their output"
SEED_CORES = 4  # Unbound's num-threads 4 on the seed's machine
# the seed's resolver, Unbound: the experiment's default RESOLVER
_default_params = yaml.safe_load(findings.experiment_file("resolver-cache").read_text())["params"]
SEED_RESOLVER = str(_default_params["resolver"])
# the seed's cold passes averaged 230-407 ms (wide-area resolution through 8.8.8.8); "near"
# is half the lowest to twice the highest: a lab nearer than that sets the warm/cold ratio
# by its emulated WAN, not by the seed's
SEED_COLD_MS = (230.0, 407.0)
COLD_BAND_MS = (SEED_COLD_MS[0] / 2, SEED_COLD_MS[1] * 2)
# a pass whose run time is this close to its slowest answer's latency is bounded by that one
# name, not by -q (the seed's warm passes: 59 %, 72 % and 85 % of it)
TAIL_BOUND_SHARE = 0.90


def _resolver_conditions(run: Run, verdict: Verdict) -> None:
    """What the lab changed in the resolver: its kind when not the seed's Unbound
    (RESOLVER=; runs from before the parameter ran the seed's), and its cores when not the
    seed's 4."""
    kind = str(run.params.get("resolver") or SEED_RESOLVER)
    if kind != SEED_RESOLVER:
        verdict.condition(f"{kind} as the resolver (seed: Unbound)")
    verdict.condition(cores_condition(run.meta, SEED_CORES,
                                      "Unbound" if kind == SEED_RESOLVER else kind))


def _span_ms(values: list[float]) -> str:
    low, high = f"{min(values):,.0f}", f"{max(values):,.0f}"
    return low if low == high else f"{low}-{high}"


def _cold_latency_near_seed(cold: dict[int, Cell], qs: list[int]) -> None:
    """Precondition: every compared cold pass waited on a wide area like the seed's."""
    latency = {q: float(cold[q].figure("avg_latency_ms")) for q in qs}
    off = {q: ms for q, ms in latency.items() if not COLD_BAND_MS[0] <= ms <= COLD_BAND_MS[1]}
    if not off:
        return
    require(False, f"cold passes averaged {_span_ms(list(off.values()))} ms at -q "
            + ", ".join(map(str, off)) + f" (seed: {SEED_COLD_MS[0]:.0f}-{SEED_COLD_MS[1]:.0f} "
            "ms): the emulated internet, not the cache, sets the ratio",
            f"WAN delay on the emulated internet's links giving {COLD_BAND_MS[0]:.0f}-"
            f"{COLD_BAND_MS[1]:.0f} ms cold (F4.cold-latency)", cause=SETTING)


def tail_share(cell: Cell) -> float | None:
    """The pass's slowest answer over its run time (None when dnsperf's output gave neither):
    near 1, the one slowest name bounds the pass, whatever -q."""
    run_time = cell.figure("run_time_s", optional=True)
    slowest = cell.figure("max_latency_ms", optional=True)
    if not run_time or slowest is None:
        return None
    return float(slowest) / 1000 / float(run_time)


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
                              "(GENERATOR_CPUS), or a resolver slower than dnsperf", cause=MACHINE)


@claim(
    "F4.warm-over-cold",
    title="A warm cache answers 2.3-4.2x faster than a cold one, at every -q",
    published="warm/cold 1,204/290 = 4.2x (-q 100), 1,463/630 = 2.3x (-q 200), "
              "1,710/563 = 3.0x (-q 300); cold passes averaged 230-407 ms",
    source=SOURCE, effect=TWO_SIDED,
    tolerance="qps(warm)/qps(cold) between {low}x and {high}x at every -q",
    precondition="the cold pass waits on a wide area like the seed's: average latency "
                 "{cold_low:.0f}-{cold_high:.0f} ms at every compared -q (the seed: 230-407 "
                 "ms; nearer, the emulated WAN sets the ratio); every compared pass below "
                 "{bound:.0%} of dnsperf's own ceiling for it, measured in the run",
    fails_when="the warm cache gains less than {low}x, or more than {high}x (no upstream "
               "tail holding the warm pass back)",
    limits={"low": 2.0, "high": 4.8, "cold_low": COLD_BAND_MS[0], "cold_high": COLD_BAND_MS[1],
            "bound": GENERATOR_BOUND_SHARE},
)
def test_warm_over_cold(run: Run, verdict: Verdict, low: float, high: float,
                        cold_low: float, cold_high: float, bound: float) -> None:
    """The seed's three ratios span 2.3x (-q 200) to 4.2x (-q 100); the band is that range
    widened by ~15 % either side (2.0-4.8x) for the run-to-run spread of one pass each. The
    old 1.5-6x passed a 5.5x lab whose warm pass had no slow tail, which is not the seed's
    mechanism. The ratio is set by how long a cold pass waits on the wide area: a lab whose
    cold pass averaged 21 ms still landed in the band, by its emulated WAN, so the cold
    latency must be near the seed's (the F4.cold-latency calibration says by how much)."""
    _resolver_conditions(run, verdict)
    cold, warm = _by_q(run, "cold"), _by_q(run, "warm")
    common = sorted(set(cold) & set(warm))
    if not common:
        not_applicable("no -q value measured both cold and warm", cause=SETTING)
    zero = [q for q in common if _qps(cold[q]) <= 0]
    require(not zero, f"the cold pass answered nothing at -q {zero}", "see the cold cells' logs",
            cause=SETTING)
    _cold_latency_near_seed(cold, common)
    _generator_free(run, {f"{state} -q {q}": cells[q] for q in common
                          for state, cells in (("cold", cold), ("warm", warm))})
    ratios = {q: _qps(warm[q]) / _qps(cold[q]) for q in common}
    verdict.measured = ", ".join(f"-q {q}: {r:.2f}x" for q, r in ratios.items()) + (
        "; cold " + ", ".join(f"{float(cold[q].figure('avg_latency_ms')):,.0f}" for q in common)
        + " ms average")
    verdict.phrase = (f"warm/cold {min(ratios.values()):.1f}-{max(ratios.values()):.1f}x "
                      f"at -q {min(common)}-{max(common)}")
    off = [q for q, r in ratios.items() if not low <= r <= high]
    assert not off, ", ".join(f"{ratios[q]:.2f}x at -q {q}" for q in off)


@claim(
    "F4.warm-scales-with-q",
    title="Warm cache: more outstanding queries give more qps",
    published="warm: 1,204 (-q 100) -> 1,463 (-q 200) -> 1,710 qps (-q 300): +22 %, +17 %; "
              "each pass ran 8.3 / 6.8 / 5.8 s, its slowest answer 4.8-5.0 s",
    source=SOURCE, effect=DIRECTIONAL,
    tolerance="each larger -q up to the seed's {max_q} gives >= {min_gain:.0%} more warm qps "
              "than the previous one (medians; with >= 3 trials each, the gain told above "
              "{min_gain:.0%} by a one-sided Mann-Whitney p < {alpha} over the trials, and "
              "inconclusive where the trials cannot tell), judged on steps whose two passes "
              "are not bounded by their slowest name",
    precondition="the warm pass is warm (average latency at most half the cold one) and has "
                 "a slow or failing tail: SERVFAIL + lost >= {min_tail:.1%} of the queries "
                 "(the seed: 1.1-2.0 %); every warm pass below {bound:.0%} of dnsperf's own "
                 "ceiling for it, measured in the run; at least one step whose passes both "
                 "ran longer than their slowest answer by a margin (slowest answer < "
                 "{tail_bound:.0%} of the run time: the seed's were 59-85 %; at that bound "
                 "the one slowest name, not -q, sets the pass's qps)",
    fails_when="warm qps stays flat or falls as -q grows (with trials: the gain told below "
               "{min_gain:.0%})",
    limits={"min_gain": 0.05, "min_tail": 0.005, "max_q": 300, "alpha": 0.05,
            "bound": GENERATOR_BOUND_SHARE, "tail_bound": TAIL_BOUND_SHARE},
    interval=True,
)
def test_warm_scales(run: Run, verdict: Verdict, min_gain: float, min_tail: float,
                     max_q: int, alpha: float, bound: float, tail_bound: float) -> None:
    """A pass of 10,000 names cannot end before its slowest answer: the lab's warm pass at
    -q 200 took 97 % of its slowest name's time, so its qps was that name's, and a step to
    or from it says nothing about -q. The seed's passes were still below that bound (59-85 %):
    only steps whose passes are both below it are judged."""
    warm = {q: c for q, c in _by_q(run, "warm").items() if q <= max_q}
    cold = _by_q(run, "cold")
    if len(warm) < 2:
        not_applicable(f"fewer than two -q values <= {max_q} with a warm cache", cause=SETTING)
    qs = sorted(warm)
    _resolver_conditions(run, verdict)
    for q in qs:
        if q in cold:
            w_ms = float(warm[q].figure("avg_latency_ms"))
            c_ms = float(cold[q].figure("avg_latency_ms"))
            require(w_ms <= c_ms / 2, f"-q {q}: the warm pass averaged {w_ms:,.1f} ms against "
                    f"{c_ms:,.1f} ms cold (the cache did not serve it)",
                    "a warm-up pass over the same names before the measured one", cause=SETTING)
    tails = {}
    for q in qs:
        cell = warm[q]
        sent = float(cell.figure("sent"))
        bad = float(cell.figure("lost")) + float(cell.figure("rcode_SERVFAIL", optional=True) or 0)
        tails[q] = bad / sent if sent else 0.0
    require(min(tails.values()) >= min_tail,
            f"warm tail (SERVFAIL + lost) {min(tails.values()):.2%} of queries",
            "slow and failing names in the emulated internet", cause=SETTING)
    _generator_free(run, {f"warm -q {q}": warm[q] for q in qs})
    shares = {q: tail_share(warm[q]) for q in qs}
    unknown = [q for q, share in shares.items() if share is None]
    require(not unknown, f"warm -q {unknown}: no run time or slowest answer recorded",
            "dnsperf's run time and maximum latency per pass (run_time_s, max_latency_ms)",
            cause=SETTING)
    bounded = {q for q, share in shares.items() if (share or 0.0) >= tail_bound}
    steps = [(a, b) for a, b in zip(qs, qs[1:], strict=False)
             if a not in bounded and b not in bounded]
    said = ", ".join(f"-q {q} {shares[q]:.0%}" for q in qs)
    require(bool(steps), "every -q step has a pass bounded by its slowest name (slowest "
            f"answer / run time: {said})", "more names per pass (a longer query list) or "
            "looping warm passes (WARM_S)", cause=SETTING)
    verdict.measured = (" -> ".join(f"{_qps(warm[q]):,.0f} (-q {q})" for q in qs)
                        + f"; slowest answer / run time {said}")
    verdict.phrase = "warm qps " + " -> ".join(f"{_qps(warm[q]):,.0f}" for q in qs) + (
        f" at -q {qs[0]}-{qs[-1]}")
    if bounded:
        verdict.note("not judged (bounded by the slowest name): "
                     + ", ".join(f"-q {q}" for q in sorted(bounded)))
    figures = []
    for a, b in steps:
        low_trials = warm[a].figure("qps_trials", optional=True) or []
        high_trials = warm[b].figure("qps_trials", optional=True) or []
        if min(len(low_trials), len(high_trials)) >= 3:
            # the gain judged by its one-sided Mann-Whitney tests against the +5 % edge: trials
            # that overlap so much that they cannot tell it are inconclusive, not a verdict
            p = float(mannwhitneyu(high_trials, low_trials, alternative="greater").pvalue)
            verdict.note(f"-q {a} -> {b}: Mann-Whitney p={p:.3f} over "
                         f"{len(low_trials)}/{len(high_trials)} trials")
            interval = rank_ratio_interval(high_trials, low_trials, alpha).of("trials")
            figures.append(Judged(f"-q {a} -> {b}", interval, low=min_gain, fmt="{:+.0%}"))
            continue
        assert _qps(warm[b]) >= (1 + min_gain) * _qps(warm[a]), (
            f"warm qps from -q {a} to -q {b}: {_qps(warm[b]) / _qps(warm[a]) - 1:+.0%}")
    if figures:
        verdict.phrase = "warm qps " + ", ".join(f.text() for f in figures) + (
            f" at -q {qs[0]}-{qs[-1]}")
        decide(verdict, *figures)


@claim(
    "F4.cold-latency", kind=CALIBRATION,
    title="Lab check: the emulated internet makes a cold pass wait as the seed's did",
    published="cold passes averaged 300 ms (-q 100), 231 ms (-q 200), 407 ms (-q 300): "
              "wide-area resolution through 8.8.8.8",
    source=SOURCE, effect=TWO_SIDED,
    tolerance="cold average latency at every -q between {low:.0f} and {high:.0f} ms (half "
              "the seed's lowest, twice its highest)",
    precondition="cold passes in the run",
    fails_when="the emulated wide area answers much faster or slower than the seed's: the "
               "warm/cold ratios would then be the lab's WAN settings",
    limits={"low": COLD_BAND_MS[0], "high": COLD_BAND_MS[1]},
)
def test_cold_latency(run: Run, verdict: Verdict, low: float, high: float) -> None:
    cold = _by_q(run, "cold")
    if not cold:
        not_applicable("no cold pass in this run", cause=SETTING)
    latency = {q: float(cold[q].figure("avg_latency_ms")) for q in sorted(cold)}
    verdict.measured = ", ".join(f"{ms:,.1f} ms (-q {q})" for q, ms in latency.items())
    verdict.phrase = (f"cold passes averaged {_span_ms(list(latency.values()))} ms (seed: "
                      f"{SEED_COLD_MS[0]:.0f}-{SEED_COLD_MS[1]:.0f})")
    off = [q for q, ms in latency.items() if not low <= ms <= high]
    assert not off, ", ".join(f"{latency[q]:,.1f} ms at -q {q}" for q in off)


@claim(
    "F4.cold-q-effect",
    title="Cold cache: -q 200 doubles the qps of -q 100, -q 300 adds nothing",
    published="cold: 290 (-q 100) -> 630 (-q 200, 2.2x) -> 563 qps (-q 300, 0.89x: 'no "
              "difference from -q 200')",
    source=SOURCE, effect=TWO_SIDED,
    tolerance="cold qps(-q 200)/qps(-q 100) between {gain_low}x and {gain_high}x (the "
              "seed: 2.17x) and qps(-q 300)/qps(-q 200) between {flat_low}x and "
              "{flat_high}x (the seed: 0.89x, 'no difference')",
    precondition="cold passes at -q 100, 200 and 300, each waiting on a wide area like the "
                 "seed's (average {cold_low:.0f}-{cold_high:.0f} ms) and below {bound:.0%} "
                 "of dnsperf's own ceiling for it",
    fails_when="-q 200 gains much less or much more than the seed's 2.2x, or -q 300 still "
               "gains (or loses) clearly",
    limits={"gain_low": 1.5, "gain_high": 3.0, "flat_low": 0.75, "flat_high": 1.15,
            "cold_low": COLD_BAND_MS[0], "cold_high": COLD_BAND_MS[1],
            "bound": GENERATOR_BOUND_SHARE},
)
def test_cold_q_effect(run: Run, verdict: Verdict, gain_low: float, gain_high: float,
                       flat_low: float, flat_high: float, cold_low: float, cold_high: float,
                       bound: float) -> None:
    _resolver_conditions(run, verdict)
    cold = _by_q(run, "cold")
    missing = [q for q in (100, 200, 300) if q not in cold]
    require(not missing, f"no cold pass at -q {', '.join(map(str, missing))}",
            "OUTSTANDING=100,200,300", cause=SETTING)
    qs = [100, 200, 300]
    zero = [q for q in qs if _qps(cold[q]) <= 0]
    require(not zero, f"the cold pass answered nothing at -q {zero}", "see the cold cells' logs",
            cause=SETTING)
    _cold_latency_near_seed(cold, qs)
    _generator_free(run, {f"cold -q {q}": cold[q] for q in qs})
    gain, flat = _qps(cold[200]) / _qps(cold[100]), _qps(cold[300]) / _qps(cold[200])
    verdict.measured = (" -> ".join(f"{_qps(cold[q]):,.0f} (-q {q})" for q in qs)
                        + f": {gain:.2f}x, then {flat:.2f}x")
    verdict.phrase = (f"cold qps {' -> '.join(f'{_qps(cold[q]):,.0f}' for q in qs)} "
                      f"({gain:.1f}x, {flat:.2f}x)")
    off = ([f"-q 100 -> 200 {gain:.2f}x"] if not gain_low <= gain <= gain_high else []) + (
        [f"-q 200 -> 300 {flat:.2f}x"] if not flat_low <= flat <= flat_high else [])
    assert not off, ", ".join(off)
