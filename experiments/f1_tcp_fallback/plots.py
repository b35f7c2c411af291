"""F1 plots: the stair protocol per server, record set and tuning (capacity, worst
response time, answered load, TCP share, server-side drops), the response time percentiles
of one load step per server (dnsload's histograms), the answer sizes each server
sent against the modelled full answer, and the MME cache model, drawn from cell.json figures
and stair.csv (see claims.py for the field names).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import PercentFormatter

from analysis import derived, style
from analysis.plots import latency, plot
from analysis.rundata import SETTING, NotApplicable, Run
from dnslab.errors import LabError
from experiments.f1_tcp_fallback import derived as f1_derived
from experiments.f1_tcp_fallback.stairs import SEED_MAX_TAT_MS


def _fallback_cells(run: Run) -> list:
    cells = [c for c in run.cells if "records" in c.params and "tuning" in c.params]
    if not cells:
        raise NotApplicable("no cells with params records and tuning", cause=SETTING)
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



SEED_HALVES = 0.5  # seed 000's table: 24,000 -> 12,000 qps once the records were added
SEED_TUNING_GAIN = 1.5  # seed 000's table: 12,000 -> 18,000 qps tuned, new records


@plot("capacity", title="Stair capacity by server, record set and tuning",
      caption="Highest stair step with no continuing errors and worst response time < 1 s "
              "(0: not even the first step passed); hatched: that load then failed the "
              "seed's 600 s burst, so the capacity by the seed's criteria is lower; a "
              "diamond: the load the search below it found to hold the burst. Black "
              "marks: the seed's effects scaled to this server's own capacities, the diamond's "
              "load where a search found one (after = half of before; tuned = 1.5x "
              "untuned).")
def capacity(run: Run, ax: Axes, notes: list[str]) -> None:
    cells = _in_run_order(_fallback_cells(run), run.params)
    values = [derived.stair(c).capacity or 0.0 for c in cells]
    # one short line each for server, records, tuning: side by side panels stay legible
    labels = [f"{c.params.get('server', '?')}\n{c.params['records']}\n{c.params['tuning']}"
              for c in cells]
    bars = ax.bar(range(len(cells)), values, width=0.6,
                  color=style.colors_for([c.params["tuning"] for c in cells]))
    # a stair capacity whose 600 s burst failed is not the seed's capacity: hatched, and said;
    # the load the search below it found to hold the burst: a diamond
    found = [f1_derived.seed_capacity(c, with_function=False) for c in cells]
    burst_s = int(float(run.params.get("burst_s") or 600))  # the run's (seed: 600 s)
    failed = [c.figure("burst_stair_passed", optional=True) is False
              or c.figure("burst_passed", optional=True) is False for c in cells]
    for bar, burst_failed in zip(bars, failed, strict=True):
        if burst_failed:
            bar.set_hatch("//")
            bar.set_alpha(0.55)
    held = [(x, f.qps) for x, f in enumerate(found) if f.searched and f.qps is not None]
    if held:
        ax.scatter([x for x, _ in held], [q for _, q in held], marker="D", s=70,
                   color=style.INK, zorder=3,
                   label=f"the load that held the {burst_s:,} s burst (search below the "
                         "stair)")
    ax.bar_label(bars, labels=[f"{v:,.0f}" + (
        f"\nburst held at {f.qps:,.0f}" if burst_failed and f.searched and f.qps
        else "\nburst failed" if burst_failed else "")
        for v, f, burst_failed in zip(values, found, failed, strict=True)],
        fontsize=12, color=style.INK)
    if any(failed):
        ax.set_ylim(top=max(values, default=0.0) * 1.2 or 1.0)  # room for two-line labels
    ax.set_xticks(range(len(cells)), labels, fontsize=12)
    ax.set_ylabel("capacity (queries/s)")
    ax.yaxis.set_major_formatter(style.THOUSANDS)
    # the seed's marks scale what the claims compare: the load that held the burst where a
    # search found one (a stair capacity whose burst failed would put the mark too high)
    compared = [f.qps if f.searched and f.qps else v
                for f, v in zip(found, values, strict=True)]
    at = {(str(c.params.get("server")), c.params["records"], c.params["tuning"]): (i, v)
          for i, (c, v) in enumerate(zip(cells, compared, strict=True))}
    said = {"halves": False, "tuning": False}
    for (server, records, tuning), (x, _) in at.items():
        if records != "after":
            continue
        base = at.get((server, "before", "untuned") if tuning == "untuned"
                      else (server, "after", "untuned"))
        if base is None or base[1] <= 0:
            continue
        if tuning == "untuned":
            key, expected, label = "halves", base[1] * SEED_HALVES, (
                "seed: new records halve capacity (24k -> 12k qps), scaled to this server")
        else:
            key, expected, label = "tuning", base[1] * SEED_TUNING_GAIN, (
                "seed: tuning gives 1.5x (12k -> 18k qps), scaled to this server")
        ax.hlines(expected, x - 0.38, x + 0.38, colors=style.INK, linewidth=3,
                  linestyles="-" if key == "halves" else ":",
                  label=None if said[key] else label)
        said[key] = True
    handles = ax.get_legend_handles_labels()[0]
    if any(failed):
        handles.append(Patch(facecolor="white", edgecolor=style.INK, hatch="//",
                             label=f"the capacity failed its {burst_s:,} s burst: the seed's "
                                   "capacity is lower"))
    if handles:
        ax.legend(handles=handles)


def _servers(run: Run) -> list[tuple[str, list]]:
    """The fallback cells per server, servers and cells in the run's own order."""
    out: dict[str, list] = {}
    for cell in _in_run_order(_fallback_cells(run), run.params):
        out.setdefault(str(cell.params.get("server", "?")), []).append(cell)
    return list(out.items())


