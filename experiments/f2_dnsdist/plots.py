"""F2 plots: dnsdist's answered queries per variant beside the generator's ceiling, and (with
dnsperf's latency histograms) the response time percentiles per variant."""

from __future__ import annotations

import pandas as pd
from matplotlib.axes import Axes

from analysis import style
from analysis.plots import latency, plot
from analysis.rundata import SETTING, NotApplicable, Run


@plot("dnsdist_qps", title="dnsdist answered queries per second by variant",
      caption="ceiling: the load generator against the cheapest responder, in the same run.")
def dnsdist_qps(run: Run, ax: Axes, notes: list[str]) -> None:
    cells = run.cells_where(variant="*") or run.cells_where(profile="*")
    if not cells:
        raise NotApplicable("no cells with a variant or profile param", cause=SETTING)
    labels = [str(c.params.get("variant", c.params.get("profile"))) for c in cells]
    values = [float(c.figure("qps")) for c in cells]
    failures = [float(c.figure("failures_per_s", optional=True) or 0) for c in cells]
    ceiling = dict(zip(labels, values, strict=True)).get("ceiling")
    sent = next((_offered(c) for c, label in zip(cells, labels, strict=True)
                 if label == "ceiling"), None)
    shown = [i for i, label in enumerate(labels) if label != "ceiling"] or list(range(len(cells)))
    tallest = max(values[i] for i in shown) * SEED_GAIN
    if ceiling is not None and ceiling <= style.OFF_SCALE * max(tallest, 1.0):
        shown = list(range(len(cells)))  # close enough to the variants to be drawn as a bar
    elif ceiling is not None:
        # drawn to scale it would flatten every variant: said in the legend instead
        ax.plot([], [], linestyle="--", color=style.MUTED,
                label=f"generator's ceiling: {sent or ceiling:,.0f} qps"
                      + (" sent" if sent else "") + " (off this scale)")
    names = [labels[i] for i in shown]
    bars = ax.bar(range(len(shown)), [values[i] for i in shown], width=0.6,
                  color=style.colors_for(names))
    # an open-loop flood's ceiling is the rate it sent; its bar is what a sink answered of it.
    # A closed loop's is what the sink answered: below a variant (run 6291: NSD 153k, dnsdist
    # 181k) it is the sink's limit, and the bar says so rather than pose as the generator's.
    variants = [v for v, label in zip(values, labels, strict=True) if label != "ceiling"]
    sink_bound = sent is None and ceiling is not None and bool(variants) \
        and ceiling < max(variants)

    def bar_text(i: int) -> str:
        if labels[i] == "ceiling" and sent:
            return f"{values[i]:,.0f} qps answered\nof {sent:,.0f} sent"
        if labels[i] == "ceiling" and sink_bound:
            return f"{values[i]:,.0f} qps\nthe sink's limit"
        return f"{values[i]:,.0f} qps\n{failures[i]:,.0f} failed/s"

    ax.bar_label(bars, labels=[bar_text(i) for i in shown], fontsize=12, color=style.INK)
    ax.set_xticks(range(len(shown)), ["ceiling (a sink answers)" if name == "ceiling"
                                      else name for name in names])
    ax.set_ylabel("answered queries (queries/s)")
    ax.yaxis.set_major_formatter(style.THOUSANDS)
    if "untuned" in names and "tuned" in names:
        base = values[labels.index("untuned")]
        x = names.index("tuned")
        ax.hlines(base * SEED_GAIN, x - 0.34, x + 0.34, colors=style.INK, linewidth=3,
                  label="seed: 8 reusePort listeners = 1.9x one (226k -> 431k qps), "
                        "scaled to this untuned bar")
    if ax.get_legend_handles_labels()[0]:
        ax.legend()


def _offered(cell) -> float | None:
    """The rate an open-loop flood sent (the ceiling cell's `ceiling_qps` when it is not the
    answered `qps`), else None."""
    ceiling = cell.figure("ceiling_qps", optional=True)
    if ceiling is None or float(ceiling) == float(cell.figure("qps")):
        return None
    return float(ceiling)


SEED_GAIN = 1.9  # seed: ~220-232k qps with one listener -> 417-445k with 8 reusePort ones


@plot("dnsdist_latency", title="dnsdist response time percentiles by variant (dnsperf)",
      y_from_zero=False,
      caption="dnsperf's latency histograms (-v) of each variant's trials, pooled: the slowest "
              "share of the queries (x) and how long they took at least (y), both log "
              "(dns-shotgun's way); ceiling: the same command against the sink. Queries "
              "without an answer count as slower than dnsperf's timeout: LATENCY_HISTOGRAM=true "
              "keeps them (off by default); kxdpgun's flood measures no latency.")
def dnsdist_latency(run: Run, ax: Axes, notes: list[str]) -> list[str]:
    series = []
    for cell in run.cells_where(variant="*"):
        if not cell.has("trials.csv"):
            continue
        trials = cell.csv("trials.csv", ("trial",))
        pooled: latency.Latencies | None = None
        for _, row in trials.iterrows():
            name = f"latency-{int(row['trial'])}.csv"
            if cell.has(name):
                lost = int(row["lost"]) if "lost" in row and pd.notna(row["lost"]) else 0
                found = latency.from_dnsperf_csv(cell.dir / name, lost)
                pooled = found if pooled is None else pooled + found
        if pooled is not None:
            series.append((str(cell.params["variant"]), pooled))
    if not series:
        generator = str(run.params.get("generator") or "?")
        remedy = ("LATENCY_HISTOGRAM=true keeps dnsperf's" if generator == "dnsperf" else
                  "GENERATOR=dnsperf LATENCY_HISTOGRAM=true keeps dnsperf's")
        raise NotApplicable(f"no latency kept ({generator}): {remedy}", cause=SETTING)
    timeout = float(run.params.get("timeout_s") or 0) * 1000 or None
    colours = [style.MUTED if label == "ceiling" else colour for (label, _), colour
               in zip(series, style.colors_for([label for label, _ in series]), strict=True)]
    return latency.draw(ax, series, timeout_ms=timeout, colours=colours)


# what the seed published, as the legend of the plot that draws it says it (the figure
# layout test checks each is drawn and labelled)
PUBLISHED_IN_LEGEND = {"dnsdist_qps": "1.9x"}
