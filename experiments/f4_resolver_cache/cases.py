"""F4's claim cases: runs where each claim's effect is present (reproduced), absent or
reversed (not reproduced), or its precondition unmet (not applicable), built with this
package's `fixtures.py`. `tests/unit/test_analysis_claims.py` collects `CLAIM_CASES` from every
finding package and judges each run with the project's own `evaluate`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from analysis.claim import (
    ABSENT,
    PRESENT,
    REVERSED,
    STRADDLES,
    UNMET,
    UNMET_MACHINE,
    UNMET_SETTING,
)
from experiments.f4_resolver_cache import fixtures as f4_fx

# --- builders: root -> run folder ---------------------------------------------------------------

def f4(scale: dict[str, float] | None = None, **kw: Any) -> Callable[[Path], Path]:
    """The seed's six figures, warm qps multiplied per -q by `scale`."""
    def build(root: Path) -> Path:
        qps = {(c, q): v * ((scale or {}).get(str(q), 1.0) if c == "warm" else 1.0)
               for (c, q), v in f4_fx.SEED_F4.items()}
        return f4_fx.resolver_run(root, qps, **kw)
    return build


def cold_qps(values: dict[int, float], **kw: Any) -> Callable[[Path], Path]:
    """The seed's warm passes with these cold qps (per -q; a -q left out has no cold pass)."""
    def build(root: Path) -> Path:
        qps = {(c, q): v for (c, q), v in f4_fx.SEED_F4.items() if c == "warm"}
        qps.update({("cold", q): v for q, v in values.items()})
        return f4_fx.resolver_run(root, qps, **kw)
    return build


def bounded_at(*qs: int, share: float = 0.97) -> dict[tuple[str, int], float]:
    """Slowest answers that take `share` of the seed's warm passes' run times at these -q."""
    return {("warm", q): share * 10000 / f4_fx.SEED_F4[("warm", q)] * 1000 for q in qs}


def warm_equals_cold(factor: float) -> Callable[[Path], Path]:
    def build(root: Path) -> Path:
        qps = {(c, q): f4_fx.SEED_F4[("cold", q)] * (factor if c == "warm" else 1.0)
               for (c, q) in f4_fx.SEED_F4}
        return f4_fx.resolver_run(root, qps)
    return build


def trials_run(trials: dict[tuple[str, int], list[float]], **kw: Any) -> Callable[[Path], Path]:
    """Each (cache, -q) pass with these trials' qps (the cell's qps their median)."""
    def build(root: Path) -> Path:
        qps = {key: float(np.median(values)) for key, values in trials.items()}
        return f4_fx.resolver_run(root, qps, trials=trials, **kw)
    return build


# the five trials of each pass of run 20261129T014006Z-8f86 (NAMES=30000, 2026-11-29): warm
# over cold 4.74x, 4.70x, 4.65x, a band's edge (4.8x) inside each ratio's interval; the run
# before it (b1d7) read 4.7-5.0x and was called "not reproduced" from the medians alone
LIKE_8F86 = {
    ("cold", 100): [346.0, 344.8, 351.0, 349.5, 348.0],
    ("cold", 200): [651.7, 677.0, 655.7, 672.7, 671.5],
    ("cold", 300): [940.6, 929.4, 930.8, 941.6, 938.6],
    ("warm", 100): [1649.8, 1648.0, 1715.6, 1688.0, 1540.4],
    ("warm", 200): [3213.1, 3168.3, 3157.4, 2781.3, 2952.7],
    ("warm", 300): [4361.3, 4525.4, 3773.9, 4570.5, 4039.7]}


def scaled_trials(factor: dict[tuple[str, int], float], spread: float = 0.01
                  ) -> dict[tuple[str, int], list[float]]:
    """Five tight trials (+-`spread`) around the seed's qps times `factor` per pass."""
    return {key: [value * factor.get(key, 1.0) * (1 + spread * d) for d in (-1, -0.5, 0, 0.5, 1)]
            for key, value in f4_fx.SEED_F4.items()}


