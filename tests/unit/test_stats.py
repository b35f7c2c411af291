"""analysis.stats on synthetic trials with a known answer: a real shift must be found, equal
distributions must not be called different."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis import stats
from experiments.f5_tcp_sysctl import derived as f5_derived


def trials(means: dict[str, float], n: int, sd: float, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame([{"profile": name, "qps": float(v)}
                         for name, mean in means.items() for v in rng.normal(mean, sd, n)])


def test_a_ten_percent_drop_is_detected_against_the_control():
    df = trials({"default": 20000, "tso-win-divisor-1": 18000, "diiner": 20000}, 20, 400, 1)
    result = stats.compare(df, "profile", "qps", control="default")
    assert result.kruskal.p < 0.001
    assert result.differs == ["tso-win-divisor-1"]
    row = result.posthoc.loc["tso-win-divisor-1"]
    assert row["dunn_p"] < 0.001 and row["tukey_p"] < 0.001
    assert row["rel_diff"] == pytest.approx(-0.1, abs=0.02)
    assert row["cliffs_delta"] < -0.9 and row["hedges_g"] < -3
    assert not result.posthoc.loc["diiner", "significant"]


def test_the_studys_own_dunn_correction_is_kept_beside_holms():
    # DNScalc's dunns(): p_adjust='fdr_tsbky'; a step-up FDR correction never exceeds Holm's
    # step-down family-wise one on the same p-values
    df = trials({"default": 20000, "a": 18800, "b": 20000, "c": 20200}, 20, 600, 3)
    table = stats.posthoc_vs_control(df, "profile", "qps", control="default")
    assert set(table.index) == {"a", "b", "c"}
    assert (table["dunn_p_fdr_tsbky"] <= table["dunn_p"] + 1e-12).all()
    assert table["dunn_p_fdr_tsbky"].between(0, 1).all()
    assert table.loc["a", "dunn_p_fdr_tsbky"] < table.loc["b", "dunn_p_fdr_tsbky"]


def test_identical_distributions_are_not_called_different():
    # 60 synthetic studies with no effect: the false-positive rate stays near alpha
    hits = 0
    for seed in range(60):
        df = trials({"default": 20000, "a": 20000, "b": 20000}, 10, 1500, seed)
        hits += bool(stats.compare(df, "profile", "qps", control="default").differs)
    assert hits <= 5


def test_spread_reports_run_to_run_variation():
    df = pd.DataFrame({"profile": ["x"] * 4, "qps": [90.0, 100.0, 110.0, 100.0]})
    row = stats.spread(df, "profile", "qps").loc["x"]
    assert row["n"] == 4 and row["median"] == 100.0 and row["mean"] == 100.0
    assert row["cv"] == pytest.approx(np.std([90, 100, 110, 100], ddof=1) / 100)


def test_effect_sizes_have_their_textbook_values():
    assert stats.cliffs_delta(np.array([3, 4]), np.array([1, 2])) == 1.0
    assert stats.cliffs_delta(np.array([1, 2]), np.array([1, 2])) == 0.0
    g = stats.hedges_g(np.array([2.0, 3.0, 4.0]), np.array([1.0, 2.0, 3.0]))
    assert g == pytest.approx(1.0 * (1 - 3 / (4 * 6 - 9)))


def test_constant_measures_give_no_difference_and_no_crash():
    df = pd.DataFrame({"profile": ["default"] * 3 + ["b"] * 3, "qps": [5.0] * 6})
    result = stats.compare(df, "profile", "qps", control="default")
    assert result.kruskal.p == 1.0 and result.differs == []


def test_unknown_control_is_an_error():
    df = trials({"a": 1.0, "b": 1.0}, 3, 0.1, 0)
    with pytest.raises(ValueError):
        stats.posthoc_vs_control(df, "profile", "qps", control="default")


def test_to_dict_is_json_ready():
    import json

    df = trials({"default": 10, "x": 12}, 8, 0.5, 3)
    text = json.dumps(stats.compare(df, "profile", "qps", "default").to_dict())
    assert '"differs": ["x"]' in text


# --- the dnsperf/resperf parsers the F2/F4/F5 procedures feed these statistics from ----------

DNSPERF_TCP = """[Status] Testing complete (time limit)

Statistics:

  Queries sent:         67463
  Queries completed:    67460 (100.00%)
  Queries lost:         3 (0.00%)

  Response codes:       NOERROR 67000 (99.3%), REFUSED 460 (0.7%)
  Average packet size:  request 30, response 46
  Run time (s):         2.041671
  Queries per second:   33043.031909

  Average Latency (s):  0.003472 (min 0.000017, max 0.095808)
  Latency StdDev (s):   0.009085

