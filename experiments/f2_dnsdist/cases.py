"""F2's claim cases: runs where each claim's effect is present (reproduced), absent or
reversed (not reproduced), or its precondition unmet (not applicable), built with this
package's `fixtures.py`. `tests/unit/test_analysis_claims.py` collects `CLAIM_CASES` from every
finding package and judges each run with the project's own `evaluate`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from analysis.claim import ABSENT, PRESENT, REVERSED, STRADDLES, UNMET, UNMET_MACHINE
from experiments.f2_dnsdist import fixtures as f2_fx

# --- builders: root -> run folder ---------------------------------------------------------------

def f2(**kw: Any) -> Callable[[Path], Path]:
    return lambda root: f2_fx.dnsdist_run(root, **{"untuned": 220000, "tuned": 430000,
                                                  "cpus": 16, **kw})


CLAIM_CASES: list[tuple[str, str, Callable[[Path], Path]]] = [
    ("F2.qps-gain", PRESENT, f2()),
    ("F2.qps-gain", ABSENT, f2(tuned=230000)),
    ("F2.qps-gain", REVERSED, f2(tuned=150000)),
    ("F2.qps-gain", ABSENT, f2(tuned=700000)),  # 3.2x: far beyond the seed
    ("F2.qps-gain", UNMET_MACHINE, f2(listeners=2)),  # a 2-core machine
    ("F2.qps-gain", UNMET, f2(ceiling=240000)),  # untuned at 92 % of the generator
    ("F2.qps-gain", UNMET, f2(ceiling=None)),
    # five trials a variant whose qps spread 10 %: the gain's interval across its 1.5x edge
    ("F2.qps-gain", STRADDLES, f2(tuned=340000, histograms=True, spread=0.1)),
    ("F2.qps-gain", PRESENT, f2(histograms=True, spread=0.02)),
    ("F2.failures-drop", PRESENT, f2()),
    ("F2.failures-drop", ABSENT, f2(tuned_fail=100.0)),
    ("F2.failures-drop", REVERSED, f2(tuned_fail=300.0)),
    ("F2.failures-drop", UNMET, f2(untuned_fail=0.0)),
    # judged over the trials where each kept its failures (run 7775: untuned 375-383
    # failed/s in 5 of 5 trials, tuned 0 in 5 of 5)
    ("F2.failures-drop", PRESENT, f2(histograms=True, untuned_fail=380.0)),
    ("F2.failures-drop", ABSENT, f2(histograms=True, untuned_fail=380.0, tuned_fail=50.0)),
    ("F2.failures-drop", REVERSED, f2(histograms=True, untuned_fail=380.0, tuned_fail=500.0)),
    # four of ten tuned trials failing 100/s: the median reads 0, the mean 40/s is not ~0
    ("F2.failures-drop", ABSENT, f2(histograms=True, trials_per_cell=10, untuned_fail=380.0,
                                    tuned_fail_trials=[0.0] * 6 + [100.0] * 4)),
    # tuned trials around the 1/s edge: the interval straddles it
    ("F2.failures-drop", STRADDLES, f2(histograms=True, untuned_fail=380.0,
                                       tuned_fail_trials=[0.0, 2.0, 0.5, 1.5, 1.0])),
    # an open-loop flood (kxdpgun): the ceiling is what it sent, failures count only when the
    # tuned front-end could carry the flood
    ("F2.qps-gain", PRESENT, f2(generator="kxdpgun")),
    # sent 600,000 qps, the sink answered 240,000: the ceiling is what was sent
    ("F2.qps-gain", PRESENT, f2(generator="kxdpgun", ceiling=600000)),
    ("F2.qps-gain", ABSENT, f2(generator="kxdpgun", tuned=230000)),
    ("F2.qps-gain", UNMET, f2(generator="kxdpgun", ceiling=240000)),
    ("F2.qps-gain", UNMET, f2(generator="kxdpgun", listeners=1)),  # 2 cores: 1 for dnsdist
    # a flood the untuned front-end carries (99.95 %), failing 100 of it a second
    ("F2.failures-drop", PRESENT, f2(generator="kxdpgun", flood_qps=220100, tuned=220100)),
    ("F2.failures-drop", ABSENT, f2(generator="kxdpgun", flood_qps=220100, tuned=220100,
                                    tuned_fail=50.0)),
    ("F2.failures-drop", UNMET, f2(generator="kxdpgun", flood_qps=900000)),  # tuned overrun
    # passed by accident before: the untuned front-end carried 51 % of a 430k flood, its
    # "failures" the flood's excess over its capacity
    ("F2.failures-drop", UNMET, f2(generator="kxdpgun", flood_qps=430000)),
    # ... and the case: untuned answered 128k of 150k ("22,000 -> 0 failed/s")
    ("F2.failures-drop", UNMET, f2(generator="kxdpgun", untuned=128000, tuned=150000,
                                   flood_qps=150000, untuned_fail=22000.0)),
]
