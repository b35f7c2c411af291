"""F2 claims (dnsdist listeners and socket tuning, seed 001).

Data read from `dnsdist-listeners` runs (`dnsdist.py` in this package): one cell per
variant, param `variant` = `untuned` (one listener, default sockets) | `tuned` (reusePort
listeners per core, big UDP buffers, recvmmsg, sysctls) | `ceiling` (the load generator
against the cheapest responder: its own ceiling in this run, on the run's CPU placement).
`cell.json` figures `qps` (answered queries per second, median of the trials),
`failures_per_s` and `listeners`; params `generator` (`kxdpgun`: an open-loop flood, whose
ceiling is the rate it sent, `trials.csv` `offered_qps`; `dnsperf`: closed loop) and
`server_cores` (the cores dnsdist had).

The seed's ~1.9x came from eight listeners on eight vCPUs; with fewer cores for the
front-end that scaling cannot show, and a variant within 10 % of the generator's ceiling
measured the generator, not dnsdist: both make the qps claim "not applicable".
"""

from __future__ import annotations

from analysis.claim import (
    DIRECTIONAL,
    MACHINE,
    SETTING,
    TWO_SIDED,
    Judged,
    Verdict,
    claim,
    decide,
    not_applicable,
    require,
)
from analysis.derived import GENERATOR_BOUND_SHARE, generator_ceiling, require_below_ceiling
from analysis.rundata import Cell, Run
from analysis.stats import mean_interval, ratio_of_medians_interval
from dnslab.errors import LabError

SOURCE = "seed 001, the 1-listener and 8-listener dnsperf runs (8 vCPU, 1,000 workers)"
SEED_CORES = 8


def cores_condition(run: Run, verdict: Verdict, cell: Cell) -> None:
    """The front-end's cores when they are not the seed's 8 vCPU."""
    cores = _frontend_cores(run, cell)
    if cores != SEED_CORES:
        verdict.condition(f"dnsdist on {cores} core{'s' if cores != 1 else ''} "
                          f"(seed: {SEED_CORES} vCPU)")


def _pair(run: Run) -> tuple[Cell, Cell]:
    base = run.cells_where(variant="untuned") or run.cells_where(variant="baseline")
    if not base:
        not_applicable("no untuned (baseline) cell in this run", cause=SETTING)
    return base[0], run.cell(variant="tuned")


def _frontend_cores(run: Run, cell: Cell) -> int:
    """Cores the front-end had to itself: its recorded CPU set, else every core of the
    machine but one (the load generator's)."""
    own = cell.params.get("server_cores", cell.figure("frontend_cpus", optional=True))
    if own is not None:
        return int(own)
    return max(int((run.meta.get("machine") or {}).get("cpus") or 1) - 1, 0)


def _not_generator_limited(run: Run, cell: Cell) -> float:
    """The variant's answered qps, below the generator's ceiling. A closed-loop generator's
    ceiling is what the sink answered it; when dnsdist answered more (run 6291: NSD refusing
    153,436 qps, dnsdist 181,027), that figure is the sink's limit, not the generator's, and
    the generator's own ceiling is not known: not applicable, not "generator-limited"."""
    qps = float(cell.figure("qps"))
    ceiling = generator_ceiling(run, cell)
    closed_loop = all(c.params.get("generator") != "kxdpgun"
                      for c in run.cells_where(variant="ceiling"))
    require(not (closed_loop and ceiling is not None and qps > ceiling),
            f"{cell.label} answered {qps:,.0f} qps, more than the ceiling cell's sink "
            f"({ceiling or 0:,.0f} qps): that is the sink's limit, the generator's own is "
            "not measured", "GENERATOR=kxdpgun (its ceiling is the rate it sent)", cause=SETTING)
    require_below_ceiling(run, cell, qps, f"{cell.label} answered",
                          "the load generator on cores of its own, or an open-loop flood "
                          "generator", cause=MACHINE)
    return qps


