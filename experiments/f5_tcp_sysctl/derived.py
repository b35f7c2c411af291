"""F5 derived figures: every trial of a tcp-sysctl run in one frame (with latency percentiles
from the trials' raw histograms), and the run's `stats.json` (Kruskal-Wallis, then Dunn's and
Tukey's tests against the control profile, per load and measure), which the claims quote.

`derive(run)` is the finding's derive hook: the analysis pipeline calls it before the claims.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis.rundata import Run
from analysis.stats import compare

PERCENTILES = (50, 90, 99)
MEASURES = ("qps", "avg_latency_ms", "p99_latency_ms", "lost")


def histogram_percentile(path: Path, percentile: float) -> float | None:
    """The `percentile` of a latency histogram (columns `upper_s`, `count`) in ms: the upper
    edge of the bin holding it (None without answers)."""
    frame = pd.read_csv(path)
    total = int(frame["count"].sum())
    if total == 0:
        return None
    cumulative = frame["count"].cumsum().to_numpy()
    index = int(np.searchsorted(cumulative, percentile / 100 * total, side="left"))
    return float(frame["upper_s"].iloc[min(index, len(frame) - 1)]) * 1000


def add_percentiles(frame: pd.DataFrame, cell_dir: Path) -> pd.DataFrame:
    """`p<q>_latency_ms` columns from each trial's raw latency histogram (`latency_file`)."""
    if "latency_file" not in frame.columns:
        return frame
    for q in PERCENTILES:
        frame[f"p{q}_latency_ms"] = [
            histogram_percentile(cell_dir / str(name), q)
            if isinstance(name, str) and name and (cell_dir / name).exists() else None
            for name in frame["latency_file"]]
    return frame


def read_trials(run: Run) -> pd.DataFrame:
    """Every cell's `trials.csv` of a run, with the cell's scalar params as columns and the
    latency percentiles of trials that kept a histogram."""
    frames = []
    for cell in run.cells:
        if not cell.has("trials.csv"):
            continue
        frame = add_percentiles(cell.csv("trials.csv").copy(), cell.dir)
        for key, val in cell.params.items():
            if isinstance(val, str | int | float) and key not in frame.columns:
                frame[key] = val
        frames.append(frame)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def write_stats(run: Run) -> dict[str, Any]:
    """`stats.json` of a tcp-sysctl run: per load and measure, Kruskal-Wallis over every
    profile cell, then Dunn's and Tukey's tests against the control (the first profile)."""
    frame = read_trials(run)
    if frame.empty or "load_pct" not in frame.columns or "profile" not in frame.columns:
        return {}
    frame = frame[frame["load_pct"].notna()]  # the capacity cell's trials have no load
    profiles = list(run.params.get("profiles") or []) or sorted(frame["profile"].unique())
    control = "default" if "default" in profiles else str(profiles[0])
    out: dict[str, Any] = {"control": control}
    for load, part in frame.groupby("load_pct"):
        key = f"l{int(load)}"
        out[key] = {}
        if part["profile"].nunique() < 2:
            continue
        for measure in MEASURES:
            if measure in part.columns and part[measure].notna().all():
                out[key][measure] = compare(part, "profile", measure, control).to_dict()
    (run.dir / "stats.json").write_text(json.dumps(out, indent=1, default=str))
    return out


def derive(run: Run) -> None:
    """The analysis pipeline's hook: the statistics the F5 claims quote."""
    write_stats(run)
