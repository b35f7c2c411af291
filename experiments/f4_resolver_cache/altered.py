"""Altered data for F4 (resolver cache): the warm passes answer as the cold ones, or every
warm -q as the smallest, for `analysis.altered`'s check that a claim cannot pass without its
effect.
"""

from __future__ import annotations

from analysis.altered import Alteration, edit_figures
from analysis.rundata import Cell, Run


def dnsperf_passes(run: Run, cache: str) -> list[Cell]:
    """The resolver's dnsperf passes of one cache state (resperf ramps have no -q)."""
    return [c for c in run.cells_where(cache=cache) if "outstanding" in c.params]


def warm_like_cold(run: Run) -> int:
    """The warm pass answers as the cold one at every -q."""
    changed = 0
    for warm in dnsperf_passes(run, "warm"):
        cold = run.cells_where(cache="cold", outstanding=warm.params["outstanding"])
        if cold:
            same = {k: cold[0].figures[k] for k in ("qps", "qps_trials") if k in cold[0].figures}
            changed += edit_figures(warm, lambda f, same=same: f.update(same))
    return changed


def warm_flat_in_q(run: Run) -> int:
    """Every warm -q answers as the smallest -q."""
    warm = sorted(dnsperf_passes(run, "warm"), key=lambda c: int(c.params["outstanding"]))
    if len(warm) < 2:
        return 0
    same = {k: warm[0].figures[k] for k in ("qps", "qps_trials") if k in warm[0].figures}
    return sum(edit_figures(c, lambda f: f.update(same)) for c in warm[1:])


ALTERATIONS: dict[str, tuple[Alteration, ...]] = {
    "F4.warm-over-cold": (warm_like_cold,),
    "F4.warm-scales-with-q": (warm_flat_in_q,),
}
