"""F1 derived figures: a cell's capacity by the seed's own criteria, the server's CPU at it
and the queue symptoms the seed's operators checked, from a tcp-fallback cell's raw files
(`stair.csv`, `burst.csv`) and figures, for the claims and the report alike.

The seed's capacity (its load protocol, seed 000): the highest stair step with no continuing
errors and TAT < 1 s, *held for the 10-minute burst*, then the function test and the 48 h
soak at that load ("the load at which none of the four tests gave an error is the rating").
A stair capacity whose burst failed is not it: the rating is lower, by an amount the run did
not measure. So `seed_capacity` gives the stair capacity only when its burst held (and the
load during the function test held, where one ran), else None with what was measured.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from analysis.derived import other_load, stair
from analysis.rundata import Cell
from dnslab import cpus
from dnslab.errors import LabError
from dnslab.thresholds import QUIET_OTHER_LOAD_PCT

SEED_CPU_PCT = 17.0  # the seed's BIND at its 18,000 qps burst ("CPU 17 %, memory 6 %")
CPU_BOUND_PCT = 90.0  # a server this busy at its capacity ran out of CPU
FINER_BURSTS = ("a burst search below the stair capacity (a finer stair, or longer steps: "
                "STEP_S), so that a load that holds the 600 s burst is found")
# the seed's symptom checks: netstat -su (receive buffer errors), netstat -st (times the
# listen queue of a socket overflowed, SYNs to LISTEN sockets dropped)
SYMPTOMS = ("listen_overflows", "listen_drops", "udp_rcvbuf_errors")


def label(cell: Cell) -> str:
    return (f"{cell.params.get('server')} {cell.params.get('records')}/"
            f"{cell.params.get('tuning')}")


@dataclass(frozen=True)
class SeedCapacity:
    """A cell's capacity by the seed's criteria (`qps`), or why the run has none
    (`missing`: the measured figures; `remedy`: what would make it judgeable)."""

    cell: Cell
    stair_qps: float | None
    qps: float | None
    missing: str = ""
    remedy: str = ""


def seed_capacity(cell: Cell, with_function: bool = True) -> SeedCapacity:
    """The highest load that held the stair and the burst (and the load during the function
    test, where one ran at it and `with_function`)."""
    name = label(cell)
    cap = stair(cell).capacity
    if cap is None:
        return SeedCapacity(cell, None, None, f"{name}: no stair step passed",
                            "a lower STAIR_START")
    held = cell.figure("burst_passed", optional=True)
    if held is None:
        return SeedCapacity(cell, cap, None, f"{name}: the {cap:,.0f} qps stair capacity had "
                            "no burst, so the seed's capacity is unknown",
                            "BURST_S=600 (the seed's burst)")
    if not bool(held):
        worst = cell.figure("burst_max_ms", optional=True)
        burst_qps = float(cell.figure("burst_qps", optional=True) or cap)
        return SeedCapacity(cell, cap, None, f"{name}: the {burst_qps:,.0f} qps burst failed"
                            + (f" (worst TAT {float(worst):,.0f} ms)" if worst else "")
                            + ", so the seed's capacity is lower", FINER_BURSTS)
    qps = float(cell.figure("burst_qps", optional=True) or cap)
    if with_function and cell.figure("function_changes", optional=True) is not None \
            and not bool(cell.figure("function_passed", optional=True)):
        return SeedCapacity(cell, cap, None, f"{name}: the load failed during the function "
                            f"test at {qps:,.0f} qps", FINER_BURSTS)
    return SeedCapacity(cell, cap, qps)


def _cores(cell: Cell, row: pd.Series) -> int:
    """How many cores the server had: the step's `server_cpus`, else the cell's placement."""
    for text in (row.get("server_cpus"), (cell.params.get("placement") or {}).get("server_cpus")):
        if text is None or (isinstance(text, float) and text != text):
            continue
        try:
            parsed = cpus.parse(str(text))
        except (LabError, ValueError):
            continue
        if parsed:
            return len(parsed)
    return 1


def _number(row: pd.Series, column: str) -> float | None:
    value = row.get(column)
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return None if number != number else number


def capacity_row(cell: Cell, rate: float) -> pd.Series | None:
    """The step that measured a load: the burst (the seed's CPU figure is the burst's mean)
    when it ran at that rate, else the stair's step at it."""
    if cell.has("burst.csv"):
        burst = cell.csv("burst.csv")
        at = burst[(burst["target_qps"].astype(float) - rate).abs() < 0.5]
        if not at.empty:
            return at.iloc[-1]
    return stair(cell).at(rate)


# the server's cores busier than its own processes by more than this many points: something
# else ran there (a shared machine), not the server's softirq work
FOREIGN_GAP_PCT = 40.0


def server_cpu(cell: Cell, rate: float) -> float | None:
    """The server's CPU at a load, as a share of the cores it had (busy % of its cores from
    `monitor/cores.csv`, softirq included; else its processes' CPU over its cores); None
    when the run did not record it. On a machine not known to be quiet, cores busier than
    the server's processes by more than FOREIGN_GAP_PCT points were busy with other work
    (run ec10: 98 % busy at 133 qps, BIND 9.16's own CPU 8.7 %): its processes' CPU then."""
    row = capacity_row(cell, rate)
    if row is None:
        return None
    busy = _number(row, "server_cores_busy_pct")
    process = _number(row, "server_cpu_pct")
    own = None if process is None else process / _cores(cell, row)
    if busy is None:
        return own
    load = other_load(cell)
    quiet = load is not None and load.mean_pct <= QUIET_OTHER_LOAD_PCT
    if own is not None and busy - own > FOREIGN_GAP_PCT and not quiet:
        return own
    return busy


def symptoms(row: pd.Series) -> dict[str, int] | None:
    """The seed's queue symptoms in one step: SYNs dropped at LISTEN (Linux's ListenDrops
    counts the listen-queue overflows too, so the larger of the two) and UDP receive-buffer
    errors; None when the step did not record them."""
    values = {c: _number(row, c) for c in SYMPTOMS}
    if values["listen_drops"] is None and values["listen_overflows"] is None:
        return None
    if values["udp_rcvbuf_errors"] is None:
        return None
    syn = max(values["listen_drops"] or 0.0, values["listen_overflows"] or 0.0)
    return {"syn_drops": int(syn), "rcvbuf_errors": int(values["udp_rcvbuf_errors"] or 0)}
