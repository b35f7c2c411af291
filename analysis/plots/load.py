"""Plots for the load experiments (F1 tcp-fallback, F2 dnsdist, F4 resolver-cache,
F5 tcp-sysctl), drawn from cell.json figures (see the claim modules for the field names).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.ticker import PercentFormatter

from analysis import derived, style
from analysis.plots import plot
from analysis.rundata import NotApplicable, Run
from dnslab.errors import LabError


def grouped_bars(run: Run, ax: Axes, notes: list[str], figure: str, group: str, series: str,
                 ylabel: str) -> None:
    """Bars of `figure`, one cluster per value of param `group`, one bar per `series` value."""
    cells = [c for c in run.cells if group in c.params and series in c.params]
    if not cells:
        raise NotApplicable(f"no cells with params {group} and {series}")
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
                    except (LabError, TypeError) as exc:
                        notes.append(f"{cell.label}: {getattr(exc, 'message', exc)}")
        bars = ax.bar(xs, ys, width=width * 0.95, label=f"{series}={name}",
                      color=colours[j])
        ax.bar_label(bars, labels=[f"{y:,.0f}" for y in ys], fontsize=8.5, color=style.MUTED)
    ax.set_xticks(np.arange(len(groups)), [f"{group}={g}" for g in groups])
    ax.set_ylabel(ylabel)
    ax.legend(loc="best", fontsize=9)


def _fallback_cells(run: Run) -> list:
    cells = [c for c in run.cells if "records" in c.params and "tuning" in c.params]
    if not cells:
        raise NotApplicable("no cells with params records and tuning")
    return cells


def _in_run_order(cells: list, run_params: dict) -> list:
    """Cells by server, then records, then tuning, each in the order the experiment's
    parameters list them (before -> after, untuned -> tuned), not alphabetically; values the
    parameters do not list come last, in order of first appearance."""
    keys = (("server", "servers"), ("records", "records"), ("tuning", "tunings"))
    rank: dict[tuple[str, str], int] = {}
    for key, plural in keys:
        for value in run_params.get(plural) or []:
            rank.setdefault((key, str(value)), len(rank))
    for cell in cells:
        for key, _ in keys:
            rank.setdefault((key, str(cell.params.get(key))), len(rank))
    return sorted(cells, key=lambda c: tuple(rank[(k, str(c.params.get(k)))] for k, _ in keys))


def _fallback_label(cell) -> str:
    return (f"{cell.params.get('server', '?')}, records {cell.params['records']}, "
            f"{cell.params['tuning']}")


@plot("capacity", title="Stair capacity by server, record set and tuning",
      experiments=("tcp-fallback",),
      caption="Highest stair step with no continuing errors and worst response time < 1 s "
              "(0: not even the first step passed).")
def capacity(run: Run, ax: Axes, notes: list[str]) -> None:
    cells = _in_run_order(_fallback_cells(run), run.params)
    values = [derived.stair(c).capacity or 0.0 for c in cells]
    # one short line each for server, records, tuning: side by side panels stay legible
    labels = [f"{c.params.get('server', '?')}\n{c.params['records']}\n{c.params['tuning']}"
              for c in cells]
    bars = ax.bar(range(len(cells)), values, width=0.6,
                  color=style.colors_for([c.params["tuning"] for c in cells]))
    ax.bar_label(bars, labels=[f"{v:,.0f}" for v in values], fontsize=9, color=style.MUTED)
    ax.set_xticks(range(len(cells)), labels, fontsize=8.5)
    ax.set_ylabel("capacity (queries/s)")


def _stair_lines(run: Run, ax: Axes, notes: list[str], column: str) -> None:
    for i, cell in enumerate(_in_run_order(_fallback_cells(run), run.params)):
        try:
            stair = cell.csv("stair.csv", ("offered_qps", column))
        except LabError as exc:
            notes.append(f"{cell.label}: {exc.message}")
            continue
        ax.plot(stair["offered_qps"], stair[column], marker="o", markersize=4,
                color=style.PALETTE[i % len(style.PALETTE)], label=_fallback_label(cell))
    ax.set_xlabel("offered load (queries/s)")
    ax.legend(loc="best", fontsize=8.5)


@plot("stair_latency", title="Worst response time per stair step, with the 1 s limit",
      experiments=("tcp-fallback",), y_from_zero=False,
      caption="Worst request->response time (UDP try plus TCP retry) at each offered load; "
              "a step passes below the dashed 1 s line with no continuing errors.")
def stair_latency(run: Run, ax: Axes, notes: list[str]) -> None:
    _stair_lines(run, ax, notes, "max_ms")
    ax.axhline(1000, color=style.INK, linestyle="--", linewidth=1)
    ax.set_yscale("log")
    ax.set_ylabel("worst TAT (ms, log scale)")


@plot("stair_answered", title="Answered vs offered load per stair step",
      experiments=("tcp-fallback",),
      caption="Dotted: answered = offered. The gap is queries lost or late.")
def stair_answered(run: Run, ax: Axes, notes: list[str]) -> None:
    _stair_lines(run, ax, notes, "answered_qps")
    top = max(ax.get_xlim()[1], 1.0)
    ax.plot([0, top], [0, top], linestyle=":", color=style.MUTED)
    ax.set_ylabel("answered (queries/s)")


@plot("stair_tcp_share", title="Share of queries over TCP per stair step",
      experiments=("tcp-fallback",),
      caption="TCP retries / (UDP + TCP) queries; the seed measured 23 % at its peak.")
def stair_tcp_share(run: Run, ax: Axes, notes: list[str]) -> None:
    _stair_lines(run, ax, notes, "tcp_share")
    ax.axhline(0.23, color=style.INK, linestyle="--", linewidth=1)
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_ylabel("TCP share of queries")


@plot("stair_counters", title="Server-side drops per stair step",
      experiments=("tcp-fallback",),
      caption="Solid: UDP receive-buffer errors; dashed: TCP listen-queue overflows, both "
              "read in the server's namespace (what the seed read with netstat -su / -st).")
def stair_counters(run: Run, ax: Axes, notes: list[str]) -> None:
    for i, cell in enumerate(_in_run_order(_fallback_cells(run), run.params)):
        try:
            stair = cell.csv("stair.csv", ("offered_qps", "udp_rcvbuf_errors",
                                           "listen_overflows"))
        except LabError as exc:
            notes.append(f"{cell.label}: {exc.message}")
            continue
        colour = style.PALETTE[i % len(style.PALETTE)]
        ax.plot(stair["offered_qps"], stair["udp_rcvbuf_errors"], color=colour,
                label=_fallback_label(cell))
        ax.plot(stair["offered_qps"], stair["listen_overflows"], color=colour, linestyle="--")
    ax.set_xlabel("offered load (queries/s)")
    ax.set_ylabel("events per step (count)")
    ax.legend(loc="best", fontsize=8.5)


@plot("response_sizes", title="Largest NAPTR answers: what each server sent vs the full answer",
      experiments=("tcp-fallback",),
      caption="Bytes of the largest TAC and APN answer over TCP as received, next to the "
              "modelled full answer (additional section filled, as the seed's BIND 9.9 sent "
              "it); dashed: the client's 4,096 B EDNS size, above which the UDP answer is "
              "truncated and retried over TCP.")
def response_sizes(run: Run, ax: Axes, notes: list[str]) -> list[str]:
    pairs: dict[tuple[str, str], object] = {}
    order = {"before": 0, "after": 1}
    for cell in sorted(_fallback_cells(run), key=lambda c: (
            str(c.params.get("server")), order.get(c.params["records"], 2), _fallback_label(c))):
        pairs.setdefault((str(cell.params.get("server", "?")), cell.params["records"]), cell)
    bars = [("tac", "tcp", "TAC, sent"), ("tac", "model", "TAC, full answer"),
            ("apn", "tcp", "APN, sent"), ("apn", "model", "APN, full answer")]
    width = 0.8 / len(bars)
    for j, (kind, source, label) in enumerate(bars):
        xs, ys = [], []
        for i, cell in enumerate(pairs.values()):
            size = cell.figure(f"{kind}_{source}_size", optional=True)
            if size is not None:
                xs.append(i + (j - (len(bars) - 1) / 2) * width)
                ys.append(float(size))
        drawn = ax.bar(xs, ys, width=width * 0.95, label=label,
                       color=style.PALETTE[j % len(style.PALETTE)],
                       hatch="//" if source == "model" else None)
        ax.bar_label(drawn, labels=[f"{y:,.0f}" for y in ys], fontsize=7.5, color=style.MUTED)
    ax.axhline(4096, color=style.INK, linestyle="--", linewidth=1)
    ax.set_xticks(range(len(pairs)), [f"{s}\nrecords {r}" for s, r in pairs], fontsize=8.5)
    ax.set_ylabel("answer size (bytes)")
    ax.legend(loc="best", fontsize=8.5)
    return size_readings(pairs)


def size_readings(pairs: dict, limit: int = 4096) -> list[str]:
    """What the answer sizes change, per server and record set, in words for the report."""
    out = []
    for (server, records), cell in pairs.items():
        sent = cell.figure("tac_tcp_size", optional=True)
        full = cell.figure("tac_model_size", optional=True)
        if not sent or not full:
            continue
        version = cell.figure("server_version", optional=True)
        extra_sent = int(cell.figure("tac_tcp_additional", optional=True) or 1) - 1
        extra_full = int(cell.figure("tac_model_additional", optional=True) or 1) - 1
        text = (f"{server}{f' ({version})' if version else ''}, records {records}: largest "
                f"TAC answer {int(sent):,} B with {extra_sent} additional records; the full "
                f"answer is {int(full):,} B with {extra_full} ({sent / full:.0%} sent).")
        if sent > limit and full > limit:
            text += (f" Both exceed {limit:,} B, so the UDP answer is truncated either way "
                     "and queries for this name fall back to TCP as with the seed's server")
            text += ("." if sent >= 0.99 * full else
                     f"; each TCP answer carries {full - sent:,} B less than the seed's did.")
        elif full > limit >= sent:
            text += (f" This server answers within {limit:,} B over UDP what the seed's had to "
                     "send over TCP: fewer fallbacks than the seed saw.")
        out.append(text)
    return out


@plot("cache_curve", title="MME cache model: query amplification vs records",
      experiments=("tcp-fallback-cache",),
      caption="Upstream queries per lookup relative to a cache that never evicts early; "
              "records < cache, ~ cache, > cache are the seed's cache states 1, 2, 3.")
def cache_curve(run: Run, ax: Axes, notes: list[str]) -> None:
    for i, cell in enumerate(run.cells):
        curve = cell.csv("cache.csv", ("records", "cache_size", "amplification"))
        ax.plot(curve["records"] / curve["cache_size"], curve["amplification"], marker="o",
                markersize=4, color=style.PALETTE[i % len(style.PALETTE)], label=cell.label)
    ax.axvline(1.0, color=style.INK, linestyle="--", linewidth=1)
    ax.set_xlabel("records / cache size")
    ax.set_ylabel("query amplification (x)")
    ax.legend(loc="best", fontsize=9)


@plot("dnsdist_qps", title="dnsdist answered queries per second by variant",
      experiments=("dnsdist", "dnsdist-listeners"),
      caption="ceiling: the load generator against the cheapest responder, in the same run.")
def dnsdist_qps(run: Run, ax: Axes, notes: list[str]) -> None:
    cells = run.cells_where(variant="*") or run.cells_where(profile="*")
    if not cells:
        raise NotApplicable("no cells with a variant or profile param")
    labels = [str(c.params.get("variant", c.params.get("profile"))) for c in cells]
    values = [float(c.figure("qps")) for c in cells]
    failures = [float(c.figure("failures_per_s", optional=True) or 0) for c in cells]
    bars = ax.bar(range(len(cells)), values, width=0.6,
                  color=style.colors_for(labels))
    ax.bar_label(bars, labels=[f"{v:,.0f} qps\n{f:,.0f} failed/s"
                               for v, f in zip(values, failures, strict=True)],
                 fontsize=9, color=style.MUTED)
    ax.set_xticks(range(len(cells)), labels)
    ax.set_ylabel("answered queries (queries/s)")


@plot("resperf_ramp", title="resperf ramp: responses vs offered rate, cold and warm cache",
      experiments=("resolver-cache",),
      caption="resperf raises the query rate steadily; where responses stop following the "
              "offered rate is the resolver's capacity.")
def resperf_ramp(run: Run, ax: Axes, notes: list[str]) -> None:
    cells = run.cells_where(tool="resperf")
    if not cells:
        raise NotApplicable("no resperf ramp cells in this run")
    colours = style.colors_for([str(c.params.get("cache")) for c in cells])
    for cell, colour in zip(cells, colours, strict=True):
        ramp = cell.csv("resperf.csv", ("target_qps", "responses_per_s"))
        ax.plot(ramp["target_qps"], ramp["responses_per_s"],
                color=colour,
                label=f"cache {cell.params.get('cache')}")
    top = max(ax.get_xlim()[1], 1.0)
    ax.plot([0, top], [0, top], linestyle=":", color=style.MUTED)
    ax.set_xlabel("offered rate (queries/s)")
    ax.set_ylabel("responses (per s)")
    ax.legend(loc="best", fontsize=9)


@plot("cache_qps", title="Resolver qps, cold vs warm cache, by outstanding queries (-q)",
      experiments=("resolver-cache",),
      caption="Dashed: dnsperf's own ceiling for the same pass at that -q (against a canned "
              "responder, in this run); a bar near it measured the generator.")
def cache_qps(run: Run, ax: Axes, notes: list[str]) -> None:
    grouped_bars(run, ax, notes, "qps", "outstanding", "cache", "dnsperf throughput (queries/s)")
    ceilings = run.cells_where(phase="ceiling")
    if not ceilings:
        notes.append("no generator ceiling in this run")
        return
    # the clusters in grouped_bars' order
    groups = sorted({c.params["outstanding"] for c in run.cells if "cache" in c.params
                     and "outstanding" in c.params}, key=str)
    for i, q in enumerate(groups):
        value = ceilings[0].figure(f"ceiling_qps_q{q}", optional=True)
        if value is not None:
            ax.hlines(float(value), i - 0.45, i + 0.45, linestyles="--", color=style.MUTED,
                      label="dnsperf's ceiling" if i == 0 else None)
    ax.legend(loc="best", fontsize=9)


@plot("trials_qps", title="DNS-over-TCP qps per trial at the run's highest load, by sysctl "
      "profile", experiments=("tcp-sysctl",),
      caption="One dot per trial at the highest load of the run (the load the F5 claims judge); "
              "bar: median. dnsperf variance hides small effects. Lines: that load's target "
              "(a share of the measured capacity) and dnsperf's own ceiling at that target "
              "(the same command against a canned responder, same run).")
def trials_qps(run: Run, ax: Axes, notes: list[str]) -> None:
    cells = [c for c in run.cells if "profile" in c.params and "phase" not in c.params]
    if not cells:
        raise NotApplicable("no profile cells")
    # a profile's trials may sit in several cells (one per round): pooled per profile
    frames: dict[str, list[pd.DataFrame]] = {}
    for cell in cells:
        mine = frames.setdefault(str(cell.params["profile"]), [])
        if cell.has("trials.csv"):
            mine.append(cell.csv("trials.csv", ("load_pct", "qps")))
    loads = [float(f["load_pct"].max()) for fs in frames.values() for f in fs
             if f["load_pct"].notna().any()]
    if not loads:
        raise NotApplicable("no paced trials")
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
    ax.set_xticks(range(len(by_profile)), list(by_profile), rotation=20, fontsize=9)
    ax.set_ylabel(f"answered at {top:.0f} % load (queries/s)")
    ceiling = derived.paced_ceiling(run)
    at = None if ceiling is None else ceiling[ceiling["load_pct"] == top]
    if at is None or at.empty:
        notes.append(f"no generator ceiling at {top:.0f} % load measured in this run")
        return
    target, reached = float(at["target_qps"].iloc[0]), float(at["qps"].iloc[0])
    ax.axhline(target, linestyle="--", color=style.MUTED, label=f"target {target:,.0f} qps")
    ax.axhline(reached, linestyle=":", color="black",
               label=f"dnsperf ceiling {reached:,.0f} qps ({reached / target:.0%})")
    ax.legend(loc="lower right", fontsize=8.5)
