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


def axis_labels_overprinting(fig: Figure) -> list[str]:
    """Axis labels (x and y, every visible axes) that overlap another axis label, a panel
    title or a figure legend/text: e.g. a y label longer than its panel's height running into
    the next row's."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    panels = [ax for ax in fig.axes if ax.get_visible()]
    labels = [(label.get_text(), label.get_window_extent(renderer)) for ax in panels
              for label in (ax.xaxis.label, ax.yaxis.label) if label.get_text()]
    others = [(f"title {ax.get_title()!r}", ax.title.get_window_extent(renderer))
              for ax in panels if ax.get_title()]
    others += [("legend", leg.get_window_extent(renderer)) for leg in fig.legends]
    others += [(f"text {t.get_text()[:20]!r}", t.get_window_extent(renderer))
               for t in fig.texts if t.get_text()]
    found = []
    for i, (text, box) in enumerate(labels):
        for j, (other, second) in enumerate(labels):
            if i < j and box.overlaps(second):
                found.append(f"axis label {text!r} over axis label {other!r}")
        found += [f"axis label {text!r} over {other}" for other, second in others
                  if box.overlaps(second)]
    return found