CLAIM_CASES: list[tuple[str, str, Callable[[Path], Path]]] = [
    # judged over the trials where each pass kept >= 3: tight trials at the seed's ratios
    # hold, 8f86's straddle the band's edge, tight ones at 5.5x fail
    ("F4.warm-over-cold", PRESENT, trials_run(scaled_trials({}), cold_latency_ms=245.0)),
    ("F4.warm-over-cold", STRADDLES, trials_run(LIKE_8F86, cold_latency_ms=245.0)),
    ("F4.warm-over-cold", ABSENT, trials_run(scaled_trials(
        {("warm", q): 5.5 * f4_fx.SEED_F4[("cold", q)] / f4_fx.SEED_F4[("warm", q)]
         for q in (100, 200, 300)}), cold_latency_ms=245.0)),
    # 8f86's cold passes: -q 300 still gains 1.40x [1.38, 1.44], outside 0.75-1.15x
    ("F4.cold-q-effect", ABSENT, trials_run(LIKE_8F86, cold_latency_ms=245.0)),
    ("F4.cold-q-effect", PRESENT, trials_run(scaled_trials({}), cold_latency_ms=245.0)),
    # -q 300 at 1.15x of -q 200 with trials +-6 %: the edge inside the interval
    ("F4.cold-q-effect", STRADDLES, trials_run(scaled_trials(
        {("cold", 300): 1.15 * 630 / 563}, spread=0.06), cold_latency_ms=245.0)),
    ("F4.warm-over-cold", PRESENT, f4()),
    ("F4.warm-over-cold", ABSENT, warm_equals_cold(1.0)),
    ("F4.warm-over-cold", REVERSED, warm_equals_cold(0.5)),
    ("F4.warm-over-cold", ABSENT, warm_equals_cold(15.0)),  # a lab without wide-area tail
    # passed by accident before (1.5-6x): outside the seed's 2.3-4.2x
    ("F4.warm-over-cold", ABSENT, warm_equals_cold(5.5)),
    ("F4.warm-over-cold", ABSENT, warm_equals_cold(1.8)),
    ("F4.warm-over-cold", UNMET, f4(cold_latency_ms=0.3)),
    # passed by accident before (precondition >= 20 ms): a cold pass of 21 ms against the
    # seed's 230-407 ms, the ratio set by the lab's emulated WAN
    ("F4.warm-over-cold", UNMET, f4(cold_latency_ms=21.0)),
    # the server's part of the ratio, told from the emulated tail's (claims.Split): the
    # seed's ratios with a cache that did not serve the healthy names (1.25x faster warm):
    # the ratio is in the band for the tail's sake
    ("F4.warm-over-cold", ABSENT, f4(healthy_ms={"warm": 200.0})),
    # the seed's ratios with the warm tail shrunk (failures answered at once, 0.5 s instead
    # of 4.9 s): put back to the cold tail, the ratio leaves the band
    ("F4.warm-over-cold", ABSENT, f4(failing_s={"warm": 0.5})),
    # a tail a little slower warm (5.2 s against 4.9): the ratio holds with it put back
    ("F4.warm-over-cold", PRESENT, f4(failing_s={"warm": 5.2})),
    # no split by response code (runs before dnsperf -v kept it): a setting
    ("F4.warm-over-cold", UNMET_SETTING, f4(split=False)),
    # a cold pass nearer than the seed's (the lab's first WAN): a setting; a pass at
    # dnsperf's own ceiling: the machine
    ("F4.warm-over-cold", UNMET_SETTING, f4(cold_latency_ms=96.0)),
    ("F4.warm-over-cold", UNMET_MACHINE, f4(generator_max=1300)),
    # the seed's average, but the failing names fail at 1.9 s (the lab's first WAN): the
    # ratio would be the emulated tail's timing
    ("F4.warm-over-cold", UNMET_SETTING, f4(slowest_ms=1900.0)),
    ("F4.cold-q-effect", UNMET_SETTING, f4(slowest_ms=1900.0)),
    ("F4.warm-scales-with-q", PRESENT, f4()),
    # medians +22 % and +17 %, but each -q's trials overlap (a tail that sometimes holds the
    # pass back, as a 2-core lab measured): was "not reproduced", the rank test cannot tell
    ("F4.warm-scales-with-q", STRADDLES, f4(trials={
        ("warm", 100): [1204, 800, 1700, 1100, 1500], ("warm", 200): [1463, 900, 1750, 1300, 1600],
        ("warm", 300): [1710, 1000, 1800, 1500, 1650]})),
    ("F4.warm-scales-with-q", PRESENT, f4(trials={
        ("warm", 100): [1190, 1204, 1215, 1199, 1210], ("warm", 200): [1450, 1463, 1470, 1458,
                                                                       1466],
        ("warm", 300): [1700, 1710, 1722, 1705, 1715]})),
    # trials that tell the gains apart from +5 %: flat
    ("F4.warm-scales-with-q", ABSENT, f4({"200": 1.0, "300": 1.0}, trials={
        ("warm", 100): [1190, 1204, 1215, 1199, 1210], ("warm", 200): [1190, 1204, 1215, 1199,
                                                                       1210],
        ("warm", 300): [1190, 1204, 1215, 1199, 1210]})),
    ("F4.warm-scales-with-q", ABSENT, f4({"200": 1204 / 1463, "300": 1204 / 1710})),
    ("F4.warm-scales-with-q", REVERSED, f4({"200": 0.7, "300": 0.5})),
    ("F4.warm-scales-with-q", UNMET, f4(tail=0.001)),
    # passed by accident before: the -q 200 pass took 97 % of its slowest name's time, so
    # both steps have a pass that one name bounds, not -q
    ("F4.warm-scales-with-q", UNMET, f4(slowest_ms=bounded_at(200))),
    # -q 300 bounded: the 100 -> 200 step alone is judged
    ("F4.warm-scales-with-q", PRESENT, f4(slowest_ms=bounded_at(300))),
    ("F4.warm-scales-with-q", ABSENT, f4({"200": 1204 / 1463}, slowest_ms=bounded_at(300))),
    ("F4.warm-scales-with-q", UNMET, f4(slowest_ms=None)),  # not recorded
    ("F4.cold-latency", PRESENT, f4()),
    ("F4.cold-latency", ABSENT, f4(cold_latency_ms=21.0)),
    ("F4.cold-latency", REVERSED, f4(cold_latency_ms=2000.0)),
    ("F4.cold-latency", UNMET, cold_qps({})),
    # the seed's average, but the failing names fail at 1.9 s (the lab's first WAN: 250 ms
    # on sld-broken) where the seed's took ~4.9 s
    ("F4.cold-latency", ABSENT, f4(slowest_ms=1900.0)),
    # a 2 s dnsperf timeout (SCALE=ci): no answer can come as late as the seed's
    ("F4.cold-latency", UNMET_SETTING, f4(timeout_s=2.0, slowest_ms=1900.0)),
    ("F4.cold-latency", UNMET_SETTING, f4(slowest_ms=None)),
    ("F4.cold-q-effect", PRESENT, f4()),
    ("F4.cold-q-effect", ABSENT, cold_qps({100: 290, 200: 300, 300: 310})),  # -q does nothing
    ("F4.cold-q-effect", ABSENT, cold_qps({100: 290, 200: 630, 300: 1000})),  # still gains
    ("F4.cold-q-effect", REVERSED, cold_qps({100: 290, 200: 200, 300: 190})),
    ("F4.cold-q-effect", UNMET, f4(cold_latency_ms=21.0)),
    ("F4.cold-q-effect", UNMET, cold_qps({100: 290, 200: 630})),
    ("F4.cold-q-effect", UNMET, f4(generator_max=650)),  # -q 200 at 97 % of dnsperf's
    # a pass within 10 % of dnsperf's own ceiling for it (the run's phase=ceiling cell)
    # measured the generator; no ceiling in the run: nobody can tell
    ("F4.warm-scales-with-q", UNMET, f4(generator_max=1800)),  # -q 300: 1,710 is 95 %
    ("F4.warm-over-cold", UNMET, f4(generator_max=1300)),  # -q 100: 1,204 is 93 %
    ("F4.warm-scales-with-q", UNMET, f4(generator_max=None)),
    ("F4.warm-over-cold", UNMET, f4(generator_max=None)),
    # dnsperf's CPU share is not judged: it busy-waits while slow names hold its slots
    ("F4.warm-scales-with-q", PRESENT, f4(generator_cpu=99.4)),
    ("F4.warm-over-cold", PRESENT, f4(generator_cpu=99.4, generator_max=2000)),
]
