"""F6 plots: each server's answered queries per transport beside the generator's ceiling
for that transport, each transport against the server's own UDP beside the seed's ratios,
and the answer latency percentiles per transport under an emulated round trip."""

from __future__ import annotations

from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.patches import Patch

from analysis import style
from analysis.plots import latency, plot
from analysis.rundata import SETTING, NotApplicable, Run
from experiments.f6_transport_cost import derived
from experiments.f6_transport_cost.derived import LABELS, PER_QUERY, PERSISTENT

WIDTH = 0.8
# one colour per transport on every plot of the finding
COLOURS = dict(zip(derived.TRANSPORTS, style.colors_for(list(derived.TRANSPORTS)), strict=True))


def _legend(ax: Axes, colours: dict[str, Any], shown: list[derived.Measured]) -> None:
    """The lines drawn so far, a plain swatch per transport, and each hatch the bars use."""
    handles, _ = ax.get_legend_handles_labels()
    handles += [Patch(color=colour, label=label) for label, colour in colours.items()]
    if any(m.limited for m in shown):
        handles.append(Patch(facecolor="white", edgecolor=style.INK, hatch="//",
                             label="generator-limited"))
    if any(m.above_ceiling for m in shown):
        handles.append(Patch(facecolor="white", edgecolor=style.INK, hatch="..",
                             label="above the ceiling cell (its responder's limit)"))
    if any(m.out_of_regime() and not m.limited and not m.above_ceiling for m in shown):
        handles.append(Patch(facecolor="white", edgecolor=style.INK, hatch="xx",
                             label="out of the source's regime"))
    ax.legend(handles=handles)


def _hatch(*figures: derived.Measured) -> str | None:
    """"//" when one is the generator's figure, ".." when one is above the ceiling cell
    (the responder's limit: the generator's own unknown), "xx" when one is out of the
    source's regime (`Measured.out_of_regime`), else plain."""
    if any(m.limited for m in figures):
        return "//"
    if any(m.above_ceiling for m in figures):
        return ".."
    return "xx" if any(m.out_of_regime() for m in figures) else None


def _figures(run: Run) -> dict[str, dict[str, derived.Measured]]:
    found: dict[str, dict[str, derived.Measured]] = {}
    for server in derived.server_cells(run):
        for transport in derived.TRANSPORTS:
            measured = derived.measured(run, server, transport)
            if measured is not None:
                found.setdefault(server, {})[transport] = measured
    if not found:
        raise NotApplicable("no server cell with trials in this run", cause=SETTING)
    return found


@plot("transport_qps", title="Answered queries per second per server and transport",
      caption="Bars: the median of each transport's trials (dots), closed loop with the run's "
              "connections and queries in flight; hatched: within 10 % of the generator's "
              "own ceiling for that transport (the best round of its load against dnsload "
              "serve, same run, same cores), so the bar is the generator's, not the server's; "
              "dotted: above that ceiling, which was then the responder's limit (the "
              "generator's own unknown); cross-hatched: out of "
              "the source's regime (its CSVs at 8 clients: the server's threads at least 71 % "
              "busy, over UDP 92-98 % of the slots held by lost queries waiting out the "
              "timeout, over TCP and TLS none). Short black lines: those ceilings (best "
              "round); those off the scale are given in the legend.")
