"""Altered data for F3 (zone transfers): each claim's effect removed or reversed in the raw
files the xfr procedures wrote (monitor/<secondary>.csv, zones_done.csv, xfr_events.csv and
cell.json figures), for `analysis.altered`'s check that a claim cannot pass without it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis.altered import Alteration, cells, edit_csv, edit_figures
from analysis.rundata import Cell, Run


def monitor_path(run: Run, cell: Cell) -> Path:
    return cell.dir / "monitor" / f"{run.node_with_role('secondary', cell)}.csv"


# --- xfr-30k-zones ----------------------------------------------------------------------------

def scale_time_wait(run: Run, factor: float, **wanted: str) -> int:
    def change(frame: pd.DataFrame) -> pd.DataFrame:
        frame["tcp_time_wait"] = (frame["tcp_time_wait"] * factor).round()
        return frame
    return sum(edit_csv(monitor_path(run, c), change) for c in cells(run, **wanted))


def time_wait_halved(run: Run) -> int:
    """TIME_WAIT never gets near the range: the ceiling is gone."""
    return scale_time_wait(run, 0.5, profile="default")


def time_wait_doubled(run: Run) -> int:
    """TIME_WAIT climbs past the range: the range is not the ceiling."""
    return scale_time_wait(run, 2.0, profile="default")


def drop_failures(run: Run, **wanted: str) -> int:
    def change(frame: pd.DataFrame) -> pd.DataFrame:
        return frame[frame["event"] != "connect_failed"]
    return sum(edit_csv(c.dir / "xfr_events.csv", change) for c in cells(run, **wanted))


def no_connect_failures(run: Run) -> int:
    """The secondary never failed to connect."""
    return drop_failures(run, profile="default")


def failures_late(run: Run) -> int:
    """The failures come at twice their time + 10 s, long after the ports ran out (a shift
    the 1 Hz monitor resolves at any scale, unlike an earlier failure in a run whose ports
    run out within a second)."""
    def change(frame: pd.DataFrame) -> pd.DataFrame:
        failed = frame["event"] == "connect_failed"
        frame.loc[failed, "t"] = frame.loc[failed, "t"] * 2 + 10
        return frame
    return sum(edit_csv(c.dir / "xfr_events.csv", change) for c in cells(run, profile="default"))


def seed_range_no_failures(run: Run) -> int:
    """The cells with the seed's range never failed to connect."""
    seeds = [c for c in run.cells if c.params.get("profile", "default") == "default"
             and c.sysctl(run.node_with_role("secondary", c),
                          "net.ipv4.ip_local_port_range") == "32768 60999"]
    return sum(edit_csv(c.dir / "xfr_events.csv",
                        lambda f: f[f["event"] != "connect_failed"]) for c in seeds)


def stretch_served(cell: Cell, factor: float) -> int:
    def change(frame: pd.DataFrame) -> pd.DataFrame:
        frame["t"] = frame["t"] * factor
        return frame
    return edit_csv(cell.dir / "zones_done.csv", change)


def all_served_s(cell: Cell) -> float | None:
    """When the cell's cold start had served every zone it served (zones_done.csv)."""
    done = cell.csv("zones_done.csv", ("t", "zones_served"))
    if done.empty or done["zones_served"].max() <= 0:
        return None
    return float(done.loc[done["zones_served"] >= done["zones_served"].max(), "t"].min())


def tls_three_times_slower(run: Run) -> int:
    """XoT takes three times as long to serve the zones as TCP did in the same profile and
    repetition (three times its own time at least), however fast it really was."""
    changed = 0
    for tls in cells(run, transport="tls"):
        # paired as F3.xot.not-slower pairs them: the same profile and repetition
        tcp = cells(run, transport="tcp", profile=str(tls.params.get("profile")),
                    rep=str(tls.params.get("rep")))
        tls_s = all_served_s(tls)
        tcp_s = all_served_s(tcp[0]) if tcp else None
        factor = 3.0 * max(1.0, (tcp_s or 0.0) / tls_s) if tls_s else 3.0
        changed += stretch_served(tls, factor)
    return changed


def wide_ports_never_finishes(run: Run) -> int:
    """wide-ports stalls one zone short of the end, as an exhausted default does."""
    changed = 0
    for cell in cells(run, profile="wide-ports"):
        zones = int(cell.figure("zones", optional=True) or 0)

        def change(frame: pd.DataFrame, zones: int = zones) -> pd.DataFrame:
            frame["zones_served"] = np.minimum(frame["zones_served"], zones - 1)
            return frame
        changed += edit_csv(cell.dir / "zones_done.csv", change)
    return changed