def _panel_title(server: str, cells: list) -> str:
    version = next((v for c in cells if (v := c.figure("server_version", optional=True))),
                   None)
    return f"{server} ({version})" if version else server


def _condition(cell) -> str:
    return f"records {cell.params['records']}, {cell.params['tuning']}"


def _by_load(cell, column: str) -> pd.DataFrame:
    """The cell's stair steps by rate, `passed` as booleans (derived.stair's frame), with a
    one-line error when `column` is missing."""
    cell.csv("stair.csv", ("offered_qps", column))
    return derived.stair(cell).rows


def _stair_panels(run: Run, fig: Any, notes: list[str], rows: list[tuple[str, str]],
                  reference: Callable[[Axes], None] | None = None,
                  log: bool = False) -> None:
    """Small multiples: a column per server, a row per stair.csv column in `rows` (column,
    y label), one line per record set x tuning (the same colour in every panel), one legend
    under the panels. Steps are drawn by offered load, not in the order they ran (coarse
    steps up, a descent down, a fine pass between: in run order the line doubles back), a
    filled marker for a step that passed, a hollow one for a step that failed."""
    servers = _servers(run)
    conditions = list(dict.fromkeys(_condition(c) for _, cells in servers for c in cells))
    colours = dict(zip(conditions, style.PALETTE, strict=False))
    axes = fig.subplots(len(rows), len(servers), sharex=True, sharey="row", squeeze=False)
    handles: dict[str, Any] = {}
    drawn = 0
    for col, (server, cells) in enumerate(servers):
        for row, (column, ylabel) in enumerate(rows):
            ax = axes[row][col]
            style.apply(ax)
            for cell in cells:
                try:
                    stair = _by_load(cell, column)
                except LabError as exc:
                    notes.append(f"{cell.label}: {exc.message}")
                    continue
                colour = colours.get(_condition(cell), style.INK)
                (line,) = ax.plot(stair["offered_qps"], stair[column], linewidth=2,
                                  color=colour)
                for passed, face in ((True, colour), (False, "white")):
                    steps = stair[stair["passed"] == passed]
                    ax.plot(steps["offered_qps"], steps[column], linestyle="none",
                            marker="o", markersize=6, markeredgewidth=1.5,
                            markeredgecolor=colour, markerfacecolor=face, label="_step")
                handles.setdefault(_condition(cell), line)
                drawn += 1
            if reference is not None:
                reference(ax)
            if log:
                ax.set_yscale("log")
            if row == 0:
                ax.set_title(_panel_title(server, cells), fontsize=14)
            if col == 0:
                ax.set_ylabel(ylabel)
            if row == len(rows) - 1:
                ax.set_xlabel("offered load (queries/s)")
    if drawn == 0:
        raise LabError(notes[0] if notes else "no cell has a stair.csv")
    extra = [(h, h.get_label()) for ax in axes.flat for h in ax.get_lines()
             if not h.get_label().startswith("_")]
    for handle, label in extra:
        handles.setdefault(label, handle)
    for label, face in (("step passed", style.INK), ("step failed", "white")):
        handles[label] = Line2D([], [], linestyle="none", marker="o", markersize=6,
                                markeredgewidth=1.5, markeredgecolor=style.INK,
                                markerfacecolor=face)
    for ax in axes.flat:
        ax.xaxis.set_major_formatter(style.THOUSANDS)
        if not log and not isinstance(ax.yaxis.get_major_formatter(), PercentFormatter):
            ax.yaxis.set_major_formatter(style.THOUSANDS)
    fig.legend(list(handles.values()), list(handles), ncol=min(len(handles), 3),
               frameon=False, fontsize=12)


