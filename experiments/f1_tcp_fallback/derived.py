"""F1 derived figures: a cell's capacity by the seed's own criteria, the server's CPU at it
and the queue symptoms the seed's operators checked, from a tcp-fallback cell's raw files
(`stair.csv`, `burst.csv`, `burst-probe.csv`) and figures, for the claims and the report
alike.

The seed's capacity (its load protocol, seed 000): the highest stair step with no continuing
errors and TAT < 1 s, *held for the 10-minute burst*, then the function test and the 48 h
soak at that load ("the load at which none of the four tests gave an error is the rating").
A stair capacity whose burst failed is not it: the rating is lower, and the procedure
searches below it for the load that holds the burst (as the seed did: stair 19,000 qps,
burst held at 18,000). So `seed_capacity` gives the load that held the burst (and the load
during the function test, where one ran), the stair capacity beside it, the search's
resolution; else None with what was measured.

The server's CPU is read only on a quiet machine: where other work shared the server's
cores, its cores' busy share is not the server's and its processes' CPU is what the others
left it (run ec10: 98 % busy at 133 qps, BIND 9.16's own 8.7 %); `busy_machine` says so.
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
SEARCH = ("BURST_SEARCH_STEPS=6 (the search below the stair capacity for the load that holds "
          "the 600 s burst)")
MORE_SEARCH = "more BURST_SEARCH_STEPS (or a lower STAIR_FLOOR), on a quiet machine"
# the seed's symptom checks: netstat -su (receive buffer errors), netstat -st (times the
# listen queue of a socket overflowed, SYNs to LISTEN sockets dropped)
SYMPTOMS = ("listen_overflows", "listen_drops", "udp_rcvbuf_errors")


def label(cell: Cell) -> str:
    return (f"{cell.params.get('server')} {cell.params.get('records')}/"
            f"{cell.params.get('tuning')}")


@dataclass(frozen=True)
class SeedCapacity:
    """A cell's capacity by the seed's criteria (`qps`), or why the run has none
    (`missing`: the measured figures; `remedy`: what would make it judgeable); `stair_qps`
    the stair capacity beside it, `searched` whether the burst search found it below the
    stair capacity, `resolution` how far above it the lowest failing load lay (a share)."""

    cell: Cell
    stair_qps: float | None
    qps: float | None
    missing: str = ""
    remedy: str = ""
    searched: bool = False
    resolution: float | None = None

    def words(self) -> str:
        """"1,700 qps (stair 2,000; the burst failed there, held here after a search)"."""
        if self.qps is None:
            return self.missing
        if not self.searched or self.stair_qps is None:
            return f"{self.qps:,.0f} qps"
        return (f"{self.qps:,.0f} qps (stair {self.stair_qps:,.0f}, whose burst failed; "
                "held after a search below it)")


def search_steps(cell: Cell) -> list[dict[str, object]]:
    """The burst and the search below it, in run order (`burst_search` figure; [] for runs
    from before the search or without a burst)."""
    steps = cell.figure("burst_search", optional=True)
    return list(steps) if isinstance(steps, list) else []


def _search_resolution(steps: list[dict[str, object]], held: float) -> float | None:
    above = [float(s["qps"]) for s in steps  # type: ignore[arg-type]
             if not s.get("passed") and float(s["qps"]) > held]  # type: ignore[arg-type]
    return (min(above) - held) / held if above else None


def seed_capacity(cell: Cell, with_function: bool = True) -> SeedCapacity:
    """The highest load that held the stair and the burst, at the stair capacity or found
    by the search below it (and the load during the function test, where one ran at it and
    `with_function`)."""
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
    steps = search_steps(cell)
    if not bool(held):
        worst = cell.figure("burst_max_ms", optional=True)
        burst_qps = float(cell.figure("burst_qps", optional=True) or cap)
        failed = f"{name}: the {burst_qps:,.0f} qps burst failed" + (
            f" (worst TAT {float(worst):,.0f} ms)" if worst else "")
        tried = steps[1:]
        if not tried:
            return SeedCapacity(cell, cap, None, failed + " and no search below it ran, so "
                                "the seed's capacity is lower", SEARCH)
        lowest = min(float(s["qps"]) for s in tried)  # type: ignore[arg-type]
        bursts = sum(1 for s in tried if s.get("kind") == "burst")
        return SeedCapacity(cell, cap, None, failed + f"; the search below it ({len(tried)} "
                            f"step(s), {bursts} full burst(s), down to {lowest:,.0f} qps) "
                            "found no load that held", MORE_SEARCH)
    qps = float(cell.figure("burst_qps", optional=True) or cap)
    searched = qps < cap
    resolution = _search_resolution(steps, qps) if searched else None
    if with_function and cell.figure("function_changes", optional=True) is not None \
            and not bool(cell.figure("function_passed", optional=True)):
        return SeedCapacity(cell, cap, None, f"{name}: the load failed during the function "
                            f"test at {qps:,.0f} qps", MORE_SEARCH, searched, resolution)
    return SeedCapacity(cell, cap, qps, searched=searched, resolution=resolution)


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


def busy_machine(cell: Cell, rate: float | None = None) -> str | None:
    """Why the server's CPU in this cell is not the server's (None: a quiet machine): other
    processes used more than QUIET_OTHER_LOAD_PCT of a core on average while the cell ran
    (`monitor/cores.csv` `other_pct`); for runs that did not record it, the server's cores
    busier than its own processes by more than FOREIGN_GAP_PCT points at `rate`."""
    load = other_load(cell)
    if load is not None:
        if load.mean_pct <= QUIET_OTHER_LOAD_PCT:
            return None
        return (f"{label(cell)}: the machine was busy: other processes used "
                f"{load.mean_pct:.0f} % of a core on average (at most {load.max_pct:.0f} %; "
                f"quiet: <= {QUIET_OTHER_LOAD_PCT:.0f} %)")
    row = capacity_row(cell, rate) if rate is not None else None
    if row is None:
        return None
    busy, process = _number(row, "server_cores_busy_pct"), _number(row, "server_cpu_pct")
    if busy is None or process is None:
        return None
    own = process / _cores(cell, row)
    if busy - own <= FOREIGN_GAP_PCT:
        return None
    return (f"{label(cell)}: the machine was busy: the server's cores {busy:.0f} % busy at "
            f"{rate:,.0f} qps, its own processes {own:.0f} % (other work took "
            f"{busy - own:.0f} points)")


QUIET_REMEDY = (f"rerun on a quiet machine (other processes <= {QUIET_OTHER_LOAD_PCT:.0f} % "
                "of a core)")


def server_cpu(cell: Cell, rate: float) -> float | None:
    """The server's CPU at a load, as a share of the cores it had (busy % of its cores from
    `monitor/cores.csv`, softirq included; else its processes' CPU over its cores); None
    when the run did not record it. Read it only where `busy_machine` is None: on a busy
    machine neither figure is the server's (the cores' share counts the others' work, its
    processes' share is what the others left it)."""
    row = capacity_row(cell, rate)
    if row is None:
        return None
    busy = _number(row, "server_cores_busy_pct")
    if busy is not None:
        return busy
    process = _number(row, "server_cpu_pct")
    return None if process is None else process / _cores(cell, row)


