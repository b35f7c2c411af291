"""F5 plots: DNS-over-TCP qps per trial at the run's highest load, by sysctl profile, and the
trials' response time percentiles per profile and load."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from analysis import derived, style
from analysis.plots import latency, plot
from analysis.rundata import SETTING, NotApplicable, Run


@plot("trials_qps", title="DNS-over-TCP qps per trial at the run's highest load, by sysctl "
      "profile",
      caption="One dot per trial at the highest load of the run (the load the F5 claims judge); "
              "bar: median. dnsperf variance hides small effects. Lines: that load's target "
              "(a share of the measured capacity) and dnsperf's own ceiling at that target "
              "(the same command against a canned responder, same run).")
def trials_qps(run: Run, ax: Axes, notes: list[str]) -> None:
    cells = [c for c in run.cells if "profile" in c.params and "phase" not in c.params]
    if not cells:
        raise NotApplicable("no profile cells", cause=SETTING)
    # a profile's trials may sit in several cells (one per round): pooled per profile
    frames: dict[str, list[pd.DataFrame]] = {}
    for cell in cells:
        mine = frames.setdefault(str(cell.params["profile"]), [])
        if cell.has("trials.csv"):
            mine.append(cell.csv("trials.csv", ("load_pct", "qps")))
    loads = [float(f["load_pct"].max()) for fs in frames.values() for f in fs
             if f["load_pct"].notna().any()]
    if not loads:
        raise NotApplicable("no paced trials", cause=SETTING)
    top = max(loads)
    by_profile = {profile: [float(v) for f in fs for v in f.loc[f["load_pct"] == top, "qps"]]
                  for profile, fs in frames.items()}
    colours = style.colors_for(list(by_profile))
    for i, (profile, values) in enumerate(by_profile.items()):
        if not values:
            notes.append(f"profile {profile}: no trials at {top:.0f} % load")
            continue
        colour = colours[i]
        ax.bar(i, float(np.median(values)), width=0.6, color=colour, alpha=0.35)
        jitter = np.linspace(-0.15, 0.15, len(values))
        ax.plot(i + jitter, values, "o", color=colour)
    ax.set_xticks(range(len(by_profile)), list(by_profile), fontsize=13)
    medians = {p: float(np.median(v)) for p, v in by_profile.items() if v}
    if "default" in medians and "diiner" in medians:
        x = list(by_profile).index("diiner")
        ax.hlines(medians["default"] * SEED_DIINER_GAIN, x - 0.34, x + 0.34, colors=style.INK,
                  linewidth=3, label="seed: DIINER +8 % qps at 100 % load, scaled to default's "
                                     "median")
    ax.set_ylabel(f"answered at {top:.0f} % load (queries/s)")
    ceiling = derived.paced_ceiling(run)
    at = None if ceiling is None else ceiling[ceiling["load_pct"] == top]
    if at is None or at.empty:
        notes.append(f"no generator ceiling at {top:.0f} % load measured in this run")
        if ax.get_legend_handles_labels()[0]:
            ax.legend()
        return
    target, reached = float(at["target_qps"].iloc[0]), float(at["qps"].iloc[0])
    ax.axhline(target, linestyle="--", color=style.MUTED, label=f"target {target:,.0f} qps")
    ax.axhline(reached, linestyle=":", color="black",
               label=f"dnsperf ceiling {reached:,.0f} qps ({reached / target:.0%})")
    ax.legend()


SEED_DIINER_GAIN = 1.08  # the source: DIINER at 100 % load, qps +8 %


@plot("trial_latency", title="Response time percentiles per sysctl profile, by load",
      caption="dnsperf's latency histograms (-v) of every trial of a profile at a load, pooled: "
              "the slowest share of the queries (x) and how long they took at least (y), both "
              "log, as dns-shotgun draws it; a lower curve is faster. Lost queries count as "
              "slower than dnsperf's timeout.", panels=True)
def trial_latency(run: Run, fig: Any, notes: list[str]) -> list[str]:
    cells = [c for c in run.cells if "profile" in c.params and "phase" not in c.params]
    pooled: dict[float, dict[str, latency.Latencies]] = {}
    for cell in cells:
        if not cell.has("trials.csv"):
            continue
        trials = cell.csv("trials.csv", ("load_pct",))
        if "latency_file" not in trials.columns:
            continue
        for _, row in trials.iterrows():
            name = row["latency_file"]
            if not isinstance(name, str) or not name:
                continue
            if not cell.has(name):
                notes.append(f"{cell.label}: {name} is missing")
                continue
            lost = int(row["lost"]) if "lost" in row and pd.notna(row["lost"]) else 0
            found = latency.from_dnsperf_csv(cell.dir / name, lost)
            mine = pooled.setdefault(float(row["load_pct"]), {})
            profile = str(cell.params["profile"])
            mine[profile] = mine[profile] + found if profile in mine else found
    if not pooled:
        raise NotApplicable("the trials kept no latency histograms (LATENCY_HISTOGRAM=true "
                            "keeps dnsperf's)", cause=SETTING)
    order = [str(p) for p in run.params.get("profiles") or []]
    panels = []
    for load in sorted(pooled):
        by_profile = pooled[load]
        names = sorted(by_profile, key=lambda p: (order.index(p) if p in order else len(order),
                                                  p))
        panels.append((f"{load:.0f} % of the capacity",
                       [(name, by_profile[name]) for name in names]))
    timeout = float(run.params.get("timeout_s") or 0) * 1000 or None
    return latency.draw_panels(fig, panels, timeout_ms=timeout)


# what the seed published, as the legend of the plot that draws it says it (the figure
# layout test checks each is drawn and labelled)
PUBLISHED_IN_LEGEND = {"trials_qps": "+8 %"}
