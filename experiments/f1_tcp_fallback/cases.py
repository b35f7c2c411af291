"""F1's claim cases: runs where each claim's effect is present (reproduced), absent or
reversed (not reproduced), or its precondition unmet (not applicable), built with this
package's `fixtures.py`. `tests/unit/test_analysis_claims.py` collects `CLAIM_CASES` from every
finding package and judges each run with the project's own `evaluate`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from analysis import synthetic
from analysis.claim import ABSENT, PRESENT, REVERSED, UNMET
from experiments.f1_tcp_fallback import fixtures as f1_fx

# --- builders: root -> run folder ---------------------------------------------------------------

def f1(before: float = 8000, after: float = 4000, tuned: float = 6000, *,
       after_kw: dict[str, Any] | None = None, tuned_kw: dict[str, Any] | None = None,
       extra: list[synthetic.CellData] | None = None, server: str = "bind916",
       ceiling_stair: float | None = None, **common: Any) -> Callable[[Path], Path]:
    """The seed's BIND (capacity halves, tuning 1.5x); `ceiling_stair`: the generator's
    ceiling comes from the run's `server=ceiling` stairs (as tcp-fallback writes it), not
    from a figure."""
    if ceiling_stair is not None:
        common = {**common, "ceiling": None}
        extra = [*(extra or []), f1_fx.ceiling_cell("before", ceiling_stair),
                 f1_fx.ceiling_cell("after", ceiling_stair)]

    def build(root: Path) -> Path:
        after_args = {"worst_ms": {float(r): 3241.0 for r in np.arange(0, 40001, 200)},
                      "tcp_share": 0.228, "figures": f1_fx.answer_sizes(23069, 230),
                      **common, **(after_kw or {})}
        cells = [f1_fx.fallback_cell(server, "before", "untuned", before, **common),
                 f1_fx.fallback_cell(server, "after", "untuned", after, **after_args),
                 f1_fx.fallback_cell(server, "after", "tuned", tuned,
                                    **{**common, **(tuned_kw or {})}), *(extra or [])]
        return f1_fx.fallback_run(root, cells)
    return build


def function_cell(changes: int, synced: int) -> synthetic.CellData:
    return synthetic.CellData({"server": "bind", "records": "after", "tuning": "function"},
                         {"function_changes": changes, "function_synced": synced,
                          "function_sync_max_s": 1.5, "function_passed": True})


def cache_model(onset: float | None, peak: float = 75.0) -> Callable[[Path], Path]:
    return lambda root: synthetic.write_run(root, "tcp-fallback-cache", [synthetic.CellData(
        {"distribution": "uniform"}, {"cache_size": 1000, "onset_records": onset,
                                      "max_amplification": peak})])



CLAIM_CASES: list[tuple[str, str, Callable[[Path], Path]]] = [
    ("F1.capacity-drop", PRESENT, f1()),
    ("F1.capacity-drop", ABSENT, f1(after=7600)),
    ("F1.capacity-drop", REVERSED, f1(after=9000)),
    ("F1.capacity-drop", UNMET, f1(3000, 2000, 2600, step=1000, start=1000)),  # quantised
    ("F1.capacity-drop", UNMET, f1(ceiling=8500)),  # generator-limited
    ("F1.capacity-drop", UNMET, f1(ceiling=None)),  # no ceiling measured
    ("F1.capacity-drop", UNMET, f1(stop=8000)),  # passed every step
    # the ceiling from the run's own `server=ceiling` stairs (dnsload vs dnsload serve)
    ("F1.capacity-drop", PRESENT, f1(ceiling_stair=30000)),
    ("F1.capacity-drop", ABSENT, f1(after=7600, ceiling_stair=30000)),
    ("F1.capacity-drop", UNMET, f1(ceiling_stair=8400)),  # before at 95 % of the ceiling
    ("F1.tuning-helps", PRESENT, f1()),
    ("F1.tuning-helps", ABSENT, f1(tuned=4000)),
    ("F1.tuning-helps", REVERSED, f1(tuned=3000, step=100)),
    ("F1.tuning-helps", ABSENT, f1(tuned=32000, ceiling=100000)),  # 8x: not the seed's 1.5x
    ("F1.tuning-helps", UNMET, f1(after=1000)),  # untuned: no step passed
    # passed by accident before: stair capacities that did not hold the seed's burst
    ("F1.tuning-helps", UNMET, f1(tuned_kw={"burst": False})),
    ("F1.tuning-helps", UNMET, f1(burst=None)),
    ("F1.latency-grows", PRESENT, f1()),
    ("F1.latency-grows", ABSENT, f1(after_kw={"worst_ms": {float(r): 420.0 for r in
                                                           range(2000, 9001, 200)}})),
    ("F1.latency-grows", REVERSED, f1(after_kw={"worst_ms": {float(r): 100.0 for r in
                                                             range(2000, 9001, 200)}})),
    # SYNs dropped and retried (1 s, 2 s) are the seed's own mechanism: judged, not excluded
    ("F1.latency-grows", PRESENT, f1(after_kw={"overflows": {4400.0: 16}})),
    ("F1.latency-grows", PRESENT, f1(after_kw={"syn_retrans": {4400.0: 1}})),
    ("F1.latency-grows", ABSENT, f1(after_kw={"syn_retrans": {4400.0: 1}, "worst_ms": {
        float(r): 420.0 for r in range(2000, 9001, 200)}})),
    # the after stair never broke (a CI-scale stair): far below the knee
    ("F1.latency-grows", UNMET, f1(after_kw={"stop": 3000})),
    ("F1.tcp-share", PRESENT, f1()),
    ("F1.tcp-share", ABSENT, f1(after_kw={"tcp_share": 0.10})),
    ("F1.tcp-share", REVERSED, f1(after_kw={"tcp_share": 0.40})),
    ("F1.full-answer", PRESENT, f1()),
    ("F1.full-answer", ABSENT, f1(after_kw={"figures": f1_fx.answer_sizes(10467, 0)})),
    # BIND 9.16's encoding of the same records is larger than the model's: not judged
    ("F1.full-answer", PRESENT, f1(after_kw={"figures": f1_fx.answer_sizes(24554, 230,
                                                                         full=22788)})),
    # every record counted, but far fewer bytes than the full answer
    ("F1.full-answer", ABSENT, f1(after_kw={"figures": f1_fx.answer_sizes(20000, 230)})),
    ("F1.full-answer", UNMET, f1(server="bind", after_kw={
        "figures": f1_fx.answer_sizes(10467, 0)})),
    ("F1.function-sync", PRESENT, f1(extra=[function_cell(3, 3)])),
    ("F1.function-sync", ABSENT, f1(extra=[function_cell(3, 1)])),
    ("F1.function-sync", UNMET, f1()),
    ("F1.cache-onset", PRESENT, cache_model(1050)),
    ("F1.cache-onset", ABSENT, cache_model(None, peak=1.0)),
    ("F1.cache-onset", REVERSED, cache_model(500)),
]
