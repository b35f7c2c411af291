"""F1 plots: the stair protocol per server, record set and tuning (capacity, worst
response time, answered load, TCP share, server-side drops), the answer sizes each server
sent against the modelled full answer, and the MME cache model, drawn from cell.json figures
and stair.csv (see claims.py for the field names).
"""

from __future__ import annotations

from matplotlib.axes import Axes
from matplotlib.ticker import PercentFormatter

from analysis import derived, style
from analysis.plots import plot
from analysis.rundata import NotApplicable, Run
from dnslab.errors import LabError


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
      y_from_zero=False,
      caption="Worst request->response time (UDP try plus TCP retry) at each offered load; "
              "a step passes below the dashed 1 s line with no continuing errors.")
def stair_latency(run: Run, ax: Axes, notes: list[str]) -> None:
    _stair_lines(run, ax, notes, "max_ms")
    ax.axhline(1000, color=style.INK, linestyle="--", linewidth=1)
    ax.set_yscale("log")
    ax.set_ylabel("worst TAT (ms, log scale)")


@plot("stair_answered", title="Answered vs offered load per stair step",
      caption="Dotted: answered = offered. The gap is queries lost or late.")
def stair_answered(run: Run, ax: Axes, notes: list[str]) -> None:
    _stair_lines(run, ax, notes, "answered_qps")
    top = max(ax.get_xlim()[1], 1.0)
    ax.plot([0, top], [0, top], linestyle=":", color=style.MUTED)
    ax.set_ylabel("answered (queries/s)")


@plot("stair_tcp_share", title="Share of queries over TCP per stair step",
      caption="TCP retries / (UDP + TCP) queries; the seed measured 23 % at its peak.")
def stair_tcp_share(run: Run, ax: Axes, notes: list[str]) -> None:
    _stair_lines(run, ax, notes, "tcp_share")
    ax.axhline(0.23, color=style.INK, linestyle="--", linewidth=1)
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_ylabel("TCP share of queries")


@plot("stair_counters", title="Server-side drops per stair step",
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
