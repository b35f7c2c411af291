"""F2 claims (dnsdist listeners and socket tuning, seed 001).

Data read from `dnsdist-listeners` runs (experiments/procedures/dnsdist.py): one cell per
variant, param `variant` = `untuned` (one listener, default sockets; `baseline` in older
runs) | `tuned` (reusePort listeners per CPU, big UDP buffers, recvmmsg, sysctls) |
`ceiling` (the load generator's own ceiling, not judged here); without a `variant` param,
`profile=default` is the baseline and any other profile is tuned. `cell.json` figures `qps`
(answered queries per second), `failures_per_s` (queries without answer per second), and on
the tuned cell `min_ratio`: the lowest tuned/untuned ratio that counts as a gain on this
host's core count (`min_tuned_ratio` in the procedure: 1.0 when the front-end has at least
two cores of its own, 0.9 - "not slower" - when it shares the only free core with dnsperf).
"""

from __future__ import annotations

from analysis.claim import Verdict, claim, not_applicable
from analysis.rundata import Cell, Run

EXPERIMENTS = ("dnsdist", "dnsdist-listeners")


def _pair(run: Run) -> tuple[Cell, Cell]:
    if run.cells_where(variant="*"):
        base = run.cells_where(variant="untuned") or run.cells_where(variant="baseline")
        if not base:
            not_applicable("no untuned (baseline) cell in this run")
        return base[0], run.cell(variant="tuned")
    base = run.cell(profile="default")
    tuned = [c for c in run.cells if c.params.get("profile") not in (None, "default")]
    if len(tuned) != 1:
        not_applicable("needs exactly one tuned cell next to the baseline")
    return base, tuned[0]


@claim(
    "F2.qps-gain", finding="F2", experiments=EXPERIMENTS,
    title="Tuned listeners answer more queries per second",
    published="1 listener ~220-232k qps -> 8 reusePort listeners 417-445k qps (~1.9x, 8 vCPU)",
    tolerance="qps(tuned)/qps(untuned) > {min_ratio}, or >= the run's core-count-aware "
              "min_ratio (0.9 'not slower' when the front-end shares its only free core "
              "with the load generator)",
    limits={"min_ratio": 1.0},
)
def test_qps_gain(run: Run, verdict: Verdict, min_ratio: float) -> None:
    base, tuned = _pair(run)
    b, t = float(base.figure("qps")), float(tuned.figure("qps"))
    host_ratio = tuned.figure("min_ratio", optional=True)
    cores = tuned.figure("cores", optional=True)
    verdict.measured = (f"{b:,.0f} -> {t:,.0f} qps ({t / b:.2f}x)"
                        + (f" on {cores} cores, needed {float(host_ratio):.2f}x"
                           if host_ratio is not None else ""))
    if host_ratio is not None and float(host_ratio) < min_ratio:
        assert t / b >= float(host_ratio), "tuning made the front-end slower"
    else:
        assert t / b > min_ratio, "no gain from the tuning"


@claim(
    "F2.failures-drop", finding="F2", experiments=EXPERIMENTS,
    title="Tuning removes the failed queries",
    published="~72-144 failed/s with 1 listener -> 0 failures tuned",
    tolerance="failures_per_s(tuned) < failures_per_s(baseline) and <= {max_tuned}/s",
    limits={"max_tuned": 1.0},
)
def test_failures_drop(run: Run, verdict: Verdict, max_tuned: float) -> None:
    base, tuned = _pair(run)
    b, t = float(base.figure("failures_per_s")), float(tuned.figure("failures_per_s"))
    verdict.measured = f"{b:,.1f} -> {t:,.1f} failed/s"
    assert t < b, "failures did not drop (the baseline may have had none)"
    assert t <= max_tuned, "tuned setup still fails queries"
