"""Altered data for F2 (dnsdist listeners): the tuned variant answers and fails as the
untuned one did, for `analysis.altered`'s check that a claim cannot pass without its effect.
"""

from __future__ import annotations

from analysis.altered import Alteration, edit_figures
from analysis.rundata import Run


def tuned_like_untuned(run: Run) -> int:
    """dnsdist tuned answers and fails as untuned does."""
    base = run.cells_where(variant="untuned") or run.cells_where(variant="baseline")
    tuned = run.cells_where(variant="tuned")
    if not base or not tuned:
        return 0
    same = {k: base[0].figures[k] for k in ("qps", "failures_per_s") if k in base[0].figures}
    return edit_figures(tuned[0], lambda f: f.update(same))


ALTERATIONS: dict[str, tuple[Alteration, ...]] = {
    "F2.qps-gain": (tuned_like_untuned,),
    "F2.failures-drop": (tuned_like_untuned,),
}
