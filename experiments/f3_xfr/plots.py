"""Plots for the zone-transfer experiments (F3): TIME_WAIT, zones served, connect failures,
time per zone.

Reads `monitor/<secondary>.csv` (`t`, `tcp_time_wait`), `zones_done.csv` (`t`,
`zones_served`), `xfr_events.csv` (`t`, `event`, `zone`) and cell.json figures
(`port_range_size`, `zones`, `total_time_s`, `first_connect_failure_s`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.ticker import FuncFormatter

from analysis import style
from analysis.plots import plot
from analysis.rundata import Cell, NotApplicable, Run
from dnslab.errors import LabError

THOUSANDS = FuncFormatter(lambda v, _pos: f"{v:,.0f}")


def _each_cell(run: Run, notes: list[str], draw: Callable[[Cell, str, int], Any]) -> int:
    """Call draw(cell, colour, index) per cell; a cell with missing data becomes a note."""
    drawn = 0
    colours = style.colors_for([cell.label for cell in run.cells])
    for i, cell in enumerate(run.cells):
        try:
            draw(cell, colours[i], i)
            drawn += 1
        except LabError as exc:
            notes.append(f"{cell.label}: {exc.message}")
    if drawn == 0:
        raise LabError(notes[0] if notes else "no cell has data for this plot")
    return drawn


def _legend(ax: Axes) -> None:
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="best", fontsize=9)


@plot("time_wait", title="TIME_WAIT sockets on the secondary vs time, with the port-range ceiling",
      caption="Each transfer opens a TCP connection; a closed one stays 60 s in TIME_WAIT. "
              "Dashed: ip_local_port_range size of the cell (the ceiling). x: first connect "
              "failure ('address not available').")
def time_wait(run: Run, ax: Axes, notes: list[str]) -> None:
    node = run.node_with_role("secondary")
    ceilings: dict[int, list[str]] = {}
    peaks: list[float] = []

    def one(cell: Cell, colour: str, i: int) -> None:
        mon = cell.monitor(node, ("t", "tcp_time_wait"))
        peaks.append(float(mon["tcp_time_wait"].max()))
        # the first cells (default) stay on top where lines coincide
        ax.plot(mon["t"], mon["tcp_time_wait"], color=colour, label=cell.label, zorder=10 - i)
        cap = cell.sysctl(node, "net.ipv4.tcp_max_tw_buckets")
        if cap is not None and int(cap) < float(mon["tcp_time_wait"].max()) * 4:
            ax.axhline(int(cap), color=colour, linestyle=":", linewidth=1.2)
            ax.annotate(f"tcp_max_tw_buckets {int(cap):,} ({cell.label})", xy=(0.0, int(cap)),
                        xycoords=("axes fraction", "data"), xytext=(4, 3),
                        textcoords="offset points", fontsize=8.5, color=colour)
        ports = cell.figure("port_range_size", optional=True)
        if ports:
            ceilings.setdefault(int(ports), []).append(cell.label)
            ax.axhline(int(ports), color=colour, linestyle="--", linewidth=1.2, alpha=0.8)
        first = cell.figure("first_connect_failure_s", optional=True)
        if first is not None:
            near = mon.iloc[(mon["t"] - float(first)).abs().argsort()[:1]]
            ax.plot([float(first)], [float(near["tcp_time_wait"].iloc[0])], marker="X",
                    markersize=11, color=colour, markeredgecolor="white", linestyle="none")
            ax.annotate(f"first connect failure at {float(first):.1f} s",
                        (float(first), float(near["tcp_time_wait"].iloc[0])), xytext=(14, 26),
                        textcoords="offset points", ha="left", fontsize=9, color=colour,
                        zorder=20, bbox={"boxstyle": "round,pad=0.2", "fc": "white",
                                         "ec": "none", "alpha": 0.85},
                        arrowprops={"arrowstyle": "-", "color": colour, "lw": 0.8})

    _each_cell(run, notes, one)
    # a ceiling far above every curve (a widened range) would flatten the others: it is
    # left off the scale and named in the notes instead
    top = max(peaks or [1.0]) * 1.15
    visible = {p: labels for p, labels in ceilings.items() if p <= 4 * max(peaks or [1.0])}
    off_scale = [f"{p:,} ({', '.join(labels)})" for p, labels in ceilings.items()
                 if p not in visible]
    if off_scale:
        ax.text(0.99, 0.98, "port range above the scale: " + "; ".join(off_scale),
                transform=ax.transAxes, ha="right", va="top", fontsize=8.5, color=style.MUTED)
    ax.set_ylim(0, max([top, *(p * 1.1 for p in visible)]))
    for ports, labels in visible.items():
        ax.annotate(f"port range {ports:,} ({', '.join(labels)})", xy=(1.0, ports),
                    xycoords=("axes fraction", "data"), xytext=(-4, 3),
                    textcoords="offset points", ha="right", fontsize=8.5, color=style.MUTED)
    ax.set_xlabel("time since cell start (s)")
    ax.set_ylabel("sockets in TIME_WAIT (count)")
    ax.yaxis.set_major_formatter(THOUSANDS)
    _legend(ax)


@plot("zones_served", title="Zones served by the secondary vs time",
      caption="Zones answering their SOA on the secondary (zones_done.csv). Dotted: all zones.")
def zones_served(run: Run, ax: Axes, notes: list[str]) -> None:
    totals: set[int] = set()

    def one(cell: Cell, colour: str, i: int) -> None:
        done = cell.csv("zones_done.csv", ("t", "zones_served"))
        total = cell.figure("total_time_s", optional=True)
        state = f"all in {float(total):.1f} s" if total else "not finished"
        label = f"{cell.label} ({state})"
        ax.plot(done["t"], done["zones_served"], color=colour, label=label, zorder=10 - i)
        zones = cell.figure("zones", optional=True) or run.params.get("zones")
        if zones:
            totals.add(int(zones))

    _each_cell(run, notes, one)
    for zones in totals:
        ax.axhline(zones, color=style.MUTED, linestyle=":", linewidth=1.2)
        ax.annotate(f"{zones:,} zones", xy=(0.0, zones), xycoords=("axes fraction", "data"),
                    xytext=(4, 3), textcoords="offset points", fontsize=8.5, color=style.MUTED)
    ax.set_xlabel("time since cell start (s)")
    ax.set_ylabel("zones served (count)")
    ax.yaxis.set_major_formatter(THOUSANDS)
    _legend(ax)


@plot("connect_failures", title="Connect failures of the secondary over time (cumulative)",
      caption="'failed to connect: address not available' events parsed from the secondary's "
              "log (xfr_events.csv event=connect_failed).")
def connect_failures(run: Run, ax: Axes, notes: list[str]) -> None:
    def one(cell: Cell, colour: str, i: int) -> None:
        events = cell.csv("xfr_events.csv", ("t", "event"))
        fails = np.sort(events.loc[events["event"] == "connect_failed", "t"].to_numpy(float))
        end = float(events["t"].max()) if len(events) else 0.0
        xs = np.concatenate([[0.0], fails, [max(end, fails[-1] if len(fails) else 0.0)]])
        ys = np.concatenate([[0], np.arange(1, len(fails) + 1), [len(fails)]])
        ax.step(xs, ys, where="post", color=colour, zorder=10 - i,
                label=f"{cell.label}: {len(fails):,} failures")

    _each_cell(run, notes, one)
    ax.set_xlabel("time since cell start (s)")
    ax.set_ylabel("connect failures (cumulative count)")
    ax.yaxis.set_major_formatter(THOUSANDS)
    _legend(ax)


@plot("time_per_zone", title="Time per zone vs zone count (is transfer time linear?)",
      caption="total_time_s / zones per cell; a flat line would mean time proportional to "
              "zone count. Triangles at the top: the cell did not serve all zones.")
def time_per_zone(run: Run, ax: Axes, notes: list[str]) -> None:
    groups: dict[str, list[Cell]] = {}
    for cell in run.cells:
        if "zones" not in cell.params:
            continue
        key = ", ".join(f"{k}={v}" for k, v in cell.params.items() if k not in ("zones", "rep"))
        groups.setdefault(key or "all", []).append(cell)
    if not groups:
        raise NotApplicable("no cells with a `zones` parameter")
    stalled_y = 0.0
    stalled: list[tuple[int, str]] = []
    ordered = sorted(groups.items())
    colours = style.colors_for([key.removeprefix("profile=") for key, _ in ordered])
    for i, (key, cells) in enumerate(ordered):
        colour = colours[i]
        xs, ys = [], []
        for cell in sorted(cells, key=lambda c: int(c.params["zones"])):
            zones = int(cell.params["zones"])
            try:
                total = cell.figure("total_time_s")
            except LabError as exc:
                notes.append(f"{cell.label}: {exc.message}")
                continue
            if total is None:
                stalled.append((zones, colour))
                continue
            xs.append(zones)
            ys.append(1000.0 * float(total) / zones)
        ax.plot(xs, ys, marker="o", color=colour, label=key.removeprefix("profile="))
        stalled_y = max([stalled_y, *ys])
    for zones, colour in stalled:
        ax.plot([zones], [stalled_y * 1.08 or 1.0], marker="^", markersize=10, color=colour,
                linestyle="none")
        ax.annotate("not finished", (zones, stalled_y * 1.08 or 1.0), xytext=(0, 8),
                    textcoords="offset points", ha="center", fontsize=8.5, color=colour)
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(THOUSANDS)
    ax.set_xlabel("zones in the set (count, log scale)")
    ax.set_ylabel("total transfer time per zone (ms)")
    ax.set_ylim(bottom=0, top=max(stalled_y * 1.25, 1.0))
    _legend(ax)


def _per_cell_points(run: Run, ax: Axes, notes: list[str], figure: str, ylabel: str,
                     band: tuple[float, str] | None = None) -> None:
    xs, ys, labels = [], [], []
    for i, cell in enumerate(run.cells):
        try:
            value = cell.figure(figure)
        except LabError as exc:
            notes.append(f"{cell.label}: {exc.message}")
            continue
        if value is None:
            notes.append(f"{cell.label}: {figure} is null (did not finish)")
            continue
        xs.append(i)
        ys.append(float(value))
        labels.append(cell.label)
    if not ys:
        raise LabError(f"no cell has figure {figure!r}")
    ax.bar(xs, ys, color=style.PALETTE[0], width=0.6)
    mean = float(np.mean(ys))
    ax.axhline(mean, color=style.INK, linewidth=1, linestyle="--")
    if band is not None:
        half, text = band
        ax.axhspan(mean - half, mean + half, color=style.PALETTE[3], alpha=0.25, label=text)
    ax.set_xticks(xs, labels, rotation=0 if len(xs) < 8 else 45)
    ax.set_xlabel("cell")
    ax.set_ylabel(ylabel)
    _legend(ax)


def _repetition_bars(run: Run, ax: Axes, notes: list[str], ylabel: str,
                     band_share: float | None = None) -> None:
    """One group of bars per cell (secondary), one bar per repetition, with error bars."""
    width = 0.8
    drawn = 0
    for index, cell in enumerate(run.cells):
        delays = [float(d) for d in cell.figure("delays_s", optional=True) or []]
        if not delays:
            notes.append(f"{cell.label}: no repetition finished")
            continue
        error = float(cell.figure("error_s", optional=True) or 0.0)
        step = width / len(delays)
        xs = [index - width / 2 + step * (i + 0.5) for i in range(len(delays))]
        ax.bar(xs, delays, width=step * 0.9, yerr=error, capsize=2,
               color=style.PALETTE[index % len(style.PALETTE)], label=cell.label)
        mean = float(np.mean(delays))
        ax.hlines(mean, index - width / 2, index + width / 2, colors=style.INK,
                  linestyles="--", linewidth=1)
        if band_share:
            ax.fill_between([index - width / 2, index + width / 2], mean * (1 - band_share),
                            mean * (1 + band_share), color=style.PALETTE[3], alpha=0.25)
        drawn += 1
    if not drawn:
        raise LabError("no cell has a finished repetition (figure 'delays_s')")
    ax.set_xticks(range(len(run.cells)), [c.label for c in run.cells])
    ax.set_xlabel("secondary (bars: repetitions; dashed: mean)")
    ax.set_ylabel(ylabel)
    _legend(ax)


@plot("tld_repetitions", title="TLD-size AXFR into a cold secondary, per repetition",
      caption="Start of the secondary to its first authoritative SOA answer, on one clock. "
              "Shaded: the published spread (+-0.6 % of the mean).")
def tld_repetitions(run: Run, ax: Axes, notes: list[str]) -> None:
    _repetition_bars(run, ax, notes, "start to zone served (s)", band_share=0.006)


@plot("smallest_delay", title="Smallest zone (SOA + NS): delay per repetition",
      caption="Secondary started to first authoritative SOA answer, both read on the host's "
              "monotonic clock; error bars: poll interval + query round trip. The seed "
              "measured -0.354 s by subtracting timestamps from two clocks.")
def smallest_delay(run: Run, ax: Axes, notes: list[str]) -> None:
    _repetition_bars(run, ax, notes, "delay (s)")
    ax.axhline(0, color=style.MUTED, linewidth=0.8)
