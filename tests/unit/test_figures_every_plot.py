"""Every plot of every experiment of every finding, drawn from the runs of their full scale's
shape that each finding's `fixtures.py` gives (`full_scale_runs()`: F1 BIND 9.16 and today's
BIND x record sets x tunings with dnsload's histograms, the cache model; F2 the kxdpgun
flood and dnsperf with histograms; F3 the 30k-zone small multiples, 10 TLD repetitions, 3
secondaries, the zone sweep; F4 cold and warm at three -q with trials and histograms; F5 six
profiles x 20 rounds x 3 loads), as a speaker gets it: 1280x720 px, at most six data series
per axes, legends and the footer clear of every axes' data area and of each other, the
published figure drawn where the plot has one (each plots.py's PUBLISHED_IN_LEGEND). A
finding without such runs, or a plot none of them draws, fails here: nothing is skipped
because a list in this file forgot it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import matplotlib.image as mpimg
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from analysis import plots
from analysis.rundata import load_run
from dnslab import findings
from experiments.f2_dnsdist import fixtures as f2
from tests.unit.figure_capture import axis_labels_overprinting, render_keeping_figure

MAX_SERIES = 6


FINDINGS = [f.id for f in findings.all_findings()]


def full_scale_runs(finding_id: str) -> list[tuple[str, Callable[[Path], Path]]]:
    """(label, builder) of a finding package's full-scale-shaped runs."""
    module = findings.finding(finding_id).module("fixtures")
    return module.full_scale_runs() if hasattr(module, "full_scale_runs") else []


@dataclass
class Drawn:
    """A finding's runs and its plots as the first run that draws each drew it (a plot a run
    does not apply to, e.g. latency percentiles of a kxdpgun flood, is left to another)."""

    experiments: set[str]
    plots: dict[str, tuple[Figure, Path]]


def draw(finding_id: str, root: Path) -> Drawn:
    experiments: set[str] = set()
    out: dict[str, tuple[Figure, Path]] = {}
    for i, (label, build) in enumerate(full_scale_runs(finding_id)):
        run = load_run(build(root / "runs"))
        experiments.add(run.experiment)
        for spec in plots.plots_for(run):
            if spec.name in out:
                continue
            rendered, fig = render_keeping_figure(spec, [run], root / str(i))
            if rendered.skipped:
                continue
            assert rendered.png is not None and fig is not None, (
                f"{label}: {spec.name}: {rendered.error}")
            out[spec.name] = (fig, rendered.png)
    return Drawn(experiments, out)


@pytest.fixture(scope="module")
def drawing(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Drawn]:
    """A finding's drawings, made once when a test first asks for them."""
    root = tmp_path_factory.mktemp("every")
    cache: dict[str, Drawn] = {}

    def of(finding_id: str) -> Drawn:
        if finding_id not in cache:
            cache[finding_id] = draw(finding_id, root / finding_id)
        return cache[finding_id]
    return of


@pytest.fixture(scope="module")
def drawn(drawing) -> dict[str, tuple[Figure, Path]]:
    """Every finding's plots, by name."""
    return {name: found for fid in FINDINGS for name, found in drawing(fid).plots.items()}


@pytest.mark.parametrize("finding_id", FINDINGS)
def test_every_finding_gives_runs_of_every_experiment(drawing, finding_id: str) -> None:
    missing = set(findings.finding(finding_id).experiments) - drawing(finding_id).experiments
    assert not missing, f"{finding_id}: no full_scale_runs() run of {sorted(missing)}"


@pytest.mark.parametrize("finding_id", FINDINGS)
def test_every_experiment_plot_was_drawn(drawing, finding_id: str) -> None:
    expected = {name for experiment in findings.finding(finding_id).experiments
                for name in plots.experiment_plots(experiment)}
    assert expected - set(drawing(finding_id).plots) == set(), sorted(
        expected - set(drawing(finding_id).plots))