@claim(
    "F2.qps-gain",
    title="One reusePort listener per core roughly doubles dnsdist's qps",
    published="1 listener ~220-232k qps -> 8 reusePort listeners 417-445k qps (~1.9x)",
    source=SOURCE, effect=TWO_SIDED,
    tolerance="qps(tuned)/qps(untuned) between {low}x and {high}x (where the run kept each "
              "trial's qps: the ratio of medians' 95 % bootstrap interval over the trials, one "
              "across an edge inconclusive)",
    precondition="the tuned front-end has >= {min_listeners} listeners on as many cores of "
                 "its own (the seed's 8 vCPU; its recorded CPU set, else the machine's cores "
                 "but the generator's one), and neither variant is within "
                 "{bound:.0%} of the generator's ceiling measured in the run",
    fails_when="the gain is below {low}x (no scaling) or above {high}x",
    limits={"low": 1.5, "high": 2.5, "min_listeners": 8, "bound": GENERATOR_BOUND_SHARE},
    interval=True,
)
def test_qps_gain(run: Run, verdict: Verdict, low: float, high: float, min_listeners: int,
                  bound: float) -> None:
    base, tuned = _pair(run)
    cores_condition(run, verdict, tuned)
    listeners = int(tuned.figure("listeners", optional=True) or 1)
    cores = _frontend_cores(run, tuned)
    require(listeners >= min_listeners and cores >= min_listeners,
            f"the tuned front-end had {listeners} listener(s) on {cores} core(s) of its own",
            f"a machine with >= {min_listeners} cores for dnsdist besides the generator's",
            cause=MACHINE)
    b = _not_generator_limited(run, base)
    t = _not_generator_limited(run, tuned)
    require(b > 0, "the untuned front-end answered nothing", "see the untuned cell's logs",
            cause=SETTING)
    verdict.measured = f"{b:,.0f} -> {t:,.0f} qps ({t / b:.2f}x) with {listeners} listeners"
    tops, bottoms = trial_qps(tuned), trial_qps(base)
    if len(tops) > 1 and len(bottoms) > 1:  # the variants' trials: the ratio's interval
        figure = Judged("tuned/untuned", ratio_of_medians_interval(tops, bottoms).of("trials"),
                        low=low, high=high, unit="x")
        verdict.phrase = (f"{b / 1000:,.0f}k -> {t / 1000:,.0f}k qps ({figure.value()}), "
                          f"{listeners} listeners")
        decide(verdict, figure)
        return
    verdict.phrase = (f"{b / 1000:,.0f}k -> {t / 1000:,.0f}k qps ({t / b:.1f}x), "
                      f"{listeners} listeners")
    assert low <= t / b <= high, f"tuned/untuned {t / b:.2f}x"


def trial_qps(cell: Cell) -> list[float]:
    """A variant's answered qps in each of its trials (`trials.csv`), where the run kept
    them; else none (the cell's figure is then one measurement)."""
    if not cell.has("trials.csv"):
        return []
    trials = cell.csv("trials.csv")
    return [float(v) for v in trials["qps"]] if "qps" in trials.columns else []


def _offered(cell: Cell) -> float:
    """Queries per second the generator sent at a variant: its `offered_qps` figure (median of
    the trials), else the trials' `offered_qps`, else answered + failed (closed loop)."""
    offered = cell.figure("offered_qps", optional=True)
    if offered is not None and float(offered) > 0:
        return float(offered)
    if cell.has("trials.csv"):
        trials = cell.csv("trials.csv")
        if "offered_qps" in trials.columns:
            return float(trials["offered_qps"].median())
    return float(cell.figure("qps")) + float(cell.figure("failures_per_s"))


SEED_FAILED_SHARE = (72.2 / 231_067, 144.4 / 220_054)  # 0.03-0.07 % of what was sent


