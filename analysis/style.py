"""The one plot style of the lab: headless matplotlib, slide-friendly sizes, fixed colours.

Every figure goes through `new_figure` (or `new_panel_figure` for small multiples) and
`finish`, so all plots have a title, labelled axes with units, and a footer of a line or two
naming the run(s), the machine and the runtime (the full parameters stay in the report);
`save` writes PNG + SVG. Figures are 1280x720 px, sized for a slide read from the back of a
room (dns-shotgun's presentation style is the model).
"""

from __future__ import annotations

import textwrap
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # headless: no display on lab hosts or CI

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import StrMethodFormatter

# Okabe-Ito, readable for colour-blind viewers and on a projector
PALETTE = ["#0072B2", "#D55E00", "#009E73", "#E69F00", "#CC79A7", "#56B4E9", "#F0E442",
           "#000000"]
# the xfr profiles keep their colour in every plot: red = default (fails), blue = the fix
NAMED = {"default": "#D55E00", "wide-ports": "#0072B2", "tw-buckets": "#CC79A7",
         "baseline": "#D55E00", "tuned": "#0072B2", "cold": "#56B4E9", "warm": "#E69F00"}
INK = "#1b2733"
# footer characters per line: at 11 pt a line of digits and underscores is ~9 px a character
# at 100 dpi, and the figure is 1280 px wide
FOOTER_CHARS = 135
SLIDE = (12.8, 7.2)  # inches at 100 dpi: 1280x720 px
MUTED = "#5b6770"
# tick labels with thousands separators (20,000 qps, not 20000), as the bar labels have them
THOUSANDS = StrMethodFormatter("{x:,.0f}")
# a reference line (a generator's ceiling) this far above the data is said in the legend with
# its figure, not drawn: to scale it would flatten the bars a speaker points at
OFF_SCALE = 3.0

RC: dict[str, Any] = {
    "figure.figsize": SLIDE,  # 16:9
    "figure.dpi": 100,
    "savefig.dpi": 100,
    "font.size": 14,
    "axes.titlesize": 15,
    "axes.labelsize": 14,
    "xtick.labelsize": 13,
    "ytick.labelsize": 13,
    "legend.fontsize": 12,
    "axes.edgecolor": MUTED,
    "axes.labelcolor": INK,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#dde3e8",
    "grid.linewidth": 0.8,
    "xtick.color": MUTED,
    "ytick.color": MUTED,
    "legend.frameon": False,
    "lines.linewidth": 2.5,
    "svg.fonttype": "none",  # keep text as text in SVG
}


def _named(label: str) -> str | None:
    for key, colour in NAMED.items():
        if label == key or label.startswith(key + "-") or label.startswith(key + "="):
            return colour
    return None


def colors_for(labels: Sequence[str]) -> list[str]:
    """One colour per label, for everything drawn in one plot: a named label keeps its
    colour everywhere, the same label gets the same colour, and the others take palette
    colours that no label of this plot uses yet (`diiner` beside `default` is not red too)."""
    taken = {c for c in map(_named, labels) if c}
    spare = iter([c for c in PALETTE if c not in taken] or PALETTE)
    given: dict[str, str] = {}
    for label in labels:
        if label not in given:
            given[label] = _named(label) or next(spare, PALETTE[len(given) % len(PALETTE)])
    return [given[label] for label in labels]


def rc() -> Any:
    """The slide style as a context, for axes made after `new_panel_figure` returned."""
    return plt.rc_context(RC)


def new_figure(ncols: int = 1) -> tuple[Figure, list[Axes]]:
    with plt.rc_context(RC):
        width, height = RC["figure.figsize"]
        fig, axes = plt.subplots(1, ncols, figsize=(max(width, 6.4 * ncols), height),
                                 sharey=True, squeeze=False)
    for ax in axes[0]:
        ax.set_axisbelow(True)
    return fig, list(axes[0])