Connection Statistics:

  Reconnections:        651

  Average Latency (s):  0.000384 (min 0.000020, max 0.004563)
  Latency StdDev (s):   0.001106
"""


def test_dnsperf_totals_keep_query_latency_not_connection_latency():
    from experiments.generators.perf import parse_dnsperf

    result = parse_dnsperf(DNSPERF_TCP)
    assert (result.sent, result.completed, result.lost) == (67463, 67460, 3)
    assert result.qps == pytest.approx(33043.031909)
    assert result.avg_latency_s == pytest.approx(0.003472)
    assert result.max_latency_s == pytest.approx(0.095808)
    assert result.reconnections == 651
    assert result.rcodes == {"NOERROR": 67000, "REFUSED": 460}
    assert result.failures_per_s == pytest.approx(3 / 2.041671)
    assert result.row()["avg_latency_ms"] == pytest.approx(3.472)


def test_dnsperf_without_statistics_is_a_lab_error():
    from dnslab.errors import LabError
    from experiments.generators.perf import parse_dnsperf

    with pytest.raises(LabError):
        parse_dnsperf("Error: could not open queries.txt\n")


def test_resperf_plot_rows():
    from experiments.generators.perf import parse_resperf_plot

    rows = parse_resperf_plot("# time target_qps ...\n0.5 100 98 97 0 0.001 0 0\n"
                              "1.0 200 199 190 1 0.002 0 0\n")
    assert [r["target_qps"] for r in rows] == [100, 200]
    assert rows[1]["failures_per_s"] == 1 and rows[1]["avg_latency_s"] == 0.002


def test_f2_tolerance_depends_on_the_cores_left_to_the_front_end():
    from experiments.f2_dnsdist.dnsdist import min_tuned_ratio

    # one server core (a 2-core host, the generator on the other): "not slower"
    assert min_tuned_ratio(server_cores=1) == 0.9
    assert min_tuned_ratio(server_cores=7) == 1.0


def _tcp_sysctl_run(root, cells):
    """A tcp-sysctl run folder written through the results contract: {profile: (qps list,
    histogram rows)}."""
    from analysis.rundata import load_run
    from dnslab.results import RunWriter

    writer = RunWriter.create(root, "tcp-sysctl", "20260101T000000Z-0001",
                              {"params": {"profiles": list(cells)}})
    for profile, (qps_values, histogram) in cells.items():
        cell_id = f"profile={profile}"
        cell_dir = writer.start_cell(cell_id, {"profile": profile}, "2026-01-01T00:00:00")
        rows = ["trial,load_pct,qps,avg_latency_ms,lost,latency_file"]
        for i, qps in enumerate(qps_values):
            name = f"latency-l100-{i}.csv"
            (cell_dir / name).write_text("upper_s,count\n" + "".join(
                f"{edge},{count}\n" for edge, count in histogram))
            rows.append(f"{i},100,{qps},{1000 / qps:.4f},0,{name}")
        (cell_dir / "trials.csv").write_text("\n".join(rows) + "\n")
        writer.write_cell(cell_id, {}, "complete")
        writer.end_cell(cell_id, "2026-01-01T00:01:00", "complete")
    writer.finish("2026-01-01T00:02:00", True)
    return load_run(writer.dir)


def test_histogram_percentile_is_the_upper_edge_of_the_bin_holding_it(tmp_path):
    path = tmp_path / "h.csv"
    path.write_text("upper_s,count\n0.001,50\n0.002,40\n0.01,9\ninf,1\n")
    assert f5_derived.histogram_percentile(path, 50) == pytest.approx(1.0)
    assert f5_derived.histogram_percentile(path, 90) == pytest.approx(2.0)
    assert f5_derived.histogram_percentile(path, 99) == pytest.approx(10.0)
    path.write_text("upper_s,count\n0.001,0\n")
    assert f5_derived.histogram_percentile(path, 99) is None


def test_tcp_sysctl_stats_cover_latency_percentiles_and_lost_queries(tmp_path):
    import json as _json

    hist = [(0.001, 90), (0.004, 10)]
    run = _tcp_sysctl_run(tmp_path, {"default": ([1000, 1010, 990, 1005, 995], hist),
                                     "x": ([1500, 1490, 1510, 1505, 1495], hist)})
    frame = f5_derived.read_trials(run)
    assert frame["p99_latency_ms"].tolist() == [pytest.approx(4.0)] * 10
    out = f5_derived.write_stats(run)
    assert out["control"] == "default"
    assert "x" in out["l100"]["qps"]["differs"]
    assert "p99_latency_ms" in out["l100"]
    # a measure equal in every trial (no lost query anywhere) is compared without failing
    assert "lost" in out["l100"]
    assert _json.loads((run.dir / "stats.json").read_text())["control"] == "default"


# --- intervals over repetitions ----------------------------------------------------------------

def test_a_mean_interval_is_students_t() -> None:
    values = [1.0, 1.1, 0.9]
    found = stats.mean_interval(values)
    half = 4.302653 * np.std(values, ddof=1) / np.sqrt(3)
    assert found.estimate == pytest.approx(1.0)
    assert (found.low, found.high) == pytest.approx((1.0 - half, 1.0 + half), rel=1e-5)
    assert found.describe() == "95 % t interval over 3 repetitions"
    one = stats.mean_interval([2.5])
    assert one.single and one.low == one.high == 2.5
    assert one.describe() == "a single measurement: no interval"


@pytest.mark.parametrize("paired", [False, True])
def test_fiellers_interval_covers_the_true_ratio_as_often_as_it_says(paired: bool) -> None:
    """3 repetitions a side, a true ratio of 1.2: the 95 % interval holds it ~95 % of the time
    (a bootstrap of 3 values would hold it far less often)."""
    rng = np.random.default_rng(3)
    hits = 0
    for _ in range(400):
        shared = rng.normal(0, 3, 3) if paired else np.zeros(3)  # the machine's drift
        tcp = 50 + shared + rng.normal(0, 2, 3)
        tls = 60 + 1.2 * shared + rng.normal(0, 2, 3)
        found = stats.ratio_of_means_interval(tls, tcp, paired=paired)
        hits += found.low <= 1.2 <= found.high
    assert 0.91 <= hits / 400 <= 0.99, hits


def test_fieller_pairs_take_the_shared_drift_out() -> None:
    """Run 8f88: TCP 51.1 / 52.6 / 42.3 s, XoT 64.0 / 66.9 / 50.3 s back to back. Unpaired the
    interval reaches below 1.10x; paired, every pair 1.19-1.27x, it does not."""
    tcp, tls = [51.1, 52.6, 42.3], [64.0, 66.9, 50.3]
    unpaired = stats.ratio_of_means_interval(tls, tcp)
    paired = stats.ratio_of_means_interval(tls, tcp, paired=True)
    assert unpaired.estimate == paired.estimate == pytest.approx(181.2 / 146.0)
    assert unpaired.low < 1.10 < paired.low and paired.paired
    # a denominator not told from zero has no finite interval
    wild = stats.ratio_of_means_interval([1.0, 1.1, 0.9], [0.1, -0.1, 0.05])
    assert not wild.bounded


def test_bootstrap_intervals_are_seeded() -> None:
    a, b = [100, 104, 98, 101, 103], [50, 52, 49, 51, 50]
    first = stats.ratio_of_medians_interval(a, b, paired=True)
    assert first == stats.ratio_of_medians_interval(a, b, paired=True)
    assert first.estimate == pytest.approx(101 / 50)
    assert first.low <= first.estimate <= first.high
    median = stats.median_interval([0.0, 0.001, 0.0, 0.002])
    assert median.low <= median.estimate <= median.high and median.method == "bootstrap"


def test_the_rank_interval_is_where_the_mann_whitney_tests_cannot_tell() -> None:
    from scipy.stats import mannwhitneyu

    rng = np.random.default_rng(1)
    base, other = rng.normal(20000, 400, 20), rng.normal(21600, 400, 20)
    found = stats.rank_ratio_interval(other, base, alpha=0.05)
    assert found.level == pytest.approx(0.90) and found.low < found.estimate < found.high
    just_in, just_out = 1 + found.low + 0.002, 1 + found.low - 0.002
    assert mannwhitneyu(other, base * just_in, alternative="greater").pvalue >= 0.05
    assert mannwhitneyu(other, base * just_out, alternative="greater").pvalue < 0.05
    assert mannwhitneyu(other, base * (1 + found.high + 0.002), alternative="less").pvalue \
        < 0.05


def test_the_repetitions_that_would_decide_an_interval() -> None:
    """From the spread seen: the interval's half-width shrinks as t(n-1)/sqrt(n); the n it
    names puts the interval on one side of the edge, one fewer does not."""
    values = [1.0, 1.12, 0.95, 1.05]
    found = stats.mean_interval(values)
    edge = 1.12
    assert found.low < edge < found.high
    n = stats.repetitions_to_decide(found, edge)
    assert n is not None and n > len(values)
    sd = np.std(values, ddof=1)

    def upper(count: int) -> float:
        return found.estimate + float(stats.stats.t.ppf(0.975, count - 1)) * sd / np.sqrt(count)

    assert upper(n) < edge <= upper(n - 1)
    # a figure on the edge: no number of repetitions decides it
    assert stats.repetitions_to_decide(stats.mean_interval([1.1, 1.2, 1.15]), 1.15) is None
