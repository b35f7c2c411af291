"""The xfr-30k-zones figures at their full scale's shape (3 profiles x 2 transports x 3
repetitions, plus a calibration per transport), as a speaker gets them: 1280x720 px, one panel
per condition with at most six data series, the legend clear of every panel and of the
footer, panel titles that do not overprint each other, and port ranges that are the ones the
cells ran with (read back), never the run's requested value."""

from __future__ import annotations

from pathlib import Path

import matplotlib.image as mpimg
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.transforms import Bbox

from analysis import plots
from analysis.rundata import load_run
from analysis.synthetic import CellData
from experiments.f3_xfr import fixtures as f3_fx
from tests.unit.figure_capture import axis_labels_overprinting, render_keeping_figure

MAX_SERIES = 6
RANGES = {"default": 100, "wide-ports": 300, "tw-buckets-1000": 100}


def full_scale_run(root: Path) -> Path:
    cells: list[CellData] = []
    for t, transport in enumerate(("tcp", "tls")):
        cells.append(f3_fx.xfr_cell("default", 28232, seed=90 + t, extra={
            "phase": "calibrate", "transport": transport}))
        for p, (profile, ports) in enumerate(RANGES.items()):
            for rep in range(3):
                # port_range_set is what the run chose for profiles without their own range:
                # wide-ports sets its own, so its cells ran with another range than this
                cells.append(f3_fx.xfr_cell(
                    profile, ports, seed=t * 100 + p * 10 + rep,
                    tw_cap=50 if profile.startswith("tw-") else None,
                    extra={"transport": transport, "rep": rep, "port_range_set": "60900 60999"}))
    return f3_fx.xfr_30k(root, cells)


@pytest.fixture(scope="module")
def drawn(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Figure, Path]]:
    root = tmp_path_factory.mktemp("full")
    run = load_run(full_scale_run(root))
    figures: dict[str, tuple[Figure, Path]] = {}
    for name in ("time_wait", "zones_served", "connect_failures"):
        rendered, fig = render_keeping_figure(plots.load_all()[name], [run], root / "report")
        assert rendered.png is not None and fig is not None, rendered.error
        figures[name] = (fig, rendered.png)
    return figures


def series_count(ax) -> int:
    """Data series: lines of more than two points (reference lines and markers excluded)."""
    return sum(1 for line in ax.get_lines() if isinstance(line, Line2D)
               and len(line.get_xdata()) > 2)


def boxes(fig: Figure) -> tuple[list[Bbox], list[Bbox], list[Bbox]]:
    canvas = FigureCanvasAgg(fig)  # the saved figure left pyplot, with its canvas
    canvas.draw()
    renderer = canvas.get_renderer()
    panels = [ax for ax in fig.axes if ax.get_visible()]
    axes = [ax.get_window_extent(renderer) for ax in panels]
    titles = [ax.title.get_window_extent(renderer) for ax in panels]
    others = [leg.get_window_extent(renderer) for leg in fig.legends]
    others += [t.get_window_extent(renderer) for t in fig.texts if t.get_text()]
    return axes, titles, others


@pytest.mark.parametrize("name", ["time_wait", "zones_served", "connect_failures"])
def test_a_slide_of_small_multiples(drawn, name: str) -> None:
    fig, png = drawn[name]
    assert mpimg.imread(png).shape[:2] == (720, 1280)
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert len(panels) == 6  # 3 profiles x 2 transports
    for ax in panels:
        assert 1 <= series_count(ax) <= MAX_SERIES, ax.get_title()
    axes, titles, others = boxes(fig)
    for i, box in enumerate(others):  # the legend and the footer
        for panel in axes:
            assert not box.overlaps(panel), f"{name}: text or legend {i} covers a panel"
        for j, other in enumerate(others):
            assert i == j or not box.overlaps(other), f"{name}: legend and footer overlap"
    for i, a in enumerate(titles):
        for j, b in enumerate(titles):
            assert i == j or not a.overlaps(b), f"{name}: panel titles overprint each other"
    assert not axis_labels_overprinting(fig), f"{name}: {axis_labels_overprinting(fig)}"


def test_labels_state_the_range_each_cell_ran_with(drawn) -> None:
    fig, _ = drawn["time_wait"]
    titles = [ax.get_title() for ax in fig.axes if ax.get_visible()]
    for profile, ports in RANGES.items():
        assert sum(t.startswith(f"{profile}, ") and f"{ports:,} ports" in t
                   for t in titles) == 2, titles
    assert not any("60900" in t or "100 ports" in t and "wide" in t for t in titles)