def series_count(ax) -> int:
    """Data series: lines of more than two points (reference lines and markers excluded)."""
    return sum(1 for line in ax.get_lines() if isinstance(line, Line2D)
               and len(line.get_xdata()) > 2 and line.get_linestyle() not in ("None", "none"))


def check_layout(name: str, fig: Figure, png: Path) -> None:
    assert mpimg.imread(png).shape[:2] == (720, 1280), name
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    axes = [ax for ax in fig.axes if ax.get_visible()]
    for ax in axes:
        assert series_count(ax) <= MAX_SERIES, f"{name}: {ax.get_title()!r} has too many series"
    areas = [ax.get_window_extent(renderer) for ax in axes]
    legends = [ax.get_legend() for ax in axes if ax.get_legend() is not None] + fig.legends
    boxes = [("legend", leg.get_window_extent(renderer)) for leg in legends]
    boxes += [("footer", t.get_window_extent(renderer)) for t in fig.texts
              if t.get_text() and t is not fig._suptitle]
    if fig.get_suptitle():
        boxes.append(("title", fig._suptitle.get_window_extent(renderer)))
    boxes += [("panel title", ax.title.get_window_extent(renderer)) for ax in axes
              if ax.get_title()]
    for i, (what, box) in enumerate(boxes):
        for area in areas:
            assert not box.overlaps(area), f"{name}: a {what} covers the data"
        for j, (other, second) in enumerate(boxes):
            assert i == j or not box.overlaps(second), f"{name}: {what} over {other}"
        assert box.x0 >= 0 and box.x1 <= 1280 and box.y0 >= 0 and box.y1 <= 720, (
            f"{name}: a {what} runs off the slide")
    assert not axis_labels_overprinting(fig), f"{name}: {axis_labels_overprinting(fig)}"
    for ax in axes:
        ticks = [t.get_window_extent(renderer) for t in ax.get_xticklabels()
                 if t.get_visible() and t.get_text()]
        for i, tick in enumerate(ticks):
            assert not any(tick.overlaps(other) for other in ticks[i + 1:]), (
                f"{name}: x tick labels overprint each other: "
                f"{[t.get_text() for t in ax.get_xticklabels()]}")


@pytest.mark.parametrize("finding_id", FINDINGS)
def test_every_plot_is_a_readable_slide(drawing, finding_id: str) -> None:
    for name, (fig, png) in drawing(finding_id).plots.items():
        check_layout(name, fig, png)


@pytest.mark.parametrize("finding_id", FINDINGS)
def test_the_published_figure_is_drawn_and_labelled(drawing, finding_id: str) -> None:
    """Each plots.py's PUBLISHED_IN_LEGEND: {plot: what the seed published, as its legend
    says it}."""
    published = getattr(findings.finding(finding_id).module("plots"),
                        "PUBLISHED_IN_LEGEND", {})
    for name, said in published.items():
        fig, _ = drawing(finding_id).plots[name]
        labels = [text.get_text() for ax in fig.axes if ax.get_legend()
                  for text in ax.get_legend().get_texts()]
        labels += [text.get_text() for leg in fig.legends for text in leg.get_texts()]
        assert any(said in label for label in labels), f"{name}: {labels}"


def test_a_reference_far_above_the_data_is_said_not_drawn(drawn, tmp_path: Path) -> None:
    """The fixtures' generator ceiling (1,000,000 qps) drawn to scale would flatten the
    bars: it is named in the legend with its figure instead."""
    run = load_run(f2.dnsdist_run(tmp_path, untuned=20000, tuned=24000, ceiling=1e6))
    spec = next(s for s in plots.plots_for(run) if s.name == "dnsdist_qps")
    _, own = render_keeping_figure(spec, [run], tmp_path / "own")
    assert own is not None
    for name, fig in (("dnsdist_qps", own), ("cache_qps", drawn["cache_qps"][0])):
        ax = fig.axes[0]
        assert ax.get_ylim()[1] < 100_000, name
        assert any("1,000,000" in t.get_text() and "off this scale" in t.get_text()
                   for t in ax.get_legend().get_texts()), name


