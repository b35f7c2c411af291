"""Latency percentile curves (dns-shotgun's way: the slowest share of the queries against
their response time, both log): the percentiles read from dnsperf's and dnsload's
histograms, lost queries as slower than the timeout, trials pooled, a step's quantiles where
a run kept no histogram; and the load experiments' plots with the references a speaker
needs (the seed's 1 s limit, the emulated WAN's round trips, one line per condition)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from analysis import plots
from analysis.plots import latency
from analysis.rundata import load_run
from experiments.f1_tcp_fallback import fixtures as f1
from experiments.f3_xfr import fixtures as f3
from experiments.f4_resolver_cache import fixtures as f4
from experiments.generators.perf import LATENCY_BINS, LatencyHistogram
from tests.unit.figure_capture import render_keeping_figure
from tests.unit.test_figures_every_plot import check_layout


def at(curve: tuple[np.ndarray, np.ndarray], pct: float) -> float:
    pcts, ms = curve
    return float(ms[np.argmin(np.abs(pcts - pct))])


def test_percentiles_of_a_dnsperf_histogram(tmp_path: Path) -> None:
    """1,000 answers: 900 at 1 ms, 90 at 10 ms, 10 at 100 ms; and 10 lost at a 2 s timeout."""
    histogram = LatencyHistogram()
    for ms, n in ((1.0, 900), (10.0, 90), (100.0, 10)):
        for _ in range(n):
            histogram.add(ms / 1000)
    histogram.write(tmp_path / "latency.csv")
    found = latency.from_dnsperf_csv(tmp_path / "latency.csv", lost=10)
    assert found.answered == 1000 and found.total == 1010
    curve = found.curve(timeout_ms=2000)
    assert curve[0].min() == pytest.approx(100 / 1010) and curve[0].max() == 100
    assert at(curve, 50) == pytest.approx(1.0, rel=0.13)  # a bin is 12 % wide
    assert at(curve, 5) == pytest.approx(10.0, rel=0.13)
    assert at(curve, 0.5) == pytest.approx(2000)  # the slowest 1 %: lost, at the timeout
    assert at(curve, 1.5) == pytest.approx(100.0, rel=0.13)
    assert list(curve[1]) == sorted(curve[1], reverse=True)  # slower as the share shrinks


def test_the_slides_reading_is_the_histograms_step_not_between_two() -> None:
    """A two-step distribution (Nagle holds: 55 % of the answers at 38.9 ms, 45 % at
    53.2 ms): the median read off the curve is an answer's time, 38.9 ms as F6's verdict
    reads it, never a time between the steps that no answer took (it read 49.3 ms)."""
    held = latency.Latencies(np.array([38.9, 53.2]), np.array([550.0, 450.0]))
    reading = latency._reading("bind, TCP", held, None)
    assert "half the queries slower than 38.9 ms" in reading, reading
    assert "1 % slower than 53.2 ms" in reading, reading
    quantiles = latency.from_quantiles(1, 2, 3, 4, answered=1000)
    assert "half the queries slower than" in latency._reading("q", quantiles, None)


def test_trials_pool_and_quantiles_do_not(tmp_path: Path) -> None:
    one = latency.Latencies(np.array([1.0, 10.0]), np.array([90.0, 10.0]), lost=1)
    two = latency.Latencies(np.array([2.0, 10.0]), np.array([50.0, 50.0]))
    both = one + two
    assert list(both.upper_ms) == [1.0, 2.0, 10.0] and list(both.counts) == [90, 50, 60]
    assert both.lost == 1 and both.total == 201
    with pytest.raises(ValueError):
        one + latency.from_quantiles(1, 2, 3, 4, answered=1000)


def test_dnsload_histogram_from_a_steps_raw_output(tmp_path: Path) -> None:
    raw = tmp_path / "stair-03.jsonl"
    raw.write_text(f1.dnsload_output(4000, 4000, worst_ms=3241.0, tcp_share=0.23))
    found = latency.from_dnsload_jsonl(raw)
    assert found is not None and found.answered > 200_000
    pct, ms = found.curve()
    assert ms.max() == pytest.approx(3241.0, rel=0.02)  # the seed's retried SYN, kept
    old = tmp_path / "old.jsonl"  # a dnsload from before lat_hist_ms
    old.write_text(json.dumps({"type": "total", "lat_ms": {"p50": 1, "p90": 2, "p99": 3,
                                                          "max": 4}}) + "\n")
    assert latency.from_dnsload_jsonl(old) is None


def drawn(run_dir: Path, name: str, out: Path):
    run = load_run(run_dir)
    spec = next(s for s in plots.plots_for(run) if s.name == name)
    rendered, fig = render_keeping_figure(spec, [run], out)
    assert rendered.png is not None and fig is not None, (rendered.error, rendered.skipped)
    return rendered, fig


def legend_texts(fig) -> list[str]:
    texts = [t.get_text() for leg in fig.legends for t in leg.get_texts()]
    return texts + [t.get_text() for ax in fig.axes if ax.get_legend()
                    for t in ax.get_legend().get_texts()]


def test_the_stair_percentiles_compare_every_condition_at_one_load_against_1_s(
        tmp_path: Path) -> None:
    rendered, fig = drawn(f1.full_scale_fallback_run(tmp_path / "runs"),
                          "stair_latency_percentiles", tmp_path / "png")
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ["bind916 (9.16.50) at 4,400 qps", "bind (9.18.49) at 9,000 qps"]
    for ax in fig.axes:
        assert ax.get_xscale() == ax.get_yscale() == "log"
        curves = [line for line in ax.get_lines() if len(line.get_xdata()) > 2]
        assert len(curves) == 4  # records x tuning
        assert any(line.get_ydata()[0] == 1000 for line in ax.get_lines()
                   if len(line.get_xdata()) == 2)  # the seed's limit
    assert "the seed's limit: every answer within 1 s" in legend_texts(fig)
    after = next(r for r in rendered.readings if r.startswith("bind916") and "after, untuned"
                 in r)
    assert "the slowest 3251 ms" in after or "the slowest 3241 ms" in after, after


def test_a_stair_without_histograms_is_drawn_from_its_quantiles(tmp_path: Path) -> None:
    run = f1.fallback_run(tmp_path / "runs", f1.seed_like_fallback_cells())
    rendered, fig = drawn(run, "stair_latency_percentiles", tmp_path / "png")
    labels = legend_texts(fig)
    assert any("(p50/p90/p99/max only)" in label for label in labels), labels
    quantile_lines = [line for line in fig.axes[0].get_lines() if line.get_marker() == "o"]
    assert quantile_lines and all(line.get_linestyle() == "--" for line in quantile_lines)
    check_layout("stair_latency_percentiles", fig, rendered.png)  # long labels: on the slide


def test_the_resolver_percentiles_mark_the_emulated_wans_round_trips(tmp_path: Path) -> None:
    rendered, fig = drawn(f4.full_scale_resolver_run(tmp_path / "runs"), "cache_latency",
                          tmp_path / "png")
    labels = legend_texts(fig)
    assert "WAN: a round trip to a second-level server (+40 ms)" in labels
    assert "WAN: root + TLD + SLD round trips (90 ms)" in labels
    assert len([line for line in fig.axes[0].get_lines() if len(line.get_xdata()) > 2]) == 6
    cold = next(r for r in rendered.readings if r.startswith("cold, -q 100"))
    warm = next(r for r in rendered.readings if r.startswith("warm, -q 100"))
    median = [float(r.split("slower than ")[1].split(" ms")[0]) for r in (cold, warm)]
    assert median[0] > 40 > 1 > median[1], (cold, warm)  # cold waits for the WAN, warm not


def test_the_sweep_is_a_line_per_secondary_not_a_colour_per_point(tmp_path: Path) -> None:
    """The zone sweep's cells carry their count, nodes and chosen range as parameters: grouped
    by all of them, each point was its own series with a legend entry of eight parameters
    (sixteen entries running off the slide)."""
    rendered, fig = drawn(f3.full_scale_sweep_run(tmp_path / "runs"), "time_per_zone",
                          tmp_path / "png")
    ax = fig.axes[0]
    series = [line for line in ax.get_lines() if len(line.get_xdata()) > 2]
    assert [line.get_label() for line in series] == ["bind", "knot"]
    assert len(series[0].get_xdata()) == 7  # 1,000-50,000; 100,000 did not finish
    assert "as many zones as ports in the range (17,000)" in legend_texts(fig)
    # where the ports ran out is on the figure: an X at 20,000-50,000 (past 17,000 ports)
    marked = sorted({float(x) for line in ax.get_lines() if line.get_marker() == "X"
                     for x in line.get_xdata()})
    assert marked == [20000.0, 30000.0, 50000.0], marked
    assert legend_texts(fig).count("ports ran out (connect failures)") == 1
    assert any("100,000 zones not served" in r for r in rendered.readings)
    assert all(len(text) < 60 for text in legend_texts(fig))


def test_the_latency_bins_reach_past_every_timeout() -> None:
    assert LATENCY_BINS[0] <= 1e-4 and LATENCY_BINS[-1] >= 10.0


def test_the_stair_percentiles_compare_at_a_load_some_condition_passed(tmp_path: Path) -> None:
    """Run ec10: every stair first ran 3,000 qps (its coarse step) and failed it; the curves
    there were all timeouts. The compared load is the highest shared one some condition
    passed."""
    cells = [f1.fallback_cell("bind916", records, tuning, capacity, start=200, step=200,
                              first=(3000.0,), histograms=True)
             for records, tuning, capacity in (("before", "untuned", 600),
                                               ("before", "tuned", 1000),
                                               ("after", "untuned", 800))]
    _, fig = drawn(f1.fallback_run(tmp_path / "runs", cells), "stair_latency_percentiles",
                   tmp_path / "png")
    assert [ax.get_title() for ax in fig.axes] == ["bind916 at 1,000 qps"]
