"""The xfr-30k-zones figures at their full scale's shape (3 profiles x 2 transports x 3
repetitions, plus a calibration per transport: F3's fixtures), as a speaker gets them:
1280x720 px, one panel per condition with at most six data series, the legend clear of
every panel and of the footer, panel titles that do not overprint each other, and port
ranges that are the ones the cells ran with (read back), never the run's requested value."""

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
from experiments.f3_xfr import fixtures as f3_fx
from tests.unit.figure_capture import axis_labels_overprinting, render_keeping_figure

MAX_SERIES = 6
RANGES = f3_fx.FULL_30K_RANGES


@pytest.fixture(scope="module")
def drawn(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Figure, Path]]:
    root = tmp_path_factory.mktemp("full")
    run = load_run(f3_fx.full_scale_30k_run(root))
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


def test_a_stair_capacity_whose_burst_failed_is_hatched_and_said(tmp_path: Path) -> None:
    """Run ec10 (2026-11-26): every capacity failed its 600 s burst, and the bars read as
    capacities (133 -> 550 qps); now each says "burst failed" and is hatched."""
    import matplotlib.pyplot as plt

    from analysis.rundata import load_run
    from experiments.f1_tcp_fallback import fixtures as f1_fixtures
    from experiments.f1_tcp_fallback.plots import capacity

    run = load_run(f1_fixtures.fallback_run(tmp_path, [
        f1_fixtures.fallback_cell("bind916", "before", "untuned", 8000, burst=False),
        f1_fixtures.fallback_cell("bind916", "after", "untuned", 4000, burst=True)]))
    fig, ax = plt.subplots()
    capacity(run, ax, [])
    hatches = [bar.get_hatch() for bar in ax.containers[0]]
    labels = [text.get_text() for text in ax.texts]
    plt.close(fig)
    assert hatches == ["//", None]
    assert labels == ["8,000\nburst failed", "4,000"]
    assert any("failed its 600 s burst" in t.get_text() for t in ax.get_legend().get_texts())