def transport_qps(run: Run, ax: Axes, notes: list[str]) -> list[str]:
    figures = _figures(run)
    servers = list(figures)
    transports = [t for t in derived.TRANSPORTS if any(t in f for f in figures.values())]
    colours = COLOURS
    width = WIDTH / len(transports)
    tallest = max(m.qps for f in figures.values() for m in f.values())
    off_scale: dict[str, float] = {}
    readings = []
    for i, server in enumerate(servers):
        said = []
        for j, transport in enumerate(transports):
            m = figures[server].get(transport)
            x = i - WIDTH / 2 + width * (j + 0.5)
            if m is None:
                continue
            hatch = _hatch(m)
            ax.bar(x, m.qps, width=width * 0.9, color=colours[transport], hatch=hatch,
                   edgecolor=style.INK if hatch else None)
            trials = derived.trials(derived.server_cells(run)[server])
            values = trials[(trials["transport"] == transport)
                            & (trials["mode"] == PERSISTENT)]["qps"].astype(float)
            ax.plot(np.full(len(values), x), values, "o", color=style.INK, markersize=4)
            if m.ceiling is not None and m.ceiling <= style.OFF_SCALE * tallest:
                ax.hlines(m.ceiling, x - width * 0.45, x + width * 0.45, colors="black",
                          linewidth=2.5)
            elif m.ceiling is not None:
                off_scale[transport] = m.ceiling
            said.append(f"{LABELS[transport]} {m.qps:,.0f}"
                        + (" (generator-limited)" if m.limited else
                           " (above the ceiling cell: its responder's limit)"
                           if m.above_ceiling else
                           " (out of the source's regime: " + "; ".join(
                               what for what, _ in m.out_of_regime()) + ")"
                           if m.out_of_regime() else ""))
        readings.append(f"{derived.label(run, server)}: " + ", ".join(said))
    ax.plot([], [], color="black", linewidth=2.5, label="generator's ceiling per transport")
    if off_scale:
        ax.plot([], [], linestyle="none", label="ceilings off this scale: " + ", ".join(
            f"{LABELS[t]} {v:,.0f}" for t, v in off_scale.items()))
    ax.set_xticks(range(len(servers)), [derived.label(run, s) for s in servers])
    ax.set_ylabel("answered queries (queries/s)")
    ax.yaxis.set_major_formatter(style.THOUSANDS)
    ax.set_ylim(0, tallest * 1.25)
    _legend(ax, {LABELS[t]: colours[t] for t in transports},
            [m for f in figures.values() for m in f.values()])
    return readings


@plot("transport_ratio", title="Each transport against the server's own UDP, beside the seed",
      caption="Bars: qps over the transport / qps over UDP, both medians of the server's trials in "
              "the same lab (1 = as many as over UDP); hatched: one of the two is within 10 % of "
              "its generator's ceiling; cross-hatched: one of the two is out of the source's "
              "regime (its threads under 71 % busy, or the slots held by lost queries unlike "
              "the source's). Black lines: the seed's ratios at 8 clients "
              "(dnsprivacy.org 2018, TLS 1.2, servers on 4 threads) over the lab's kind of each "
              "(Knot Resolver: kresd) that the run measured.")