@plot("stair_latency", panels=True,
      title="Worst response time per stair step, with the 1 s limit",
      caption="Worst request->response time (UDP try plus TCP retry) at each offered load; "
              "a step passes below the dashed 1 s line with no continuing errors. The seed's "
              "worst times at 14k qps were 832 ms before the new records and 3,241 ms after.")
def stair_latency(run: Run, fig: Any, notes: list[str]) -> None:
    def limit(ax: Axes) -> None:
        ax.axhline(1000, color=style.INK, linestyle="--", linewidth=1.2,
                   label="1 s limit (the seed's pass criterion)")

    _stair_panels(run, fig, notes, [("max_ms", "worst TAT (ms, log scale)")], limit, log=True)


@plot("stair_answered", panels=True, title="Answered vs offered load per stair step",
      caption="Dotted: answered = offered. The gap is queries lost or late.")
def stair_answered(run: Run, fig: Any, notes: list[str]) -> None:
    def diagonal(ax: Axes) -> None:
        top = max(ax.get_xlim()[1], 1.0)
        ax.plot([0, top], [0, top], linestyle=":", color=style.MUTED,
                label="answered = offered")

    _stair_panels(run, fig, notes, [("answered_qps", "answered (queries/s)")], diagonal)


@plot("stair_tcp_share", panels=True, title="Share of queries over TCP per stair step",
      caption="TCP retries / (UDP + TCP) queries; dashed: the seed's 23 % at its peak.")
def stair_tcp_share(run: Run, fig: Any, notes: list[str]) -> None:
    def seed(ax: Axes) -> None:
        ax.axhline(0.23, color=style.INK, linestyle="--", linewidth=1.2,
                   label="seed: 23 % over TCP at 15,767 qps")
        ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        ax.set_ylim(bottom=0)

    _stair_panels(run, fig, notes, [("tcp_share", "TCP share of queries")], seed)


@plot("stair_counters", panels=True, title="Server-side drops per stair step",
      caption="Top: UDP receive-buffer errors; bottom: TCP listen-queue overflows, both "
              "read in the server's namespace (what the seed read with netstat -su / -st).")
def stair_counters(run: Run, fig: Any, notes: list[str]) -> None:
    _stair_panels(run, fig, notes, [("udp_rcvbuf_errors", "UDP rcvbuf errors"),
                                    ("listen_overflows", "listen overflows")])


@plot("response_sizes", title="Largest NAPTR answers: what each server sent vs the full answer",
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
    full = "full answer (as the seed's BIND 9.9 sent it)"
    bars = [("tac", "tcp", "TAC, sent"), ("tac", "model", f"TAC, {full}"),
            ("apn", "tcp", "APN, sent"), ("apn", "model", f"APN, {full}")]
    # a kind no cell measured gets no bar (nor a legend entry, nor a gap in each group)
    bars = [b for b in bars if any(c.figure(f"{b[0]}_{b[1]}_size", optional=True) is not None
                                   for c in pairs.values())]
    if not bars:
        raise NotApplicable("no cell measured its answer sizes", cause=SETTING)
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
        ax.bar_label(drawn, labels=[f"{y:,.0f}" for y in ys], fontsize=11, color=style.INK)
    ax.axhline(4096, color=style.INK, linestyle="--", linewidth=1.2,
               label="4,096 B EDNS buffer: larger UDP answers are truncated")
    ax.set_xticks(range(len(pairs)), [f"{s}\nrecords {r}" for s, r in pairs], fontsize=12)
    ax.set_ylabel("answer size (bytes)")
    ax.yaxis.set_major_formatter(style.THOUSANDS)
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
      caption="Upstream queries per lookup relative to a cache that never evicts early; "
              "records < cache, ~ cache, > cache are the seed's cache states 1, 2, 3.")
