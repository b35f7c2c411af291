"""Derived figures several findings share: what the claims judge, computed from raw data.

Procedures record raw data (per-step and per-trial CSV, events, 1 Hz counters, tool output)
and the facts they measured directly; everything computed from those (a stair's capacity, a
share of the generator's ceiling) is computed once, so the claims, the plots and the report
all use the same numbers. What only one finding derives lives in its package's `derived.py`
(e.g. F3's cold starts in `experiments/f3_xfr/derived.py`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.claim import require
from analysis.rundata import SETTING, Cell, Run
from dnslab.errors import LabError
from dnslab.thresholds import GENERATOR_BOUND_SHARE, QUIET_OTHER_LOAD_PCT

__all__ = ["GENERATOR_BOUND_SHARE"]  # the findings' claims import it from here


# --- a quiet machine ---------------------------------------------------------------------------

@dataclass(frozen=True)
class OtherLoad:
    """What processes outside the lab used while a cell ran, in % of one core."""

    mean_pct: float
    max_pct: float
    seconds: int


def other_load(cell: Cell) -> OtherLoad | None:
    """From the cell's `monitor/cores.csv` `other_pct` column; None for a run that did not
    record it (before the column existed, or a lab across hosts)."""
    name = "monitor/cores.csv"
    if not cell.has(name):
        return None
    frame = cell.csv(name)
    if "other_pct" not in frame.columns:
        return None
    values = pd.to_numeric(frame["other_pct"], errors="coerce").dropna()
    if values.empty:
        return None
    return OtherLoad(round(float(values.mean()), 1), round(float(values.max()), 1), len(values))


def require_quiet(cell: Cell, what: str) -> OtherLoad | None:
    """A precondition for claims about the spread between repetitions: the machine ran
    little else while the cell ran (<= QUIET_OTHER_LOAD_PCT of one core on average)."""
    load = other_load(cell)
    require(load is None or load.mean_pct <= QUIET_OTHER_LOAD_PCT,
            f"{cell.label}: the machine was busy: other processes used "
            f"{load.mean_pct if load else 0:.0f} % of a core on average (at most "
            f"{load.max_pct if load else 0:.0f} %) during {what}",
            f"rerun with nothing else running (<= {QUIET_OTHER_LOAD_PCT:.0f} % of a core)",
            cause=SETTING)  # a busy machine: a rerun on a quiet one judges it
    return load


# --- stairs (tcp-fallback) -------------------------------------------------------------------

@dataclass(frozen=True)
class Stair:
    """One stair of load steps (`stair.csv`), judged step by step by the procedure."""

    rows: pd.DataFrame  # one row per step, sorted by target rate

    @property
    def capacity(self) -> float | None:
        """Highest target rate among passing steps (None when no step passed)."""
        passed = self.rows[self.rows["passed"]]
        return float(passed["target_qps"].max()) if not passed.empty else None

    @property
    def step(self) -> float | None:
        """The smallest rate increment between steps (the stair's resolution)."""
        rates = np.unique(self.rows["target_qps"].to_numpy(float))
        return float(np.diff(rates).min()) if rates.size > 1 else None

    @property
    def top_rate(self) -> float:
        return float(self.rows["target_qps"].max())

    def at(self, rate: float) -> pd.Series | None:
        """The (last) step run at a target rate."""
        found = self.rows[np.isclose(self.rows["target_qps"].to_numpy(float), rate)]
        return None if found.empty else found.iloc[-1]

    def rates(self) -> list[float]:
        return sorted(set(self.rows["target_qps"].astype(float)))

    def first_failure_above(self, rate: float) -> pd.Series | None:
        above = self.rows[(self.rows["target_qps"] > rate) & ~self.rows["passed"]]
        return None if above.empty else above.iloc[0]


def stair(cell: Cell, name: str = "stair.csv") -> Stair:
    frame = cell.csv(name, ("target_qps", "passed", "max_ms", "tcp_share"))
    if frame.empty:
        raise LabError(f"{cell.run.label}/{cell.rel(name)} has no load step",
                       hint="the stair ran no step: see the cell's dnsload log")
    frame = frame.copy()
    frame["passed"] = frame["passed"].map(_truthy)
    return Stair(frame.sort_values("target_qps", kind="stable").reset_index(drop=True))


def _truthy(value: object) -> bool:
    return str(value).strip().lower() in ("1", "true", "yes")


# --- the generator's ceiling ------------------------------------------------------------------

def generator_ceiling(run: Run, cell: Cell) -> float | None:
    """The load generator's own ceiling for this cell's load, measured in the same run on the
    run's CPU placement: the cell's `generator_ceiling_qps` figure; else, for a cell with
    dnsperf's `outstanding` (resolver-cache), the run's `phase=ceiling` cell's
    `ceiling_qps_q<q>` (the same pass against a canned responder; a warm cell that looped
    `warm_s` seconds: `ceiling_loop_qps_q<q>`); else the capacity of the stair of the run's
    `server=ceiling` cell with the same records (tcp-fallback: dnsload against `dnsload
    serve`); else the run's `variant=ceiling` cell (dnsdist-listeners): for an open-loop flood
    (`generator: kxdpgun`) the median rate it sent (`offered_qps` of its `trials.csv`), for a
    closed-loop one the answered `qps`."""
    own = cell.figure("generator_ceiling_qps", optional=True)
    if own is not None:
        return float(own)
    outstanding = cell.params.get("outstanding")
    passes = run.cells_where(phase="ceiling") if outstanding is not None else []
    if passes:
        looped = cell.params.get("cache") == "warm" and float(run.params.get("warm_s") or 0)
        name = f"ceiling_{'loop_' if looped else ''}qps_q{int(outstanding)}"
        value = passes[0].figure(name, optional=True)
        if value is not None:
            return float(value)
    records = cell.params.get("records")
    stairs = run.cells_where(server="ceiling", records=records) if records else []
    if stairs:
        return stair(stairs[0]).capacity
    ceiling_cells = run.cells_where(variant="ceiling")
    if ceiling_cells:
        ceiling = ceiling_cells[0]
        if ceiling.params.get("generator") == "kxdpgun":
            trials = ceiling.csv("trials.csv", ("offered_qps",))
            return float(trials["offered_qps"].median())
        value = ceiling.figure("qps", optional=True)
        return float(value) if value is not None else None
    return None


def require_below_ceiling(run: Run, cell: Cell, rate: float, label: str, remedy: str, *,
                          cause: str) -> float:
    """Precondition of every load claim: the rate is below GENERATOR_BOUND_SHARE of the
    generator's ceiling measured in the same run (else the run measured the generator).
    `cause`: what `remedy` needs when the generator was the limit (MACHINE: more or faster
    cores; SETTING: another generator or load). Returns the ceiling."""
    ceiling = generator_ceiling(run, cell)
    require(ceiling is not None, f"{label}: no generator ceiling measured in this run",
            "a run that measures the load generator's ceiling for the same load",
            cause=SETTING)
    assert ceiling is not None
    require(rate < GENERATOR_BOUND_SHARE * ceiling,
            f"{label}: {rate:,.0f} qps is {rate / ceiling:.0%} of the generator's ceiling "
            f"{ceiling:,.0f} qps (generator-limited)", remedy, cause=cause)
    return ceiling



# --- paced TCP trials (tcp-sysctl) -------------------------------------------------------------

def paced_ceiling(run: Run) -> pd.DataFrame | None:
    """dnsperf's own ceiling per load of a tcp-sysctl run: the `phase=ceiling` cell's paced
    trials against the canned responder (`ceiling.csv`), one row per `load_pct` with the
    median `target_qps`, and the best round's answered `qps` and `sent_qps` (sent /
    trial_s): what the generator can send, as the capacity is the server's best trial; a
    round the machine disturbed (run 188a: 23,236 then 44,863 qps for a 44,867 target) says
    nothing of that. None when the run has no ceiling cell (before it existed, or
    CEILING=false)."""
    cells = run.cells_where(phase="ceiling")
    if not cells:
        return None
    frame = cells[0].csv("ceiling.csv", ("mode", "load_pct", "target_qps", "qps", "sent"))
    paced = frame[frame["mode"] == "paced"].copy()
    paced["sent_qps"] = paced["sent"] / float(run.params["trial_s"])
    return (paced.groupby("load_pct", as_index=False)
            .agg(target_qps=("target_qps", "median"), qps=("qps", "max"),
                 sent_qps=("sent_qps", "max")))


def require_paced_load_reached(run: Run, load: float, remedy: str, *, cause: str) -> None:
    """Precondition of the tcp-sysctl claims at one load: the generator reached the load's
    target against the canned responder in this run (its answered qps >= GENERATOR_BOUND_SHARE
    of the target). Else the comparison is the generator's, not the server's. A profile trial
    that then sent less than its target did so because the server held dnsperf's connections
    back (a full accept queue, slow answers): that is part of what the trial measures, so it
    is judged, not excused. `cause`: what `remedy` needs when the generator fell short."""
    ceiling = paced_ceiling(run)
    require(ceiling is not None,
            "no generator ceiling measured in this run (a run from before the `phase=ceiling` "
            "cell, or CEILING=false)",
            "a run that measures dnsperf's ceiling for the same load (ceiling: true)",
            cause=SETTING)
    assert ceiling is not None
    at = ceiling[np.isclose(ceiling["load_pct"].to_numpy(float), load)]
    require(not at.empty, f"the ceiling cell ran no trial at {load:.0f} % load",
            "a ceiling cell with the same loads as the profile cells", cause=SETTING)
    reached, target = float(at["qps"].iloc[0]), float(at["target_qps"].iloc[0])
    require(reached >= GENERATOR_BOUND_SHARE * target,
            f"generator-limited at {load:.0f} % load: ceiling {reached:,.0f} qps for target "
            f"{target:,.0f} qps ({reached / target:.0%})", remedy, cause=cause)
