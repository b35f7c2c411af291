"""Latency percentile curves, as DNS engineers read a load test: dns-shotgun's
`plot-latency.py` (the logarithmic percentile histogram), x the slowest percentile of the
queries, y their response time, both on log axes, one line per compared condition, so the
tail a mean hides (a retried SYN's 1 s and 3 s, a WAN's round trips) shows as steps.

`Latencies` is one condition's distribution, read from what the runs keep: dnsperf's
histogram (`perf.LatencyHistogram`'s CSV: `upper_s`, `count`; tcp-sysctl's and
resolver-cache's `latency-*.csv`), dnsload's (`lat_hist_ms` in the `steady`/`total` line
of a stair step's `dnsload/*.jsonl`), or, from runs that kept neither, a step's quantiles
(p50/p90/p99/max: four points, drawn as such). Queries never answered count as slower than
the timeout. `draw` draws conditions and the references a speaker needs (the seed's limit,
an emulated WAN's round trips) into one axes with the shared style; the findings' plots.py
choose the conditions.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib.ticker as mtick
import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from analysis import style
from dnslab.errors import LabError

LOWEST_PERCENTILE = 0.001  # the slowest 0.001 % is as far into the tail as a curve goes


@dataclass
class Latencies:
    """One condition's response times: histogram buckets (upper edge in ms, answers), the
    queries never answered, or (`quantiles`) only a few percentiles: {slowest %: ms}."""

    upper_ms: np.ndarray = field(default_factory=lambda: np.zeros(0))
    counts: np.ndarray = field(default_factory=lambda: np.zeros(0))
    lost: int = 0
    quantiles: dict[float, float] | None = None
    answered_hint: int = 0  # answers behind `quantiles`

    @property
    def answered(self) -> int:
        return int(self.counts.sum()) if self.quantiles is None else self.answered_hint

    @property
    def total(self) -> int:
        return self.answered + self.lost

    def __add__(self, other: Latencies) -> Latencies:
        """Two distributions pooled (trials of one condition); quantiles do not pool."""
        if self.quantiles is not None or other.quantiles is not None:
            raise ValueError("quantiles alone cannot be pooled")
        edges = np.union1d(self.upper_ms, other.upper_ms)
        counts = np.zeros(len(edges))
        for part in (self, other):
            counts[np.searchsorted(edges, part.upper_ms)] += part.counts
        return Latencies(edges, counts, self.lost + other.lost)

    def curve(self, timeout_ms: float | None = None,
              pct: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(slowest percentile, response time ms): for each percentile p, the time the
        slowest p % of the queries took at least (lost ones at the timeout); p ascending
        (200 of them from the rarest the queries can show, or `pct`)."""
        if self.quantiles is not None:
            pct = np.array(sorted(self.quantiles))
            return pct, np.array([self.quantiles[p] for p in pct])
        total = self.total
        if total == 0:
            return np.zeros(0), np.zeros(0)
        if pct is None:
            lowest = max(LOWEST_PERCENTILE, 100.0 / total)
            pct = np.logspace(math.log10(lowest), 2, 200)
        edges, counts = self.upper_ms, self.counts
        if self.lost:
            # never answered: slower than every answer, drawn at the timeout (or above)
            slowest = float(edges.max()) if len(edges) else 1.0
            edges = np.append(edges, max(timeout_ms or slowest, slowest))
            counts = np.append(counts, self.lost)
        cumulative = np.cumsum(counts)
        # the answer at rank ceil((100 - p) % of all) from the fastest
        ranks = np.clip(np.ceil((100.0 - pct) / 100.0 * total), 1, total)
        return pct, edges[np.searchsorted(cumulative, ranks)]