def transport_ratio(run: Run, ax: Axes, notes: list[str]) -> list[str]:
    figures = _figures(run)
    servers = [s for s in figures if "udp" in figures[s]]
    if not servers:
        raise NotApplicable("no server measured over UDP", cause=SETTING)
    # the seed's servers by the lab's kind of them; one the lab has not gets a group of its own
    seeds = {(s.kind or s.name): s for s in derived.seed()}
    groups = [*servers, *(name for name, s in seeds.items() if s.kind is None)]
    transports = [t for t in ("tcp", "dot", "doh") if any(t in figures[s] for s in servers)]
    if not transports:
        raise NotApplicable("no server measured over a transport besides UDP (TRANSPORTS=udp)",
                            cause=SETTING)
    colours = COLOURS
    width = WIDTH / len(transports)
    readings, seed_drawn = [], False
    for i, server in enumerate(groups):
        said = []
        for j, transport in enumerate(transports):
            x = i - WIDTH / 2 + width * (j + 0.5)
            m, udp = figures.get(server, {}).get(transport), figures.get(server, {}).get("udp")
            if m is not None and udp is not None:
                value = m.qps / udp.qps
                hatch = _hatch(m, udp)
                ax.bar(x, value, width=width * 0.9, color=colours[transport], hatch=hatch,
                       edgecolor=style.INK if hatch else None)
                said.append(f"{LABELS[transport]}/UDP {value:.2f}"
                            + {"//": " (generator-limited)",
                               "xx": " (out of the source's regime)",
                               "..": " (above the ceiling cell)"}.get(hatch or "", ""))
            seed_server = seeds.get(server.partition("@")[0])  # unbound@1.26: the seed's Unbound
            seed = seed_server.ratio(transport) if seed_server else None
            if seed is not None:
                ax.hlines(seed, x - width * 0.45, x + width * 0.45, colors="black", linewidth=3,
                          label=None if seed_drawn else "seed (TLS 1.2, 4 threads): " + "; ".join(
                              f"{s.name.rsplit(' ', 1)[0]} TCP {s.ratio('tcp'):.2f}"
                              + (f", TLS {s.ratio('dot'):.2f}" if s.tls else "")
                              for s in derived.seed() if s.kind))
                seed_drawn = True
        if said:
            readings.append(f"{derived.label(run, server)}: " + ", ".join(said))
    ax.axhline(1.0, color=style.MUTED, linestyle=":", linewidth=1.2,
               label="as many as over UDP")
    ax.set_xticks(range(len(groups)), [derived.label(run, g) if g in servers
                                       else f"{g}\n(seed only)"
                                       for g in groups])
    ax.set_ylabel("queries/s over the transport / over UDP")
    _legend(ax, {f"{LABELS[t]}/UDP": colours[t] for t in transports},
            [m for f in figures.values() for m in f.values()])
    return readings


@plot("transport_latency", title="Answer latency per transport under an emulated round trip",
      y_from_zero=False, panels=True,
      caption="Every answer's latency of each transport's trials, pooled: the slowest share of "
              "the queries (x) and how long they took at least (y), both log (dns-shotgun's "
              "way), per transport over connections kept open and, 'new connection', over one "
              "per query (TCP, DoT). First panel, dnsload serve: the same loads against the "
              "canned responder, what the generator and the round trip alone give. Lost queries "
              "count as slower than the timeout.")
def transport_latency(run: Run, fig: Any, notes: list[str]) -> list[str]:
    cells = []
    ceiling = derived.ceiling_cell(run)
    if ceiling is not None:
        cells.append(("dnsload serve", ceiling))
    cells += list(derived.server_cells(run).items())
    panels = []
    for title, cell in cells:
        series = []
        for mode in (PERSISTENT, PER_QUERY):
            for transport in derived.TRANSPORTS:
                pooled = derived.pooled_latency(cell, transport, mode)
                if pooled is not None and pooled.total:
                    label = LABELS[transport] + (", new connection" if mode == PER_QUERY else "")
                    series.append((label, pooled))
        if series:
            panels.append((title, series))
    if not panels:
        raise NotApplicable("the trials kept no latency histograms (LATENCY_HISTOGRAM=true)",
                            cause=SETTING)
    rtt = derived.rtt_ms(run)
    marks = [latency.Mark(rtt * n, f"{n} round trip{'s' if n > 1 else ''} ({rtt * n:g} ms)",
                          limit=n == 1) for n in (1, 2, 3)] if rtt else []
    timeout = float(run.params.get("timeout_s") or 0) * 1000 or None
    colours = {LABELS[t]: COLOURS[t] for t in derived.TRANSPORTS}
    readings = latency.draw_panels(fig, panels, marks=marks, timeout_ms=timeout,
                                   colours=colours)
    axes = [ax for ax in fig.axes if ax.get_visible()]
    for ax in axes:  # narrow panels: the x axis named once, under the middle one
        if ax is not axes[len(axes) // 2]:
            ax.set_xlabel("")
    return readings


# what the seed published, as the legend of the plot that draws it says it (the figure
# layout test checks each is drawn and labelled)
PUBLISHED_IN_LEGEND = {"transport_ratio": "TCP 0.41, TLS 0.28"}
