"""F4 plots: resolver qps cold vs warm by outstanding queries, with dnsperf's ceiling, the
resperf ramps, and the passes' response time percentiles against the emulated WAN's round
trips."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.ticker import MaxNLocator

from analysis import style
from analysis.plots import latency, plot
from analysis.rundata import SETTING, NotApplicable, Run
from dnslab.errors import LabError


def grouped_bars(run: Run, ax: Axes, notes: list[str], figure: str, group: str, series: str,
                 ylabel: str) -> dict[tuple[Any, Any], tuple[float, float]]:
    """Bars of `figure`, one cluster per value of param `group`, one bar per `series` value;
    returns where each bar stands: (group value, series value) -> (x, height)."""
    drawn: dict[tuple[Any, Any], tuple[float, float]] = {}
    cells = [c for c in run.cells if group in c.params and series in c.params]
    if not cells:
        raise NotApplicable(f"no cells with params {group} and {series}", cause=SETTING)
    groups = sorted({c.params[group] for c in cells}, key=str)
    names = sorted({c.params[series] for c in cells}, key=str)
    width = 0.8 / len(names)
    colours = style.colors_for([str(name) for name in names])
    for j, name in enumerate(names):
        xs, ys = [], []
        for i, g in enumerate(groups):
            for cell in cells:
                if cell.params[group] == g and cell.params[series] == name:
                    try:
                        ys.append(float(cell.figure(figure)))
                        xs.append(i + (j - (len(names) - 1) / 2) * width)
                        drawn[(g, name)] = (xs[-1], ys[-1])
                    except (LabError, TypeError) as exc:
                        notes.append(f"{cell.label}: {getattr(exc, 'message', exc)}")
        bars = ax.bar(xs, ys, width=width * 0.95, label=f"{series}={name}",
                      color=colours[j])
        ax.bar_label(bars, labels=[f"{y:,.0f}" for y in ys], fontsize=12, color=style.INK)
    ax.set_xticks(np.arange(len(groups)), [f"{group}={g}" for g in groups])
    ax.set_ylabel(ylabel)
    ax.yaxis.set_major_formatter(style.THOUSANDS)
    ax.legend()
    return drawn


@plot("resperf_ramp", panels=True,
      title="resperf ramp: responses vs offered rate, cold and warm cache",
      caption="One panel per ramp, each on its own scale (the cold ramp tops out far below "
              "the warm one). resperf raises the offered rate steadily up to its -m; where "
              "responses stop following the dotted diagonal, the resolver has reached its "
              "capacity. A ramp whose responses follow the diagonal to its top found no knee: "
              "the resolver's capacity is above that top.")
def resperf_ramp(run: Run, fig: Any, notes: list[str]) -> None:
    cells = run.cells_where(tool="resperf")
    if not cells:
        raise NotApplicable("no resperf ramp cells in this run", cause=SETTING)
    colours = style.colors_for([str(c.params.get("cache")) for c in cells])
    axes = fig.subplots(1, len(cells), squeeze=False)[0]
    for ax, cell, colour in zip(axes, cells, colours, strict=True):
        style.apply(ax)
        ramp = cell.csv("resperf.csv", ("target_qps", "responses_per_s"))
        offered, answered = ramp["target_qps"], ramp["responses_per_s"]
        ax.plot(offered, answered, color=colour, linewidth=2.5,
                label=f"responses per second, cache {cell.params.get('cache')}")
        top = max(float(offered.max()), 1.0)
        ax.plot([0, top], [0, top], linestyle=":", color=style.MUTED,
                label="responses = offered")
        if "failures_per_s" in ramp.columns:
            ax.plot(offered, ramp["failures_per_s"], color=style.INK, linewidth=1,
                    label="failures per second")
        peak = float(answered.max())
        knee = float(answered.iloc[-1]) < KNEE_SHARE * float(offered.iloc[-1])
        ax.set_title(f"cache {cell.params.get('cache')}: peak {peak:,.0f} responses/s"
                     + ("" if knee else f"\n(no knee up to the ramp's top, {top:,.0f} offered)"),
                     fontsize=14)
        ax.set_xlabel("offered rate (queries/s)")
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_locator(MaxNLocator(5))
            axis.set_major_formatter(style.THOUSANDS)
    axes[0].set_ylabel("per second")
    handles = {line.get_label(): line for ax in axes for line in ax.get_lines()}
    fig.legend(list(handles.values()), list(handles), ncol=min(len(handles), 2),
               frameon=False, fontsize=12)


KNEE_SHARE = 0.95  # responses below this share of the offered rate at the ramp's top: a knee


@plot("cache_qps", title="Resolver qps, cold vs warm cache, by outstanding queries (-q)",
      caption="Dashed: dnsperf's own ceiling for the same pass at that -q (against a canned "
              "responder, in this run); a bar near it measured the generator.")
def cache_qps(run: Run, ax: Axes, notes: list[str]) -> None:
    bars = grouped_bars(run, ax, notes, "qps", "outstanding", "cache",
                        "dnsperf throughput (queries/s)")
    groups = sorted({g for g, _ in bars}, key=str)
    width = 0.8 / max(len({s for _, s in bars}), 1)
    said = False
    for q in groups:
        if (q, "cold") in bars and (q, "warm") in bars:
            x, _ = bars[(q, "warm")]
            cold = bars[(q, "cold")][1]
            # beside the warm bar, not over it: its value label stays readable
            side = x + width * 0.5 + 0.04
            ax.plot([side, side], [SEED_LOW * cold, SEED_HIGH * cold], color=style.INK,
                    linewidth=5, solid_capstyle="butt",
                    label=None if said else "seed: warm = 2.3-4.2x cold (scaled to this cold bar)")
            said = True
    ceilings = run.cells_where(phase="ceiling")
    if not ceilings:
        notes.append("no generator ceiling in this run")
        ax.legend()
        return
    tallest = max((y for _, y in bars.values()), default=0.0) * SEED_HIGH
    found = {q: ceilings[0].figure(f"ceiling_qps_q{q}", optional=True) for q in groups}
    values = {q: float(v) for q, v in found.items() if v is not None}
    if values and min(values.values()) > style.OFF_SCALE * max(tallest, 1.0):
        # drawn to scale it would flatten every bar: said in the legend instead
        ax.plot([], [], linestyle="--", color=style.MUTED,
                label=f"dnsperf's ceiling: {min(values.values()):,.0f}+ qps (off this scale)")
    else:
        for i, q in enumerate(groups):
            if q in values:
                ax.hlines(values[q], i - 0.45, i + 0.45, linestyles="--", color=style.MUTED,
                          label="dnsperf's ceiling" if i == 0 else None)
    ax.legend()


SEED_LOW, SEED_HIGH = 2.3, 4.2  # seed: warm/cold 1,463/630 (-q 200) .. 1,204/290 (-q 100)


def wan_marks(run: Run) -> list[latency.Mark]:
    """The emulated internet's round trips, per tier, as the cells ran them (the calibrated
    shapes, meta.json `wan_calibrated`, else the WAN parameter): one to a second-level
    server, and root + TLD + SLD, a name whose TLD the resolver has not cached."""
    wan = (run.meta.get("wan_calibrated") or {}).get("wan") or run.params.get("wan") or {}

    def delay(tier: str) -> float:
        return float((wan.get(tier) or {}).get("delay_ms") or 0)

    marks = []
    if delay("sld"):
        marks.append(latency.Mark(delay("sld"), f"WAN: a round trip to a second-level server "
                                                f"(+{delay('sld'):g} ms)"))
    chain = delay("root") + delay("tld") + delay("sld")
    if chain > delay("sld") > 0:
        marks.append(latency.Mark(chain, f"WAN: root + TLD + SLD round trips ({chain:g} ms)"))
    return marks


@plot("cache_latency", title="Resolver response time percentiles, cold and warm cache, by -q",
      y_from_zero=False,
      caption="dnsperf's latency histograms (-v) of the measured passes, pooled over the "
              "trials: the slowest share of the queries (x) and how long they took at least "
              "(y), both log (dns-shotgun's way); a lower curve is faster. The emulated WAN's "
              "round trips are marked: a cold name waits for them, a warm one does not. Lost "
              "queries count as slower than dnsperf's timeout.")
def cache_latency(run: Run, ax: Axes, notes: list[str]) -> list[str]:
    cells = sorted((c for c in run.cells if "cache" in c.params and "outstanding" in c.params
                    and c.params.get("tool") != "resperf" and "phase" not in c.params),
                   key=lambda c: (str(c.params["cache"]) != "cold", int(c.params["outstanding"])))
    series = []
    for cell in cells:
        if not cell.has("trials.csv"):
            continue
        trials = cell.csv("trials.csv", ("trial",))
        pooled: latency.Latencies | None = None
        for _, row in trials.iterrows():
            name = f"latency-{int(row['trial'])}.csv"
            if not cell.has(name):
                continue
            lost = int(row["lost"]) if "lost" in row and pd.notna(row["lost"]) else 0
            found = latency.from_dnsperf_csv(cell.dir / name, lost)
            pooled = found if pooled is None else pooled + found
        if pooled is not None:
            series.append((f"{cell.params['cache']}, -q {cell.params['outstanding']}", pooled))
    if not series:
        raise NotApplicable("the passes kept no latency histograms (LATENCY_HISTOGRAM=true "
                            "keeps dnsperf's)", cause=SETTING)
    # a colour per cache state, darker with more outstanding queries
    shades = {"cold": ["#9ecae1", "#4292c6", "#08519c"],
              "warm": ["#fdbe85", "#f16913", "#a63603"]}
    colours, used = [], {"cold": 0, "warm": 0}
    for label, _ in series:
        state = label.split(",")[0]
        palette = shades.get(state, style.PALETTE)
        colours.append(palette[min(used.get(state, 0), len(palette) - 1)])
        used[state] = used.get(state, 0) + 1
    timeout = float(run.params.get("timeout_s") or 0) * 1000 or None
    return latency.draw(ax, series, marks=wan_marks(run), timeout_ms=timeout, colours=colours)


# what the seed published, as the legend of the plot that draws it says it (the figure
# layout test checks each is drawn and labelled)
PUBLISHED_IN_LEGEND = {"cache_qps": "2.3-4.2x"}
