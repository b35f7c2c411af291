"""F5 claims (Linux sysctls for DNS over TCP, seed 004).

Data read from `tcp-sysctl` runs (experiments/procedures/tcp_sysctl.py): one cell per
profile (`params.profile`; the `phase=capacity` cell only measures capacity) whose
`cell.json` figures hold every trial at each load level, `qps_trials_l10` / `qps_trials_l100`
(dnsperf over TCP at ~10 % and ~100 % of the measured capacity) and
`failures_per_s_trials_l<load>` where present. The run's `stats.json` (analysis/stats.py:
Kruskal-Wallis, then Dunn's and Tukey's tests against `default`) supplies the p-values shown.
The tcp_tso_win_divisor=1 cells are those whose node read back the setting = 1 (meta.json
`sysctls[<cell>][<node>]`), else those whose profile name contains `tso`; the
tcp_abort_on_overflow=1 cells likewise (`diiner` in the name).
"""

from __future__ import annotations

import json
import statistics

from scipy.stats import mannwhitneyu

from analysis.claim import Verdict, claim, not_applicable
from analysis.rundata import Cell, Run

EXPERIMENTS = ("tcp-sysctl",)
LOADS = ("l100", "l10")


def _cells_with(run: Run, key: str, name_hint: str) -> list[Cell]:
    found = []
    for cell in run.cells:
        if cell.params.get("profile") in (None, "default") or "phase" in cell.params:
            continue
        values = {n.get(key) for n in run.sysctls_for(cell.id).values()}
        if "1" in values or (not values - {None} and name_hint in str(cell.params["profile"])):
            found.append(cell)
    return found


def _trials(cells: list[Cell], load: str) -> list[float]:
    return [float(q) for c in cells for q in (c.figure(f"qps_trials_{load}", optional=True)
                                              or [])]


def _posthoc(run: Run, load: str, profile: str) -> str:
    path = run.dir / "stats.json"
    if not path.exists():
        return ""
    try:
        row = json.loads(path.read_text())[load]["qps"]["posthoc"][profile]
    except (KeyError, json.JSONDecodeError):
        return ""
    return f", Dunn p={row['dunn_p']:.3f}, Tukey p={row['tukey_p']:.3f}"


def _compare(run: Run, cells: list[Cell], load: str) -> tuple[list[float], list[float]]:
    base = _trials(run.cells_where(profile="default"), load)
    other = _trials(cells, load)
    return base, other


@claim(
    "F5.tso-win-divisor", finding="F5", experiments=EXPERIMENTS,
    title="tcp_tso_win_divisor=1 is not better than the default",
    published="DIINER (>= 20 five-minute dnsperf TCP trials, Dunn's/Tukey's tests): "
              "tcp_tso_win_divisor=1 strongly negative",
    tolerance="median qps(tso=1) <= median qps(default) x {max_gain}, and a one-sided "
              "Mann-Whitney test finds no gain (p >= {alpha}) when both have >= 3 trials",
    limits={"max_gain": 1.02, "alpha": 0.05},
)
def test_tso_not_better(run: Run, verdict: Verdict, max_gain: float, alpha: float) -> None:
    cells = _cells_with(run, "net.ipv4.tcp_tso_win_divisor", "tso")
    if not cells or not run.cells_where(profile="default"):
        not_applicable("needs default and tcp_tso_win_divisor=1 cells")
    parts = []
    for load in LOADS:
        base, tso = _compare(run, cells, load)
        if not base or not tso:
            continue
        mb, mt = statistics.median(base), statistics.median(tso)
        text = f"{load[1:]} % load: {mt:,.0f} vs {mb:,.0f} qps (n={len(tso)}/{len(base)})"
        p = None
        if len(base) >= 3 and len(tso) >= 3:
            p = float(mannwhitneyu(tso, base, alternative="greater").pvalue)
            text += f", p(tso better)={p:.3f}" + _posthoc(run, load,
                                                          str(cells[0].params["profile"]))
        parts.append(text)
        verdict.measured = "; ".join(parts)
        assert mt <= mb * max_gain, f"tcp_tso_win_divisor=1 gave more qps at {load[1:]} % load"
        assert p is None or p >= alpha, "tcp_tso_win_divisor=1 significantly better"
    if not parts:
        not_applicable("no qps trials in the default and tso cells")


@claim(
    "F5.abort-on-overflow", finding="F5", experiments=EXPERIMENTS,
    title="tcp_abort_on_overflow=1 helps at 100 % load",
    published="DIINER at 100 % load: qps +8 %, latency -5 %, lost packets -98 % "
              "(>= 20 five-minute trials; most other settings showed no effect)",
    tolerance="median qps(abort_on_overflow=1) > median qps(default) at 100 % load with a "
              "one-sided Mann-Whitney p < {alpha} (>= 3 trials each)",
    limits={"alpha": 0.05},
)
def test_abort_on_overflow(run: Run, verdict: Verdict, alpha: float) -> None:
    cells = _cells_with(run, "net.ipv4.tcp_abort_on_overflow", "diiner")
    base, abort = _compare(run, cells, "l100")
    if not cells or not base or not abort:
        not_applicable("needs default and tcp_abort_on_overflow=1 cells with 100 % load trials")
    if len(base) < 3 or len(abort) < 3:
        not_applicable(f"{len(abort)}/{len(base)} trials: too few for a test")
    mb, ma = statistics.median(base), statistics.median(abort)
    p = float(mannwhitneyu(abort, base, alternative="greater").pvalue)
    verdict.measured = (f"{ma:,.0f} vs {mb:,.0f} qps ({ma / mb - 1:+.1%}), p={p:.3f}, "
                        f"n={len(abort)}/{len(base)}"
                        + _posthoc(run, "l100", str(cells[0].params["profile"])))
    assert ma > mb and p < alpha, "no significant gain (the run-to-run spread may hide it)"
