"""Render a plot as the report does and keep its matplotlib Figure (closed once saved) for
the layout tests to measure: text boxes, legends, series per axes."""

from __future__ import annotations

from pathlib import Path

from matplotlib.figure import Figure

from analysis import plots, style
from analysis.rundata import Run


def render_keeping_figure(spec: plots.PlotSpec, runs: list[Run], out_dir: Path
                          ) -> tuple[plots.RenderedPlot, Figure | None]:
    caught: list[Figure] = []
    original = style.save

    def keep(fig: Figure, out: Path, stem: str):
        caught.append(fig)
        return original(fig, out, stem)

    style.save = keep  # type: ignore[assignment]
    try:
        rendered = plots.render(spec, runs, out_dir)
    finally:
        style.save = original  # type: ignore[assignment]
    return rendered, caught[0] if caught else None