def from_dnsperf_csv(path: Path, lost: int = 0) -> Latencies:
    """A dnsperf histogram (`upper_s`, `count`; the last bucket's edge is inf: answers above
    100 s, counted at the largest finite edge)."""
    try:
        frame = pd.read_csv(path)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise LabError(f"cannot read {path.name}: {str(exc).splitlines()[0]}") from None
    if not {"upper_s", "count"} <= set(frame.columns):
        raise LabError(f"{path.name} lacks columns upper_s, count")
    frame = frame[frame["count"] > 0]
    edges = frame["upper_s"].astype(float).to_numpy() * 1000.0
    finite = edges[np.isfinite(edges)]
    edges = np.where(np.isfinite(edges), edges, finite.max() if len(finite) else 1e5)
    return Latencies(edges, frame["count"].astype(float).to_numpy(), lost)


def from_dnsload_jsonl(path: Path) -> Latencies | None:
    """The steady (else total) histogram of one dnsload run's JSON lines, with its timeouts
    as lost; None when dnsload printed no histogram (a build before `lat_hist_ms`)."""
    found: dict[str, dict] = {}
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith("{"):
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            found[str(record.get("type"))] = record
    record = found.get("steady") or found.get("total")
    if not record or not record.get("lat_hist_ms"):
        return None
    buckets = np.array(record["lat_hist_ms"], dtype=float)
    return Latencies(buckets[:, 0], buckets[:, 1], int(record.get("timeouts") or 0))


def from_quantiles(p50: float, p90: float, p99: float, worst: float, answered: int,
                   lost: int = 0) -> Latencies:
    """Four points of a distribution (a stair step's p50/p90/p99/max)."""
    points = {50.0: p50, 10.0: p90, 1.0: p99}
    if answered > 100:
        points[100.0 / answered] = worst
    return Latencies(quantiles=points, answered_hint=answered, lost=lost)


@dataclass(frozen=True)
class Mark:
    """A reference response time: the seed's limit, a round trip of an emulated WAN."""

    ms: float
    label: str
    limit: bool = False  # a pass/fail limit (drawn darker) rather than a reference


def draw(ax: Axes, series: Sequence[tuple[str, Latencies]], *, marks: Sequence[Mark] = (),
         timeout_ms: float | None = None, colours: Sequence[str] | None = None) -> list[str]:
    """The conditions' curves, the marks, log-log axes and labels; returns what the plot
    says in words (each condition's p50, p99 and slowest, for the report)."""
    if not series:
        raise LabError("no condition has latency data")
    colours = list(colours or style.colors_for([label for label, _ in series]))
    readings = []
    top = 0.0
    lowest = 100.0
    for (label, latencies), colour in zip(series, colours, strict=True):
        pct, ms = latencies.curve(timeout_ms)
        if not len(pct):
            continue
        ms = np.maximum(ms, 1e-3)  # a 0 ms bucket on a log axis: 1 us
        top, lowest = max(top, float(ms.max())), min(lowest, float(pct.min()))
        if latencies.quantiles is not None:
            ax.plot(pct, ms, color=colour, linestyle="--", marker="o", markersize=6,
                    label=f"{label} (p50/p90/p99/max only)")
        else:
            ax.plot(pct, ms, color=colour, label=label)
        readings.append(_reading(label, latencies, timeout_ms))
    for mark in marks:
        ax.axhline(mark.ms, color=style.INK if mark.limit else style.MUTED,
                   linestyle=":" if mark.limit else "-.", linewidth=1.6 if mark.limit else 1.2,
                   label=mark.label)
        top = max(top, mark.ms)
    if timeout_ms and any(lat.lost for _, lat in series):
        ax.axhline(timeout_ms, color="#b00020", linestyle=":", linewidth=1.2,
                   label=f"timeout {timeout_ms / 1000:g} s: lost queries drawn here")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lowest, 100.0)  # the slowest few on the left, every query at 100 %
    ax.set_ylim(top=top * 2)
    log_ticks(ax)
    ax.grid(True, which="minor", color=style.RC["grid.color"], linewidth=0.5)
    ax.set_xlabel("slowest share of the queries (%)")
    ax.set_ylabel("response time (ms)")
    ax.legend()
    return readings


