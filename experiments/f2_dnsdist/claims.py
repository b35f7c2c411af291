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

from analysis.claim import DIRECTIONAL, TWO_SIDED, Verdict, claim, not_applicable, require
from analysis.derived import GENERATOR_BOUND_SHARE, require_below_ceiling
from analysis.rundata import Cell, Run

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
        not_applicable("no untuned (baseline) cell in this run")
    return base[0], run.cell(variant="tuned")


def _frontend_cores(run: Run, cell: Cell) -> int:
    """Cores the front-end had to itself: its recorded CPU set, else every core of the
    machine but one (the load generator's)."""
    own = cell.params.get("server_cores", cell.figure("frontend_cpus", optional=True))
    if own is not None:
        return int(own)
    return max(int((run.meta.get("machine") or {}).get("cpus") or 1) - 1, 0)


def _not_generator_limited(run: Run, cell: Cell) -> float:
    qps = float(cell.figure("qps"))
    require_below_ceiling(run, cell, qps, f"{cell.label} answered",
                          "the load generator on cores of its own, or an open-loop flood "
                          "generator")
    return qps


@claim(
    "F2.qps-gain",
    title="One reusePort listener per core roughly doubles dnsdist's qps",
    published="1 listener ~220-232k qps -> 8 reusePort listeners 417-445k qps (~1.9x)",
    source=SOURCE, effect=TWO_SIDED,
    tolerance="qps(tuned)/qps(untuned) between {low}x and {high}x",
    precondition="the tuned front-end has >= {min_listeners} listeners on as many cores of "
                 "its own (the seed's 8 vCPU; its recorded CPU set, else the machine's cores "
                 "but the generator's one), and neither variant is within "
                 "{bound:.0%} of the generator's ceiling measured in the run",
    fails_when="the gain is below {low}x (no scaling) or above {high}x",
    limits={"low": 1.5, "high": 2.5, "min_listeners": 8, "bound": GENERATOR_BOUND_SHARE},
)
def test_qps_gain(run: Run, verdict: Verdict, low: float, high: float, min_listeners: int,
                  bound: float) -> None:
    base, tuned = _pair(run)
    cores_condition(run, verdict, tuned)
    listeners = int(tuned.figure("listeners", optional=True) or 1)
    cores = _frontend_cores(run, tuned)
    require(listeners >= min_listeners and cores >= min_listeners,
            f"the tuned front-end had {listeners} listener(s) on {cores} core(s) of its own",
            f"a machine with >= {min_listeners} cores for dnsdist besides the generator's")
    b = _not_generator_limited(run, base)
    t = _not_generator_limited(run, tuned)
    require(b > 0, "the untuned front-end answered nothing", "see the untuned cell's logs")
    verdict.measured = f"{b:,.0f} -> {t:,.0f} qps ({t / b:.2f}x) with {listeners} listeners"
    verdict.phrase = (f"{b / 1000:,.0f}k -> {t / 1000:,.0f}k qps ({t / b:.1f}x), "
                      f"{listeners} listeners")
    assert low <= t / b <= high, f"tuned/untuned {t / b:.2f}x"


@claim(
    "F2.failures-drop",
    title="Tuning removes the failed queries",
    published="~72-144 failed/s with 1 listener -> 0 failures tuned",
    source=SOURCE, effect=DIRECTIONAL,
    tolerance="failed/s tuned <= {max_tuned}/s and below untuned",
    precondition="the untuned front-end failed >= {min_untuned}/s (the flood stressed it), "
                 "the tuned one answered >= {min_load:.0%} of the untuned qps, and an "
                 "open-loop flood offered no more than the tuned front-end can answer (it "
                 "answered >= {carried:.0%} of it): beyond that, failures are the flood's "
                 "excess, not the lost queries the seed's closed-loop dnsperf counted",
    fails_when="the tuned front-end still fails queries, or fails more than untuned",
    limits={"max_tuned": 1.0, "min_untuned": 10.0, "min_load": 0.95, "carried": 0.9},
)
def test_failures_drop(run: Run, verdict: Verdict, max_tuned: float,
                       min_untuned: float, min_load: float, carried: float) -> None:
    base, tuned = _pair(run)
    cores_condition(run, verdict, tuned)
    b, t = float(base.figure("failures_per_s")), float(tuned.figure("failures_per_s"))
    require(b >= min_untuned, f"untuned failed {b:,.1f} queries/s: nothing to remove",
            "a flood that overloads one listener (more clients or outstanding queries)")
    qb, qt = float(base.figure("qps")), float(tuned.figure("qps"))
    require(qt >= min_load * qb, f"tuned answered {qt:,.0f} qps against untuned {qb:,.0f}: "
            "fewer failures from less work", "the same flood on both variants")
    if tuned.params.get("generator") == "kxdpgun":
        trials = tuned.csv("trials.csv", ("offered_qps", "qps"))
        offered, answered = float(trials["offered_qps"].median()), float(trials["qps"].median())
        require(answered >= carried * offered,
                f"the open-loop flood offered {offered:,.0f} qps and the tuned front-end "
                f"answered {answered:,.0f} ({answered / offered:.0%})",
                "FLOOD_QPS at most the tuned front-end's rate, or GENERATOR=dnsperf")
    verdict.measured = f"{b:,.1f} -> {t:,.1f} failed/s"
    verdict.phrase = f"{b:,.0f} -> {t:,.0f} failed queries/s"
    assert t < b, "failures did not drop"
    assert t <= max_tuned, "tuned setup still fails queries"
