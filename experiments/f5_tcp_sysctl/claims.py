"""F5 claims (Linux sysctls for DNS over TCP, seed 004).

Data read from `tcp-sysctl` runs (`tcp_sysctl.py` in this package): one cell per profile
(`params.profile`; the `phase=capacity` cell only measures capacity) with its raw
`trials.csv` (one row per trial: `load_pct`, `target_qps`, `qps`, `sent`, `lost`,
`avg_latency_ms`, `listen_overflows`, ...). The tcp_tso_win_divisor=1 cells are those whose
server read the setting back as 1, the tcp_abort_on_overflow=1 cells likewise. The run's
Kruskal-Wallis, Dunn's and Tukey's tests (`analysis.stats`, written by the analysis to
`stats.json`) are quoted beside the verdicts.

Both claims compare at the run's highest load. The seed's "100 % load" gained 8 % qps, which
only a load above what the baseline answers allows; the lab's 100 % is the default's own
closed-loop capacity, which the default answers (~98 % in the full run), so a gain there is
capped at a few percent and the claim would test the cap, not the setting. For the same
reason the abort_on_overflow profile must saturate too: if it answers the whole offered rate,
its qps is the load's and the gain only a lower bound (a default at 96 % and a capped profile
give "+4 %" whatever the setting does). A tcp_tso_win_divisor=1 profile that answers all of
the load is simply not slower, so that claim needs only the default saturated.

The DIINER study ran >= 20 five-minute trials per setting at 10 G: the claims need enough
trials, and a load that saturates the server (a `-Q` cap at or below what the server can do
makes every profile answer the same qps: nothing to compare). They also need a load the
generator itself can offer: the run's `phase=ceiling` cell (the same dnsperf command against
a canned responder, on the run's placement) must reach >= 90 % of the compared load's target
(`analysis.derived.GENERATOR_BOUND_SHARE`, as F1 and F2); else both claims are "not
applicable" with the figure. A compared trial that sent less than its target was held back by
the server (a saturated server keeps MAX_OUTSTANDING queries in flight, and dnsperf waits):
that is what the trial measures, so it is judged. A run
without a ceiling cell (older runs, CEILING=false) is "not applicable" too: dnsperf paced over
TCP with reconnects was measured answering ~57 % of the closed-loop capacity at a "100 %"
load, so without its ceiling nobody can tell which side set the compared qps.
"""

from __future__ import annotations

import json
import statistics

import pandas as pd
from scipy.stats import mannwhitneyu

from analysis.claim import DIRECTIONAL, TWO_SIDED, Verdict, claim, not_applicable, require
from analysis.derived import require_paced_load_reached
from analysis.rundata import Cell, Run
from dnslab.thresholds import SATURATED_SHARE

SOURCE = "seed 004, the DIINER study (>= 20 five-minute dnsperf TCP trials, Dunn's/Tukey's)"
GENERATOR_REMEDY = ("a generator that offers the load: fewer reconnects (QUERIES_PER_CONN), more "
                    "dnsperf threads or clients, or a faster generator core (GENERATOR_CPUS)")
PRECONDITION_GENERATOR = ("dnsperf reached >= 90 % of the compared load's target against the "
                          "run's canned responder (phase=ceiling); a compared trial that then "
                          "sent less was held back by the server and is judged")


def _server_value(run: Run, cell: Cell, key: str) -> str | None:
    """A sysctl read back on the server under test (never another node's)."""
    return cell.sysctl(run.node_with_role("primary", cell), key)


def _cells_with(run: Run, key: str) -> list[Cell]:
    return [c for c in run.cells
            if c.params.get("profile") not in (None, "default") and "phase" not in c.params
            and _server_value(run, c, key) == "1"]


def _trials(cells: list[Cell]) -> pd.DataFrame:
    frames = [c.csv("trials.csv", ("trial", "load_pct", "qps", "sent", "lost",
                                   "avg_latency_ms")) for c in cells]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _top_load(base: pd.DataFrame) -> float:
    return float(base["load_pct"].max())


def _saturated(base: pd.DataFrame, load: float) -> float | None:
    """Achieved/offered of the default at a load (None when the offered rate is unknown)."""
    rows = base[base["load_pct"] == load]
    if "target_qps" not in rows or rows["target_qps"].isna().any():
        return None
    return float(statistics.median(rows["qps"] / rows["target_qps"]))


