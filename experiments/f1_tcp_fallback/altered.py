"""Altered data for F1 (TCP fallback): the stair of one record set or tuning copied over
another's (stair.csv and the burst figures), the worst TAT made the same, the function test's
changes never arriving; for `analysis.altered`'s check that a claim cannot pass without its
effect.
"""

from __future__ import annotations

import pandas as pd

from analysis.altered import Alteration, copy_file, edit_csv, edit_figures
from analysis.rundata import Run


def stair_copied(run: Run, source: tuple[str, str], target: tuple[str, str]) -> int:
    changed = 0
    for server in {str(c.params.get("server")) for c in run.cells} - {"ceiling"}:
        src = run.cells_where(server=server, records=source[0], tuning=source[1])
        dst = run.cells_where(server=server, records=target[0], tuning=target[1])
        if src and dst:
            changed += copy_file(src[0], dst[0], "stair.csv")
            burst = {k: v for k, v in src[0].figures.items() if k.startswith("burst_")}
            changed += edit_figures(dst[0], lambda f, burst=burst: f.update(burst))
    return changed


def after_records_like_before(run: Run) -> int:
    """The new records cost nothing: the after stair is the before stair."""
    return stair_copied(run, ("before", "untuned"), ("after", "untuned"))


def tuning_like_untuned(run: Run) -> int:
    return stair_copied(run, ("after", "untuned"), ("after", "tuned"))


def after_latency_like_before(run: Run) -> int:
    """The after stair's worst TAT is the before stair's at every rate both ran."""
    changed = 0
    for before in run.cells_where(records="before", tuning="untuned"):
        after = run.cells_where(server=before.params.get("server"), records="after",
                                tuning="untuned")
        if not after or not before.has("stair.csv"):
            continue
        worst = before.csv("stair.csv").set_index("target_qps")["max_ms"]

        def change(frame: pd.DataFrame, worst: pd.Series = worst) -> pd.DataFrame:
            same = frame["target_qps"].map(worst)
            frame["max_ms"] = same.fillna(frame["max_ms"])
            return frame
        changed += edit_csv(after[0].dir / "stair.csv", change)
    return changed


def changes_never_arrive(run: Run) -> int:
    return sum(edit_figures(c, lambda f: f.update(function_synced=0))
               for c in run.cells if c.figure("function_changes", optional=True))


ALTERATIONS: dict[str, tuple[Alteration, ...]] = {
    "F1.capacity-drop": (after_records_like_before,),
    "F1.tuning-helps": (tuning_like_untuned,),
    "F1.latency-grows": (after_latency_like_before,),
    "F1.function-sync": (changes_never_arrive,),
}
