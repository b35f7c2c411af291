"""F4 claims (caching resolver under dnsperf, seed 003).

Data read from `resolver-cache*` runs: one cell per (cache, outstanding), params `cache` =
`cold` | `warm` and `outstanding` (dnsperf -q); `cell.json` figure `qps` (dnsperf's
queries per second).
"""

from __future__ import annotations

from analysis.claim import Verdict, claim, not_applicable
from analysis.rundata import Run

EXPERIMENTS = ("resolver-cache",)


def _by_q(run: Run, cache: str) -> dict[int, float]:
    return {int(c.params["outstanding"]): float(c.figure("qps"))
            for c in run.cells_where(cache=cache) if "outstanding" in c.params}


@claim(
    "F4.warm-over-cold", finding="F4", experiments=EXPERIMENTS,
    title="A warm cache answers at least twice as fast as a cold one, at every -q",
    published="warm/cold 1,204/290 = 4.2x (-q 100), 1,463/630 = 2.3x (-q 200), "
              "1,710/563 = 3.0x (-q 300)",
    tolerance="qps(warm)/qps(cold) >= {min_ratio} at every outstanding-query setting",
    limits={"min_ratio": 2.0},
)
def test_warm_over_cold(run: Run, verdict: Verdict, min_ratio: float) -> None:
    cold, warm = _by_q(run, "cold"), _by_q(run, "warm")
    common = sorted(set(cold) & set(warm))
    if not common:
        not_applicable("no -q value measured both cold and warm")
    ratios = {q: warm[q] / cold[q] for q in common}
    verdict.measured = ", ".join(f"-q {q}: {r:.2f}x" for q, r in ratios.items())
    worst = min(ratios, key=lambda q: ratios[q])
    assert ratios[worst] >= min_ratio, f"only {ratios[worst]:.2f}x at -q {worst}"


@claim(
    "F4.warm-scales-with-q", finding="F4", experiments=EXPERIMENTS,
    title="Warm cache: more outstanding queries give more qps",
    published="warm: 1,204 (-q 100) -> 1,463 (-q 200) -> 1,710 qps (-q 300)",
    tolerance="each larger -q gives >= {min_step:.0%} of the previous warm qps",
    limits={"min_step": 0.95},
)
def test_warm_scales(run: Run, verdict: Verdict, min_step: float) -> None:
    warm = _by_q(run, "warm")
    if len(warm) < 2:
        not_applicable("fewer than two -q values with a warm cache")
    qs = sorted(warm)
    verdict.measured = " -> ".join(f"{warm[q]:,.0f} (-q {q})" for q in qs)
    for a, b in zip(qs, qs[1:], strict=False):
        assert warm[b] >= min_step * warm[a], f"qps fell from -q {a} to -q {b}"