def cache_curve(run: Run, ax: Axes, notes: list[str]) -> None:
    for i, cell in enumerate(run.cells):
        curve = cell.csv("cache.csv", ("records", "cache_size", "amplification"))
        ax.plot(curve["records"] / curve["cache_size"], curve["amplification"], marker="o",
                markersize=4, color=style.PALETTE[i % len(style.PALETTE)], label=cell.label)
    sizes = {int(c.params.get("cache_size") or 0) for c in run.cells} - {0}
    ax.axvline(1.0, color=style.INK, linestyle="--", linewidth=1,
               label="records = cache size" + (f" ({sizes.pop():,})" if len(sizes) == 1
                                                else ""))
    ax.set_xlabel("records / cache size")
    ax.set_ylabel("query amplification (x)")
    ax.legend(loc="best", fontsize=9)


def _step_latencies(run: Run, cell: Any, step: pd.Series) -> latency.Latencies:
    """A stair step's response times: dnsload's histogram from the step's raw output, else
    the step's p50/p90/p99/max from stair.csv (a run from before dnsload printed it)."""
    raw = cell.dir / "dnsload" / f"stair-{int(step['step']):02d}.jsonl"
    found = latency.from_dnsload_jsonl(raw) if raw.is_file() else None
    if found is not None:
        return found
    seconds = float(run.params.get("step_s") or 60) - float(run.params.get("warmup_s") or 0)
    answered = int(float(step.get("answered_qps") or 0) * max(seconds, 1.0))
    lost = int(step["timeouts"]) if pd.notna(step.get("timeouts")) else 0
    p99, worst = float(step["p99_ms"]), float(step["max_ms"])
    return latency.from_quantiles(float(step.get("p50_ms", p99)), float(step.get("p90_ms", p99)),
                                  p99, worst, answered, lost)


@plot("stair_latency_percentiles", panels=True,
      title="Response time percentiles per server at one load, against the 1 s limit",
      caption="Per server the highest offered load every record set and tuning ran as a stair "
              "step and one of them passed (else each at its capacity): the slowest share of "
              "the queries (x) and how long they took at least (y), both log, from dnsload's "
              "histogram of that step (dns-shotgun's way). The seed's criterion: every answer "
              "within 1 s; a retried SYN shows as a step at 1 s (and 3 s for a second retry). "
              "Unanswered queries count as slower than dnsload's timeout.")
def stair_latency_percentiles(run: Run, fig: Any, notes: list[str]) -> list[str]:
    servers = _servers(run)
    conditions = list(dict.fromkeys(_condition(c) for _, cells in servers for c in cells))
    colours = dict(zip(conditions, style.PALETTE, strict=False))
    panels = []
    for server, cells in servers:
        stairs = {}
        for cell in cells:
            try:
                stairs[cell.id] = (cell, derived.stair(cell))
            except LabError as exc:
                notes.append(f"{cell.label}: {exc.message}")
        if not stairs:
            continue
        shared = set.intersection(*(set(s.rates()) for _, s in stairs.values()))
        # the highest shared load some condition still passed: above every capacity the
        # curves are all timeouts and compare nothing (run ec10: 3,000 qps, all lost)
        passed = [r for r in shared
                  if any(bool(s.at(r)["passed"]) for _, s in stairs.values())]
        rate = max(passed) if passed else None
        series = []
        for cell, stair in stairs.values():
            at = rate if rate is not None else (stair.capacity or stair.rates()[0])
            step = stair.at(at)
            assert step is not None
            try:
                found = _step_latencies(run, cell, step)
            except (KeyError, ValueError) as exc:
                notes.append(f"{cell.label}: no latency for the step at {at:,.0f} qps ({exc})")
                continue
            series.append((_condition(cell) if rate is not None
                           else f"{_condition(cell)} at {at:,.0f} qps", found))
        where = f"at {rate:,.0f} qps" if rate is not None else "at each capacity"
        panels.append((f"{_panel_title(server, cells)} {where}", series))
    limit = float(run.params.get("max_tat_ms") or SEED_MAX_TAT_MS)
    timeout = float(run.params.get("timeout_s") or 0) * 1000 or None
    return latency.draw_panels(
        fig, panels, timeout_ms=timeout, colours=colours,
        marks=[latency.Mark(limit, f"the seed's limit: every answer within {limit / 1000:g} s",
                            limit=True)])


# what the seed published, as the legend of the plot that draws it says it (the figure
# layout test checks each is drawn and labelled)
PUBLISHED_IN_LEGEND = {"capacity": "24k -> 12k", "stair_latency": "1 s limit",
                       "stair_tcp_share": "23 %", "stair_latency_percentiles": "within 1 s"}
