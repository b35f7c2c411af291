"""Plots of the shared procedures (experiments/procedures/): what a user's own comparison
shows, drawn in the lab's one style like every finding's plots."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from analysis import style
from analysis.plots import latency, plot
from analysis.rundata import SETTING, Cell, NotApplicable, Run
from dnslab.thresholds import GENERATOR_BOUND_SHARE
from experiments.procedures.compare import CEILING


def _trials(run: Run) -> dict[str, pd.DataFrame]:
    """Each compared cell's trials.csv, by its server (`ceiling` for the generator's)."""
    found = {str(c.params["server"]): c.csv("trials.csv", ("transport", "qps"))
             for c in run.cells if "server" in c.params and c.has("trials.csv")}
    if not found:
        raise NotApplicable("no compare cells with trials", cause=SETTING)
    return found


def _cells(run: Run) -> dict[str, Cell]:
    return {str(c.params["server"]): c for c in run.cells if "server" in c.params}


@plot("compare_qps", title="Answers per second by server and transport, with dnsperf's own "
      "ceiling",
      caption="One dot per dnsperf run (closed loop: -c clients, -q in flight), bar: median. "
              "Dashed: the same dnsperf command against a canned responder on the servers' "
              "cores in the same run, its best run: the most the generator reaches here; a "
              "server within 10 % of it measured the generator, not itself. On a busy "
              "machine runs spread: compare medians, not single dots.")
def compare_qps(run: Run, ax: Axes, notes: list[str]) -> list[str]:
    trials = _trials(run)
    transports = [str(t) for t in run.params.get("transports") or []]
    servers = [s for s in trials if s != CEILING]
    if not servers:
        raise NotApplicable("no server cell finished", cause=SETTING)
    colours = style.colors_for(servers)
    width = 0.8 / len(servers)
    readings = []
    ceiling = trials.get(CEILING)
    for t_index, transport in enumerate(transports):
        top = None
        if ceiling is not None:
            values = ceiling.loc[ceiling["transport"] == transport, "qps"].astype(float)
            # the best run: whatever else the machine ran pulls a run down, never up
            top = float(values.max()) if len(values) else None
        if top is not None:
            ax.hlines(top, t_index - 0.45, t_index + 0.45, colors=style.INK, linestyles="--",
                      linewidth=2, label="dnsperf's ceiling (best run against a canned "
                      "responder, same run)" if t_index == 0 else None)
        for s_index, server in enumerate(servers):
            frame = trials[server]
            values = [float(v) for v in frame.loc[frame["transport"] == transport, "qps"]]
            if not values:
                notes.append(f"{server}: no {transport} runs")
                continue
            x = t_index - 0.4 + width * (s_index + 0.5)
            median = float(np.median(values))
            ax.bar(x, median, width=width * 0.9, color=colours[s_index], alpha=0.35,
                   label=server if t_index == 0 else None)
            ax.plot(x + np.linspace(-width / 5, width / 5, len(values)), values, "o",
                    color=colours[s_index])
            said = f"{server} over {transport}: {median:,.0f} qps (median of {len(values)})"
            if top:
                share = median / top
                said += f", {share:.0%} of dnsperf's ceiling {top:,.0f}"
                if share >= GENERATOR_BOUND_SHARE:
                    said += ": generator-limited, the server's own figure is higher"
                if max(values) > top * 1.05:
                    said += (f"; one run ({max(values):,.0f}) beat the ceiling: the machine's "
                             "other load varied during the run, so the ceiling is a lower "
                             "bound (rerun on a quiet machine)")
            readings.append(said)
    if ceiling is None:
        notes.append("no generator ceiling in this run (CEILING=false): a figure may be "
                     "dnsperf's, not the server's")
    ax.set_xticks(range(len(transports)), [t.upper() for t in transports], fontsize=14)
    ax.yaxis.set_major_formatter(style.THOUSANDS)
    ax.set_ylabel("answers per second")
    ax.legend()
    return readings


@plot("compare_latency", title="Response time percentiles by server, one panel per transport",
      caption="dnsperf's latency histograms (-v) of a server's runs over a transport, pooled: "
              "the slowest share of the queries (x) and how long they took at least (y), both "
              "log, as dns-shotgun draws it; a lower curve is faster. Closed loop: each "
              "server is loaded as hard as it answers, so its queueing shows. Lost queries "
              "count as slower than dnsperf's timeout.", panels=True)
def compare_latency(run: Run, fig: Any, notes: list[str]) -> list[str]:
    transports = [str(t) for t in run.params.get("transports") or []]
    pooled: dict[str, dict[str, latency.Latencies]] = {t: {} for t in transports}
    for server, cell in _cells(run).items():
        if not cell.has("trials.csv"):
            continue
        label = "dnsperf's ceiling" if server == CEILING else server
        for _, row in cell.csv("trials.csv", ("transport", "latency_file")).iterrows():
            name = row["latency_file"]
            if not isinstance(name, str) or not cell.has(name):
                notes.append(f"{cell.label}: latency file {name} missing")
                continue
            found = latency.from_dnsperf_csv(cell.dir / name, int(row.get("lost", 0) or 0))
            mine = pooled.setdefault(str(row["transport"]), {})
            mine[label] = mine[label] + found if label in mine else found
    panels = [(transport.upper(), list(by_server.items()))
              for transport, by_server in pooled.items() if by_server]
    if not panels:
        raise NotApplicable("no latency histograms kept", cause=SETTING)
    timeout = float(run.params.get("timeout_s") or 0) * 1000 or None
    return latency.draw_panels(fig, panels, timeout_ms=timeout)
