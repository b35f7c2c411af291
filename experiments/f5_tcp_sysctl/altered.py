"""Altered data for F5 (TCP sysctls): every profile's trials answer as the default's of the
same round, or (for the settings published as making no difference) the buffer-only
profiles answer 15 % better, for `analysis.altered`'s check that a claim cannot pass
without its effect.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.altered import Alteration, edit_csv
from analysis.rundata import Run
from experiments.f5_tcp_sysctl.claims import NO_EFFECT_KEYS, changed_keys, profile_cells


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


def buffer_profiles_better(run: Run) -> int:
    """The profiles that change only buffer sizes (or the qdisc, optmem_max, file-max) answer
    15 % more qps with 15 % less latency: an effect where the seed found none."""
    def change(frame: pd.DataFrame) -> pd.DataFrame:
        frame["qps"] = frame["qps"].astype(float) * 1.15
        frame["avg_latency_ms"] = frame["avg_latency_ms"].astype(float) * 0.85
        return frame
    return sum(edit_csv(cell.dir / "trials.csv", change)
               for cells in profile_cells(run).values()
               if (keys := changed_keys(run, cells[0])) and set(keys) <= NO_EFFECT_KEYS
               for cell in cells)


ALTERATIONS: dict[str, tuple[Alteration, ...]] = {
    "F5.tso-win-divisor": (profiles_like_default,),
    "F5.abort-on-overflow": (profiles_like_default,),
    "F5.abort-on-overflow.latency": (profiles_like_default,),
    "F5.abort-on-overflow.lost": (profiles_like_default,),
    "F5.tcp-sack": (profiles_like_default,),
    "F5.no-effect": (buffer_profiles_better,),
}