def _posthoc(run: Run, load: float, profile: str) -> str:
    path = run.dir / "stats.json"
    try:
        row = json.loads(path.read_text())[f"l{int(load)}"]["qps"]["posthoc"][profile]
    except (OSError, KeyError, ValueError):
        return ""
    return f", Dunn p={row['dunn_p']:.3f}, Tukey p={row['tukey_p']:.3f}"


def _pair(run: Run, key: str, min_trials: int,
          max_share: float) -> tuple[pd.DataFrame, pd.DataFrame, float, str]:
    cells = _cells_with(run, key)
    base_cells = run.cells_where(profile="default")
    base_cells = [c for c in base_cells if "phase" not in c.params]
    if not cells or not base_cells:
        not_applicable(f"needs default and {key}=1 cells")
    base, other = _trials(base_cells), _trials(cells)
    load = _top_load(base)
    n_b = int((base["load_pct"] == load).sum())
    n_o = int((other["load_pct"] == load).sum())
    require(min(n_b, n_o) >= min_trials, f"{n_o}/{n_b} trials at {load:.0f} % load",
            f"TRIALS>={min_trials} (SCALE=full runs 20)")
    for cell in base_cells:
        require(_server_value(run, cell, key) not in ("1", None),
                f"the default cell's server reads {key} = {_server_value(run, cell, key)}",
                f"a default profile whose server reads {key} back, and not as 1")
    share = _saturated(base, load)
    require(share is not None, f"the offered rate at {load:.0f} % load was not recorded",
            "trials that record their offered rate (target_qps)")
    assert share is not None
    profile = str(cells[0].params["profile"])
    base_at, other_at = base[base["load_pct"] == load], other[other["load_pct"] == load]
    require_paced_load_reached(run, load, GENERATOR_REMEDY)
    require(share < max_share,
            f"the default answered {share:.0%} of the offered rate at {load:.0f} % load: "
            "the load cap, not the server, set the qps",
            "open-loop load above the server's capacity")
    return base_at, other_at, load, profile


def worse_by_either(base_qps: pd.Series, base_latency: pd.Series, qps: pd.Series,
                    latency: pd.Series, alpha: float) -> tuple[bool, float, float]:
    """(significantly worse, p for fewer qps, p for more latency): one-sided Mann-Whitney
    tests on both measures, Bonferroni-corrected for the two (each at alpha / 2), so a
    setting with no effect passes at most `alpha` of the time, not the ~7-9 % two tests at
    alpha each give at 20 vs 20 trials (tests/unit/test_claims_f5.py simulates it)."""
    p_qps = float(mannwhitneyu(qps, base_qps, alternative="less").pvalue)
    p_lat = float(mannwhitneyu(latency, base_latency, alternative="greater").pvalue)
    return min(p_qps, p_lat) < alpha / 2, p_qps, p_lat


def load_condition(verdict: Verdict, base: pd.DataFrame, load: float) -> None:
    """The loads are shares of this server's own capacity (the seed's DIINER: a 10G testbed's
    "100 % load")."""
    if "target_qps" in base and not base["target_qps"].isna().all():
        target = float(statistics.median(base["target_qps"]))
        verdict.condition(f"{load:.0f} % load = {target:,.0f} qps, scaled to this server")