def add_failures(run: Run, profile: str) -> int:
    """Connect failures in `profile`'s cells, as many as its zones / 10, mid-way."""
    changed = 0
    for cell in cells(run, profile=profile):
        zones = int(cell.figure("zones", optional=True) or 100)

        def change(frame: pd.DataFrame, zones: int = zones) -> pd.DataFrame:
            middle = float(frame["t"].median()) if not frame.empty else 1.0
            extra = pd.DataFrame({"t": np.linspace(middle, middle + 1.0, max(zones // 10, 1)),
                                  "event": "connect_failed", "zone": "z0."})
            return pd.concat([frame, extra], ignore_index=True).sort_values("t")
        changed += edit_csv(cell.dir / "xfr_events.csv", change)
    return changed


def wide_ports_failures(run: Run) -> int:
    return add_failures(run, "wide-ports")


def tw_buckets_failures(run: Run) -> int:
    return add_failures(run, "tw-buckets*")


def time_wait_over_the_cap(run: Run) -> int:
    """TIME_WAIT three times the cap: the kernel did not enforce it."""
    changed = 0
    for cell in cells(run, profile="tw-buckets*"):
        cap = cell.sysctl(run.node_with_role("secondary", cell), "net.ipv4.tcp_max_tw_buckets")
        level = 3 * int(cap or 1000)

        def change(frame: pd.DataFrame, level: int = level) -> pd.DataFrame:
            frame["tcp_time_wait"] = np.maximum(frame["tcp_time_wait"], level)
            return frame
        changed += edit_csv(monitor_path(run, cell), change)
    return changed


# --- single transfers and the sweep (cell.json figures the procedures wrote) ------------

def tld_times_spread(run: Run) -> int:
    """The TLD transfer times vary by +-10 % between repetitions."""
    def change(figures: dict[str, Any]) -> None:
        figures["delays_s"] = [float(d) * (1.1 if i % 2 else 0.9) if d is not None else d
                               for i, d in enumerate(figures.get("delays_s") or [])]
    return sum(edit_figures(c, change) for c in run.cells)


def shift_delays(run: Run, to: float) -> int:
    """Every repetition's time `to`: the figures (from process start) and the AXFR's time by
    the secondary's log (repetitions.csv: its span and the daemon's own duration)."""
    def change(figures: dict[str, Any]) -> None:
        figures["delays_s"] = [to for _ in figures.get("delays_s") or []]

    def change_log(frame: pd.DataFrame) -> pd.DataFrame:
        for column in ("log_span_s", "log_secs"):
            if column in frame:
                frame[column] = frame[column].where(frame[column].isna(), to)
        return frame
    return sum(edit_figures(c, change) + edit_csv(c.dir / "repetitions.csv", change_log)
               for c in run.cells)


def smallest_takes_half_a_second(run: Run) -> int:
    return shift_delays(run, 0.45)


def smallest_clock_artefact(run: Run) -> int:
    """The seed's -0.354 s: two clocks of different precision."""
    return shift_delays(run, -0.354)


def tld_size_of_the_lab(run: Run) -> int:
    """The TLD transfer as small as the lab's 2026-11-24 zone: 446.6 MB in 36,360 messages."""
    return sum(edit_figures(c, lambda f: f.update(bytes=446_600_000, messages=36_360))
               for c in run.cells)


def sweep_ports_never_ran_out(run: Run) -> int:
    """No connect failure and TIME_WAIT at half the range in every sweep cell."""
    def change(cell: Cell) -> int:
        ports = int(cell.figure("port_range_size", optional=True) or 0)
        return edit_figures(cell, lambda f: f.update(connect_failures=0,
                                                      tw_peak=min(f.get("tw_peak") or 0,
                                                                  ports // 2)))
    return sum(change(c) for c in cells(run, profile="default"))


def sweep_control_superlinear(run: Run) -> int:
    """The wide-ports control stalls as the default did: the growth is not the ports'."""
    return sum(edit_figures(c, lambda f: f.update(total_time_s=None))
               for c in cells(run, profile="wide-ports"))


def sweep_linear(run: Run) -> int:
    """Every count takes the smallest count's time per zone: a straight line."""
    sweep = [c for c in run.cells if "zones" in c.params and c.params.get("phase") is None
             and c.params.get("profile", "default") == "default"]
    finished = [c for c in sweep if c.figure("total_time_s", optional=True)]
    if not finished:
        return 0
    smallest = min(finished, key=lambda c: int(c.params["zones"]))
    per_zone = float(smallest.figure("total_time_s")) / int(smallest.params["zones"])

    def change(cell: Cell) -> int:
        return edit_figures(cell, lambda f: f.update(
            total_time_s=round(per_zone * int(cell.params["zones"]), 3)))
    return sum(change(c) for c in sweep)


ALTERATIONS: dict[str, tuple[Alteration, ...]] = {
    "F3.default.tw-ceiling": (time_wait_halved, time_wait_doubled),
    # failures from a TIME_WAIT at half the range: not the ceiling
    "F3.default.connect-failures": (no_connect_failures, time_wait_halved),
    "F3.default.failure-time": (no_connect_failures, failures_late),
    "F3.seed-range.exhaustion": (seed_range_no_failures,),
    # connection reuse is reported, not judged: only XoT's time removes the effect
    "F3.xot.not-slower": (tls_three_times_slower,),
    "F3.wide-ports.no-failures": (wide_ports_failures,),
    "F3.wide-ports.faster": (wide_ports_never_finishes,),
    "F3.tw-buckets.no-failures": (tw_buckets_failures,),
    "F3.tw-buckets.tw-capped": (time_wait_over_the_cap,),
    "F3.tld.repeatable": (tld_times_spread,),
    "F3.tld.size": (tld_size_of_the_lab,),
    "F3.smallest.delay": (smallest_takes_half_a_second, smallest_clock_artefact),
    "F3.sweep.nonlinear": (sweep_linear, sweep_ports_never_ran_out,
                           sweep_control_superlinear),
}