def new_panel_figure(ncols: int = 1) -> tuple[Figure, list[Any]]:
    """A figure for small multiples: one subfigure per run, in which a draw function lays
    out its own panels (constrained layout keeps labels and legends from overlapping)."""
    with plt.rc_context(RC):
        width, height = RC["figure.figsize"]
        fig = plt.figure(figsize=(max(width, 6.4 * ncols), height), layout="constrained")
        parts = [fig] if ncols == 1 else list(fig.subfigures(1, ncols))
    return fig, parts


def finish(fig: Figure, title: str, footer: list[str]) -> None:
    """Title top left, one footer line per run shown (which run, machine, runtime)."""
    fig.suptitle(title, x=0.01, ha="left", fontsize=17, fontweight="bold", color=INK)
    footer = [part for line in footer for part in textwrap.wrap(line, FOOTER_CHARS) or [""]]
    fig.text(0.01, 0.01, "\n".join(footer), ha="left", va="bottom", fontsize=11, color=MUTED,
             linespacing=1.3)
    bottom = 0.02 + 0.035 * len(footer)
    engine = fig.get_layout_engine()
    if engine is not None:
        # a panel figure: its legends sit above the footer, the panels above them
        renderer = fig.canvas.get_renderer()
        for legend in fig.legends:
            legend.set_loc("lower center")
            legend.set_bbox_to_anchor((0.5, bottom), transform=fig.transFigure)
            bottom += legend.get_window_extent(renderer).height / fig.bbox.height + 0.01
        engine.set(rect=(0, bottom, 1, 1 - bottom))  # left, bottom, width, height
        return
    for ax in fig.axes:
        legend_above(ax)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fig.tight_layout(rect=(0, bottom, 1, 0.95))
    if caught:  # an annotation far outside the axes defeats tight_layout: fixed margins
        fig.subplots_adjust(left=0.08, right=0.98, top=0.88, bottom=bottom + 0.09, wspace=0.08)


LEGEND_LINE_CHARS = 150  # legend characters in a row above a 1280 px wide axes at 11 pt


def legend_above(ax: Axes) -> None:
    """Move the axes' legend out of the data, into rows just above the axes (a legend inside
    a plot covers the bars and curves a speaker points at)."""
    legend = ax.get_legend()
    if legend is None:
        return
    handles = list(legend.legend_handles)
    labels = [text.get_text() for text in legend.get_texts()]
    legend.remove()
    if not labels:
        return
    width = ax.get_position().width  # a share of the figure: side-by-side runs are narrower
    ax.legend(handles, labels, loc="lower left", bbox_to_anchor=(0, 1.02),
              ncol=legend_columns(labels, int(LEGEND_LINE_CHARS * width)), fontsize=11,
              frameon=False, borderaxespad=0, handlelength=1.8, columnspacing=1.2)


def legend_columns(labels: Sequence[str], budget: int) -> int:
    """The most columns whose widths fit `budget` characters: matplotlib fills a legend
    column by column, each as wide as its longest entry (plus a handle and spacing), the
    first `len % ncol` columns one entry longer (4 entries in 3 columns: 2, 1, 1)."""
    for ncol in range(len(labels), 1, -1):
        rows, longer = divmod(len(labels), ncol)
        sizes = [rows + 1] * longer + [rows] * (ncol - longer)
        starts = [sum(sizes[:i]) for i in range(ncol)]
        columns = [labels[start:start + size] for start, size in zip(starts, sizes,
                                                                       strict=True)]
        if sum(max(map(len, column)) + 6 for column in columns) <= budget:
            return ncol
    return 1


def save(fig: Figure, out_dir: Path, stem: str) -> tuple[Path, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    png, svg = out_dir / f"{stem}.png", out_dir / f"{stem}.svg"
    with plt.rc_context(RC):
        # metadata=None-like values keep the output reproducible (no creation date)
        fig.savefig(png, metadata={"Software": None})
        fig.savefig(svg, metadata={"Date": None, "Creator": None})
    plt.close(fig)
    return png, svg


def apply(ax: Axes) -> None:
    """Style pieces rc_context cannot reach after the axes exist."""
    for spine in ("top", "right"):
        ax.spines[spine].set_visible(False)
    ax.grid(True, color=RC["grid.color"], linewidth=RC["grid.linewidth"])
    ax.tick_params(colors=MUTED)