@claim(
    "F5.tso-win-divisor",
    title="tcp_tso_win_divisor=1 makes DNS over TCP slower",
    published="tcp_tso_win_divisor=1: strongly negative effect",
    source=SOURCE, effect=DIRECTIONAL,
    tolerance="at the highest load, qps lower or latency higher than default with a "
              "one-sided Mann-Whitney p < {alpha}/2 (Bonferroni for the two measures), and qps "
              "not significantly higher",
    precondition=">= {min_trials} trials each; the server reads the setting back as 1 in "
                 "its cell and not in default's; " + PRECONDITION_GENERATOR + "; the default "
                 "saturated (answered < {max_share:.0%} of the recorded offered rate)",
    fails_when="no significant loss, or a gain",
    limits={"alpha": 0.05, "min_trials": 5, "max_share": SATURATED_SHARE},
)
def test_tso_worse(run: Run, verdict: Verdict, alpha: float, min_trials: int,
                   max_share: float) -> None:
    base, tso, load, profile = _pair(run, "net.ipv4.tcp_tso_win_divisor", min_trials,
                                     max_share)
    load_condition(verdict, base, load)
    mb, mt = statistics.median(base["qps"]), statistics.median(tso["qps"])
    worse, p_qps, p_lat = worse_by_either(base["qps"], base["avg_latency_ms"], tso["qps"],
                                          tso["avg_latency_ms"], alpha)
    p_more = float(mannwhitneyu(tso["qps"], base["qps"], alternative="greater").pvalue)
    verdict.measured = (f"{load:.0f} % load: {mt:,.0f} vs {mb:,.0f} qps ({mt / mb - 1:+.1%}), "
                        f"p(fewer qps)={p_qps:.3f}, p(more latency)={p_lat:.3f}, "
                        f"n={len(tso)}/{len(base)}" + _posthoc(run, load, profile))
    verdict.phrase = (f"{mt / mb - 1:+.1%} qps at {load:.0f} % load, p(qps)={p_qps:.3f}, "
                      f"p(latency)={p_lat:.3f}")
    assert p_more >= alpha, "tcp_tso_win_divisor=1 gave significantly more qps"
    assert worse, (f"tcp_tso_win_divisor=1 not significantly worse (both p >= {alpha / 2}, "
                   "Bonferroni for two measures)")


@claim(
    "F5.abort-on-overflow",
    title="tcp_abort_on_overflow=1 gives ~8 % more qps at a saturating load",
    published="DIINER at 100 % load: qps +8 %, latency -5 %, lost packets -98 %",
    source=SOURCE, effect=TWO_SIDED,
    tolerance="median qps gain between {low:+.0%} and {high:+.0%} with a one-sided "
              "Mann-Whitney p < {alpha}",
    precondition=">= {min_trials} trials each; the server reads the setting back as 1 in "
                 "its cell and not in default's; " + PRECONDITION_GENERATOR + "; both the "
                 "default and the abort_on_overflow profile saturated (each answered < "
                 "{max_share:.0%} of the offered rate: a profile that answers all of it shows "
                 "the load, not its capacity, so its gain is only a lower bound); the "
                 "default's listen queue overflowed (else abort_on_overflow has nothing to "
                 "act on)",
    fails_when="no significant gain, a loss, or a gain far beyond the published one",
    limits={"low": 0.03, "high": 0.15, "alpha": 0.05, "min_trials": 5,
            "max_share": SATURATED_SHARE},
)
def test_abort_on_overflow(run: Run, verdict: Verdict, low: float, high: float, alpha: float,
                           min_trials: int, max_share: float) -> None:
    base, abort, load, profile = _pair(run, "net.ipv4.tcp_abort_on_overflow", min_trials,
                                       max_share)
    abort_share = float(statistics.median(abort["qps"] / abort["target_qps"]))
    require(abort_share < max_share,
            f"{profile} answered {abort_share:.0%} of the offered rate at {load:.0f} % load: "
            "the load, not the server, set its qps, so its gain is only a lower bound",
            "a top load above every compared profile's capacity (LOADS)")
    load_condition(verdict, base, load)
    overflows = int(base["listen_overflows"].sum()) if "listen_overflows" in base else 0
    require(overflows > 0, f"the default's listen queue never overflowed at {load:.0f} % load",
            "more concurrent TCP connections than the listen queue holds")
    mb, ma = statistics.median(base["qps"]), statistics.median(abort["qps"])
    gain = ma / mb - 1
    p = float(mannwhitneyu(abort["qps"], base["qps"], alternative="greater").pvalue)
    verdict.measured = (f"{load:.0f} % load: {ma:,.0f} vs {mb:,.0f} qps ({gain:+.1%}), p={p:.3f}, "
                        f"n={len(abort)}/{len(base)}, {overflows:,} overflows in default"
                        + _posthoc(run, load, profile))
    verdict.phrase = f"{gain:+.1%} qps at {load:.0f} % load (p={p:.3f})"
    assert p < alpha, "no significant gain (the run-to-run spread may hide it)"
    assert low <= gain <= high, f"gain {gain:+.1%} outside the band"