@claim(
    "F2.failures-drop",
    title="Tuning removes the failed queries",
    published="1 listener: 72-144 failed/s at 220-232k qps answered (0.03-0.07 % of the "
              "queries) -> 0 failed/s tuned",
    source=SOURCE, effect=DIRECTIONAL,
    tolerance="failed/s tuned <= {max_tuned}/s and below untuned",
    precondition="the untuned front-end carried >= {carried:.0%} of the offered rate (the "
                 "seed's: 99.9 %; below that its 'failures' are the flood's excess over its "
                 "capacity, not the few lost queries the seed counted) and failed >= "
                 "{min_untuned}/s; the tuned one answered >= {min_load:.0%} of the untuned "
                 "qps and carried >= {carried:.0%} of an open-loop flood",
    fails_when="the tuned front-end still fails queries, or fails more than untuned",
    limits={"max_tuned": 1.0, "min_untuned": 10.0, "min_load": 0.95, "carried": 0.9},
)
def test_failures_drop(run: Run, verdict: Verdict, max_tuned: float,
                       min_untuned: float, min_load: float, carried: float) -> None:
    """The seed's failures were a small share of what one listener carried: 72-144 failed/s
    with ~225k answered. An open-loop flood above the untuned front-end's capacity makes
    every query it cannot take a "failure" (untuned answered 128k of 150k offered: 22,000
    failed/s), which tuning then "removes" by having the capacity: that is F2.qps-gain, not
    this claim. So failures are judged only where the untuned variant carried >= 90 % of
    what was offered, and said as a share of it, on the seed's scale."""
    base, tuned = _pair(run)
    cores_condition(run, verdict, tuned)
    b, t = float(base.figure("failures_per_s")), float(tuned.figure("failures_per_s"))
    qb, qt = float(base.figure("qps")), float(tuned.figure("qps"))
    offered_b = _offered(base)
    share = qb / offered_b if offered_b > 0 else 0.0
    require(share >= carried,
            f"untuned answered {qb:,.0f} of {offered_b:,.0f} qps offered ({share:.0%}): its "
            f"{b:,.0f} failed/s are the load's excess over its capacity",
            "a load the untuned front-end carries (FLOOD_QPS below its capacity, or "
            "GENERATOR=dnsperf)", cause=SETTING)
    require(b >= min_untuned, f"untuned failed {b:,.1f} queries/s: nothing to remove",
            "a flood that overloads one listener (more clients or outstanding queries)",
            cause=SETTING)
    require(qt >= min_load * qb, f"tuned answered {qt:,.0f} qps against untuned {qb:,.0f}: "
            "fewer failures from less work", "the same flood on both variants", cause=SETTING)
    if tuned.params.get("generator") == "kxdpgun":
        trials = tuned.csv("trials.csv", ("offered_qps", "qps"))
        offered, answered = float(trials["offered_qps"].median()), float(trials["qps"].median())
        require(answered >= carried * offered,
                f"the open-loop flood offered {offered:,.0f} qps and the tuned front-end "
                f"answered {answered:,.0f} ({answered / offered:.0%})",
                "FLOOD_QPS at most the tuned front-end's rate, or GENERATOR=dnsperf", cause=SETTING)
    failed_share = b / offered_b
    low, high = SEED_FAILED_SHARE[0], SEED_FAILED_SHARE[1]
    verdict.measured = (f"{b:,.1f} -> {t:,.1f} failed/s; untuned failed {failed_share:.3%} of "
                        f"{offered_b:,.0f} qps offered (seed: {min(low, high):.2%}-"
                        f"{max(low, high):.2%})")
    per_trial = _trial_failures(base), _trial_failures(tuned)
    if all(len(f) >= 2 for f in per_trial):
        # each variant's trials: the mean failed/s (the seed's figure is a run's total: a
        # mean, which a few failing trials move where a median would not) with its t interval,
        # the tuned one against the seed's ~0, the untuned one's said beside it
        fb = Judged("untuned failed/s", mean_interval(per_trial[0]).of("trials"),
                    fmt="{:,.1f}")
        ft = Judged("tuned failed/s", mean_interval(per_trial[1]).of("trials"),
                    high=max_tuned, fmt="{:,.1f}")
        verdict.measured += f" (means over the trials: {fb.text()}, {ft.text()})"
        verdict.phrase = (f"{fb.value()} -> {ft.value()} failed queries/s (untuned "
                          f"{failed_share:.2%} of offered)")
        assert ft.interval.estimate < fb.interval.estimate, "failures did not drop"
        decide(verdict, ft)
        return
    verdict.phrase = (f"{b:,.0f} -> {t:,.0f} failed queries/s (untuned {failed_share:.2%} of "
                      "offered)")
    assert t < b, "failures did not drop"
    assert t <= max_tuned, "tuned setup still fails queries"


def _trial_failures(cell: Cell) -> list[float]:
    """A variant's failed queries/s per trial (its trials.csv; [] where it kept none)."""
    try:
        frame = cell.csv("trials.csv", ("failures_per_s",))
    except LabError:
        return []
    return [float(v) for v in frame["failures_per_s"].dropna()]