def test_a_layout_that_covers_the_data_fails(drawn) -> None:
    """The check itself can fail: a legend moved back into the axes is caught."""
    fig, png = drawn["trials_qps"]
    ax = fig.axes[0]
    ax.legend(loc="lower right")
    with pytest.raises(AssertionError, match="covers the data"):
        check_layout("trials_qps", fig, png)


def test_a_resperf_ramp_says_whether_it_found_the_resolvers_capacity(drawn) -> None:
    """The fixture's cold ramp follows the offered rate to its top (no knee: capacity above
    3,200), the warm one levels off at 14,000 of 20,000 offered."""
    fig, _ = drawn["resperf_ramp"]
    titles = [ax.get_title() for ax in fig.axes if ax.get_visible()]
    assert len(titles) == 2, titles
    assert "no knee up to the ramp's top, 3,200 offered" in titles[0], titles
    assert "peak 14,000 responses/s" in titles[1] and "no knee" not in titles[1], titles


def test_stair_steps_are_drawn_by_load_and_failed_steps_hollow(drawn) -> None:
    """A real stair runs a coarse pass, a descent and a fine pass: drawn in run order its line
    doubles back (the first full-scale bind916 run's panels were a zigzag). Every stair line
    runs left to right, and the steps that failed are hollow."""
    for name in ("stair_latency", "stair_answered", "stair_tcp_share", "stair_counters"):
        fig, _ = drawn[name]
        for ax in fig.axes:
            lines = [line for line in ax.get_lines() if len(line.get_xdata()) > 2
                     and line.get_linestyle() not in ("None", "none")]
            for line in lines:
                x = [float(v) for v in line.get_xdata()]
                if x != [0.0, x[-1]]:  # answered = offered, a diagonal
                    assert x == sorted(x), f"{name}: a stair line doubles back: {x}"
        panel = next(ax for ax in fig.axes if ax.get_title().startswith("bind916"))
        hollow = {float(v) for line in panel.get_lines()
                  if line.get_linestyle() in ("None", "none")
                  and line.get_markerfacecolor() == "white" for v in line.get_xdata()}
        assert {12000.0, 16000.0} <= hollow, (name, sorted(hollow))


def test_an_open_loop_ceiling_is_the_rate_the_flood_sent(tmp_path: Path) -> None:
    """kxdpgun's ceiling cell: a sink answered 154,286 of the 331,644 qps sent (the full run
    of 2026-11-25). The bar is what the sink answered, its label says what was sent; off the
    scale, the legend gives the rate sent, not the sink's answers."""
    def texts(run_dir: Path) -> list[str]:
        run = load_run(run_dir)
        spec = next(s for s in plots.plots_for(run) if s.name == "dnsdist_qps")
        _, fig = render_keeping_figure(spec, [run], tmp_path / run_dir.name)
        assert fig is not None
        ax = fig.axes[0]
        return ([t.get_text() for t in ax.texts] + [t.get_text() for t in ax.get_xticklabels()]
                + (ax.get_legend_handles_labels()[1]))

    near = texts(f2.dnsdist_run(tmp_path / "near", untuned=128776, tuned=162950,
                                ceiling=331644, generator="kxdpgun"))
    assert any("of 331,644 sent" in t for t in near), near
    assert "ceiling (a sink answers)" in near
    far = texts(f2.dnsdist_run(tmp_path / "far", untuned=20000, tuned=24000,
                               ceiling=1e6, generator="kxdpgun"))
    assert any("1,000,000 qps sent (off this scale)" in t for t in far), far
    # dnsperf's (closed loop) ceiling below dnsdist (run 6291): the sink's limit, said on it
    sink = texts(f2.dnsdist_run(tmp_path / "sink", untuned=181027, tuned=178726,
                                ceiling=153436))
    assert any("153,436 qps\nthe sink's limit" in t for t in sink), sink
    assert "ceiling (a sink answers)" in sink