# the failure that bounds a capacity is one lone retried SYN when the client retried at most
# this many SYNs in it and its answers were fast (p99 under this share of the TAT limit):
# one overflow of a listen queue (BIND's default 10), not the load-driven queueing the
# seed saw (worst TAT 815 ms at its 12,000 qps capacity, before any 1 s SYN retry)
LONE_SYNS = 3
LONE_P99_SHARE = 0.10
LOAD_FILES = ("stair.csv", "burst.csv", "burst-probe.csv")


def bounding_failure(cell: Cell, capacity: float) -> pd.Series | None:
    """The failed load nearest above a capacity, among the stair's steps, the full bursts
    and the search's probes: what ended the capacity there (None: nothing failed above)."""
    failed = []
    for name in LOAD_FILES:
        if not cell.has(name):
            continue
        rows = stair(cell, name).rows
        failed.append(rows[~rows["passed"] & (rows["target_qps"].astype(float) > capacity)])
    above = pd.concat([f for f in failed if not f.empty]) if any(
        not f.empty for f in failed) else None
    if above is None:
        return None
    return above.sort_values("target_qps", kind="stable").iloc[0]


def retried_syns(row: pd.Series) -> int | None:
    """SYNs the client sent again in a step (each waited >= 1 s), else the server's SYNs
    dropped at LISTEN; None when the step counted neither."""
    retried = _number(row, "client_syn_retrans")
    if retried is not None and retried > 0:
        return int(retried)
    drops = [v for v in (_number(row, "listen_drops"), _number(row, "listen_overflows"))
             if v is not None]
    return int(max(drops)) if drops else None


def lone_syn(row: pd.Series, max_tat_ms: float) -> bool:
    """Whether a failed load failed on a lone retried SYN: only its worst TAT broke the
    limit (>= 1 s, a SYN's retry timer), its p99 stayed under LONE_P99_SHARE of the limit and
    at most LONE_SYNS SYNs were retried or dropped."""
    reasons = str(row.get("reasons") or "")
    if any(word in reasons for word in ("error rate", "offered", "nothing answered")):
        return False
    worst, p99 = _number(row, "max_ms"), _number(row, "p99_ms")
    syns = retried_syns(row)
    return (worst is not None and p99 is not None and syns is not None
            and worst >= 1000.0 and worst > max_tat_ms and p99 <= LONE_P99_SHARE * max_tat_ms
            and 1 <= syns <= LONE_SYNS)


def failure_words(row: pd.Series) -> str:
    """"4,200 qps: worst TAT 1,020 ms, p99 5 ms, 1 SYN retried, 1 listen-queue drop"."""
    drops = _number(row, "listen_drops")
    syns = _number(row, "client_syn_retrans")
    return (f"{float(row['target_qps']):,.0f} qps: worst TAT {float(row['max_ms']):,.0f} ms, "
            f"p99 {float(row['p99_ms']):,.0f} ms"
            + (f", {int(syns)} SYN(s) retried" if syns is not None else "")
            + (f", {int(drops)} SYN(s) dropped at LISTEN" if drops is not None else ""))


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
