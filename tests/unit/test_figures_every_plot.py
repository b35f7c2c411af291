"""Every plot of every experiment, drawn from a run of its full-scale shape (F1: BIND 9.16 and
today's BIND x record sets x tunings; F2: ceiling, untuned, tuned; F3: 10 TLD repetitions, 3
secondaries, a zone sweep; F4: cold and warm at three -q with trials; F5: three profiles x 20
trials), as a speaker gets it: 1280x720 px, at most six data series per axes, legends and the
footer clear of every axes' data area and of each other, the published figure drawn where
the plot has one. The xfr-30k-zones small multiples have their own test
(test_figures_full_scale.py)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.image as mpimg
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from analysis import plots
from analysis.rundata import load_run
from experiments.f1_tcp_fallback import fixtures as f1
from experiments.f2_dnsdist import fixtures as f2
from experiments.f3_xfr import fixtures as f3
from experiments.f4_resolver_cache import fixtures as f4
from experiments.f5_tcp_sysctl import fixtures as f5
from tests.unit.figure_capture import axis_labels_overprinting, render_keeping_figure

MAX_SERIES = 6
TLD = [26.5, 26.6, 26.4, 26.5, 26.55, 26.45, 26.5, 26.6, 26.4, 26.5]


def fallback(root: Path) -> Path:
    cells = []
    for server, (before, after, tuned) in {"bind916": (8000, 4000, 6000),
                                           "bind": (9000, 8600, 9400)}.items():
        version = {"server_version": "9.16.50" if server == "bind916" else "9.18.49"}
        sizes = f1.answer_sizes(23069, 230) if server == "bind916" else f1.answer_sizes(9000, 0)
        # bind916's first stair runs a coarse pass above its capacity, then steps from 2,000
        cells += [f1.fallback_cell(server, "before", "untuned", before, figures=version,
                                   first=(12000.0, 16000.0) if server == "bind916" else ()),
                  f1.fallback_cell(server, "before", "tuned", before * 1.1, figures=version),
                  f1.fallback_cell(server, "after", "untuned", after,
                                   figures={**version, **sizes}),
                  f1.fallback_cell(server, "after", "tuned", tuned, figures={**version, **sizes})]
    cells += [f1.ceiling_cell("before", 30000), f1.ceiling_cell("after", 30000)]
    return f1.fallback_run(root, cells)


def resolver(root: Path) -> Path:
    qps = {(cache, q): (3000 if cache == "cold" else 12000) * (1 + q / 1000)
           for cache in ("cold", "warm") for q in (100, 200, 300)}
    trials = {k: [v * f for f in (0.97, 1.0, 1.03)] for k, v in qps.items()}
    return f4.resolver_run(root, qps, trials=trials,
                           ramps={"cold": (3200, 3200), "warm": (20000, 14000)})


RUNS = {
    "tcp-fallback": fallback,
    "dnsdist-listeners": lambda root: f2.dnsdist_run(root, untuned=20000, tuned=24000),
    "resolver-cache": resolver,
    "tcp-sysctl": lambda root: f5.tcp_sysctl_run(
        root, gain={"diiner": 1.02, "tso-win-divisor-1": 0.9}, trials=20),
    "xfr-tld": lambda root: f3.write_xfr_run(root, "xfr-tld", f3.timed_cells(
        {"bind": TLD, "knot": [t - 6 for t in TLD], "nsd": [t + 3 for t in TLD]})),
    "xfr-smallest": lambda root: f3.write_xfr_run(root, "xfr-smallest", f3.timed_cells(
        {"knot": [0.012, 0.011, 0.013], "bind": [0.02, 0.018, 0.021],
         "nsd": [0.015, 0.014, 0.016]})),
    "xfr-zone-sweep": lambda root: f3.write_xfr_run(root, "xfr-zone-sweep", f3.sweep_cells(
        {1000: 2.0, 5000: 11.0, 10000: 25.0, 30000: 90.0, 50000: 180.0, 100000: None})),
}
# what the seed published, in the legend of the plot that draws it
SEED_FIGURES = {"capacity": "24k -> 12k", "stair_latency": "1 s limit",
                "stair_tcp_share": "23 %", "dnsdist_qps": "1.9x", "cache_qps": "2.3-4.2x",
                "trials_qps": "+8 %", "tld_repetitions": "26.5 s +-0.6 %",
                "smallest_delay": "-0.354 s"}


@pytest.fixture(scope="module")
def drawn(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Figure, Path]]:
    root = tmp_path_factory.mktemp("every")
    out: dict[str, tuple[Figure, Path]] = {}
    for experiment, make in RUNS.items():
        run = load_run(make(root / "runs"))
        for spec in plots.plots_for(run):
            rendered, fig = render_keeping_figure(spec, [run], root / experiment)
            if rendered.skipped:  # e.g. cache_curve: not in these runs
                continue
            assert rendered.png is not None and fig is not None, f"{spec.name}: {rendered.error}"
            out[spec.name] = (fig, rendered.png)
    return out


def test_every_experiment_plot_was_drawn(drawn) -> None:
    expected = {name for experiment in RUNS for name in plots.experiment_plots(experiment)}
    assert expected - set(drawn) <= {"cache_curve"}, sorted(expected - set(drawn))
    assert len(drawn) >= 11


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


def test_every_plot_is_a_readable_slide(drawn) -> None:
    for name, (fig, png) in drawn.items():
        check_layout(name, fig, png)


def test_the_published_figure_is_drawn_and_labelled(drawn) -> None:
    for name, said in SEED_FIGURES.items():
        fig, _ = drawn[name]
        labels = [text.get_text() for ax in fig.axes if ax.get_legend()
                  for text in ax.get_legend().get_texts()]
        labels += [text.get_text() for leg in fig.legends for text in leg.get_texts()]
        assert any(said in label for label in labels), f"{name}: {labels}"


def test_a_reference_far_above_the_data_is_said_not_drawn(drawn) -> None:
    """The fixtures' generator ceiling (1,000,000 qps) drawn to scale would flatten the
    bars: it is named in the legend with its figure instead."""
    for name in ("dnsdist_qps", "cache_qps"):
        fig, _ = drawn[name]
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