def log_ticks(ax: Axes) -> None:
    """Plain numbers at 1, 2, 5 x 10^n where the axis spans few decades, at 10^n where it
    spans many (a narrow panel over five decades would overprint them)."""
    fmt = mtick.FuncFormatter(lambda v, _: f"{v:g}")
    width = ax.get_position().width  # a share of the figure: panels are narrower
    for axis, (low, high) in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
        decades = math.log10(max(high, low) / max(min(high, low), 1e-9))
        room = 4.0 if axis is ax.yaxis else 6.0 * width / 0.8
        axis.set_major_locator(mtick.LogLocator(subs=(1.0, 2.0, 5.0) if decades <= room
                                                else (1.0,)))
        axis.set_major_formatter(fmt)
        axis.set_minor_formatter(mtick.NullFormatter())  # "6 x 10^2" beside 1000 is noise


def _reading(label: str, latencies: Latencies, timeout_ms: float | None) -> str:
    """The curve read at 50 % and 1 %: a histogram's own step there (the figure a verdict
    reads, e.g. F6's median: interpolating across a step read 49.3 ms where the median
    answer took 38.9), a few published quantiles interpolated between them."""
    pct, ms = latencies.curve(timeout_ms)

    def at(p: float) -> float:
        if latencies.quantiles is None:
            return float(latencies.curve(timeout_ms, np.array([p]))[1][0])
        return float(np.interp(math.log10(p), np.log10(pct), ms))

    said = (f"{label}: half the queries slower than {at(50):.3g} ms, 1 % slower than "
            f"{at(1):.3g} ms, the slowest {ms.max():.4g} ms")
    if latencies.lost:
        said += f" ({latencies.lost:,} of {latencies.total:,} lost)"
    return said


def draw_panels(fig: Any, panels: Sequence[tuple[str, Sequence[tuple[str, Latencies]]]], *,
                marks: Sequence[Mark] = (), timeout_ms: float | None = None,
                colours: dict[str, str] | None = None) -> list[str]:
    """Small multiples (a panel plot's figure): one panel per (title, conditions), side by
    side on shared axes, every condition in one colour across panels (`colours`, by label,
    where the finding's other plots give its conditions theirs), one legend below."""
    panels = [(title, series) for title, series in panels if series]
    if not panels:
        raise LabError("no condition has latency data")
    labels = list(dict.fromkeys(label for _, series in panels for label, _ in series))
    colour_of = dict(zip(labels, style.colors_for(labels), strict=True))
    colour_of.update(colours or {})
    axes = fig.subplots(1, len(panels), sharex=True, sharey=True, squeeze=False)[0]
    readings = []
    for ax, (title, series) in zip(axes, panels, strict=True):
        style.apply(ax)
        said = draw(ax, series, marks=marks, timeout_ms=timeout_ms,
                    colours=[colour_of[label] for label, _ in series])
        readings += [f"{title}, {line}" for line in said]
        ax.get_legend().remove()
        ax.set_title(title, fontsize=13, color=style.INK)
        if ax is not axes[0]:
            ax.set_ylabel("")
    # shared axes: the last panel drawn set the limits for all; every panel's data decides
    lowest = min(float(lat.curve(timeout_ms)[0].min()) for _, series in panels
                 for _, lat in series if lat.total)
    top = max([float(lat.curve(timeout_ms)[1].max()) for _, series in panels
               for _, lat in series if lat.total] + [m.ms for m in marks])
    axes[0].set_xlim(lowest, 100.0)
    axes[0].set_ylim(top=top * 2)
    for ax in axes:
        log_ticks(ax)
    seen: dict[str, Any] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            seen.setdefault(label, handle)
    # as many columns as fit the slide's width (long labels: fewer), placed by style.finish
    fig.legend(list(seen.values()), list(seen), loc="lower center", fontsize=12,
               ncols=min(style.legend_columns(list(seen), style.LEGEND_LINE_CHARS - 30), 3))
    return readings
