"""Altered data for F5 (TCP sysctls): every profile's trials answer as the default's of the
same round, for `analysis.altered`'s check that a claim cannot pass without its effect.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.altered import Alteration, edit_csv
from analysis.rundata import Run


def profiles_like_default(run: Run) -> int:
    """Every profile's trials answer as the default's of the same round did (the same qps and
    latency): round by round, so the altered profile has the default's spread, not twenty
    copies of one round (which would differ from the default by that round's luck)."""
    defaults = {str(c.params.get("round")): c for c in run.cells_where(profile="default")
                if "phase" not in c.params and c.has("trials.csv")}
    changed = 0
    for cell in run.cells:
        source = defaults.get(str(cell.params.get("round")))
        if cell.params.get("profile") in (None, "default") or "phase" in cell.params \
                or source is None:
            continue
        default = source.csv("trials.csv")
        measures = [m for m in ("qps", "sent", "lost", "avg_latency_ms") if m in default.columns]

        def change(frame: pd.DataFrame, default: pd.DataFrame = default,
                   measures: list[str] = measures) -> pd.DataFrame:
            frame[measures] = frame[measures].astype(float)
            for load, rows in frame.groupby("load_pct"):
                same = default[default["load_pct"] == load][measures].to_numpy()
                if len(same):
                    frame.loc[rows.index, measures] = np.resize(same, (len(rows), len(measures)))
            return frame
        changed += edit_csv(cell.dir / "trials.csv", change)
    return changed


ALTERATIONS: dict[str, tuple[Alteration, ...]] = {
    "F5.tso-win-divisor": (profiles_like_default,),
    "F5.abort-on-overflow": (profiles_like_default,),
}
