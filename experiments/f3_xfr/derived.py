"""F3 derived figures: what a cold-start secondary did (ColdStart), from its raw files
(xfr_events.csv, zones_done.csv, the secondary's 1 Hz monitor), for the claims, the plots
and the report alike.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from analysis.rundata import Cell, Run
from dnslab.counters import peak_growth, peak_rate
from dnslab.errors import LabError
from experiments.f3_xfr.port_range import PORT_RANGE_KEY, SEED_PORT_RANGE, TIME_WAIT_S


@dataclass(frozen=True)
class ColdStart:
    """What a cold-start secondary did, from its raw files."""

    zones: int
    ports: int  # size of the secondary's ephemeral port range (read back)
    total_time_s: float | None  # all zones served (None: not before the deadline)
    connect_failures: int
    first_connect_failure_s: float | None
    tw_peak: float
    open_rate_per_s: float  # peak new TCP connections per second (10 s window)
    attempts_per_tw: float  # most connection attempts (opened + refused) in any 60 s

    @property
    def predicted_tw_peak(self) -> float:
        """Connections closed within the last 60 s are all in TIME_WAIT: the most connection
        attempts the secondary made in any 60 s window, never above the zone count."""
        return min(float(self.zones), self.attempts_per_tw)

    @property
    def exhaustion_predicted(self) -> bool:
        return self.predicted_tw_peak >= self.ports


def port_range_size(text: str) -> int:
    low, high = (int(v) for v in str(text).split())
    return high - low + 1


def cold_start(run: Run, cell: Cell) -> ColdStart:
    node = run.node_with_role("secondary", cell)
    zones = int(cell.figure("zones", optional=True) or cell.params.get("zones") or 0)
    if zones <= 0:
        raise LabError(f"{cell.rel('cell.json')} gives no zone count",
                       hint="the procedure must record the figure 'zones'")
    read_back = cell.sysctl(node, PORT_RANGE_KEY)
    ports = (port_range_size(read_back) if read_back is not None
             else int(cell.figure("port_range_size")))
    events = cell.csv("xfr_events.csv", ("t", "event"))
    fails = events[events["event"] == "connect_failed"]
    done = cell.csv("zones_done.csv", ("t", "zones_served"))
    served = done[done["zones_served"] >= zones]
    mon = cell.monitor(node, ("t", "tcp_time_wait", "tcp_active_opens")).sort_values("t")
    fail_times = np.sort(fails["t"].to_numpy(float))
    attempts = mon[["t"]].copy()
    attempts["n"] = (mon["tcp_active_opens"].to_numpy(float)
                     + np.searchsorted(fail_times, mon["t"].to_numpy(float), side="right"))
    return ColdStart(
        zones=zones, ports=ports,
        total_time_s=float(served["t"].min()) if not served.empty else None,
        connect_failures=int(len(fails)),
        first_connect_failure_s=float(fails["t"].min()) if not fails.empty else None,
        tw_peak=float(mon["tcp_time_wait"].max()),
        open_rate_per_s=peak_rate(mon["t"], mon["tcp_active_opens"], window_s=10.0),
        attempts_per_tw=peak_growth(attempts["t"], attempts["n"], window_s=TIME_WAIT_S),
    )


def time_ports_used(run: Run, cell: Cell, ports: int) -> float | None:
    """When the secondary's TCP active opens since cell start first reached `ports`."""
    node = run.node_with_role("secondary", cell)
    mon = cell.monitor(node, ("t", "tcp_active_opens")).sort_values("t")
    opened = mon["tcp_active_opens"].to_numpy(float) - float(mon["tcp_active_opens"].iloc[0])
    idx = np.nonzero(opened >= ports)[0]
    if idx.size == 0:
        return None
    i = int(idx[0])
    t = mon["t"].to_numpy(float)
    if i == 0:
        return float(t[0])
    # linear interpolation between the two 1 Hz samples around the crossing
    frac = (ports - opened[i - 1]) / max(opened[i] - opened[i - 1], 1e-9)
    return float(t[i - 1] + frac * (t[i] - t[i - 1]))


def tw_at(run: Run, cell: Cell, t: float) -> float:
    """TIME_WAIT on the secondary at time t: the highest 1 Hz sample within one second either
    side. In a cold start's first 60 s no socket leaves TIME_WAIT, so the count only grows and
    this is the first sample after t: an upper bound. The sample before is no bound at all when
    the range runs out between two samples (pdns at SCALE=ci: 0 at 3.0 s, all 250 ports at
    4.0 s, the first failure at 3.19 s, after its 250 transfers), and failures at a TIME_WAIT
    well below the range still show as such one sample later."""
    node = run.node_with_role("secondary", cell)
    mon = cell.monitor(node, ("t", "tcp_time_wait"))
    near = mon[(mon["t"] >= t - 1.0) & (mon["t"] <= t + 1.0)]
    if near.empty:
        near = mon.iloc[(mon["t"] - t).abs().argsort()[:1]]
    return float(near["tcp_time_wait"].max())


SEED_PORTS = port_range_size(SEED_PORT_RANGE)  # 28,232 ports (the seed says 28,231)


def port_range_read_back(run: Run, cell: Cell) -> str | None:
    """The secondary's ip_local_port_range as the kernel read it back in this cell."""
    return cell.sysctl(run.node_with_role("secondary", cell), PORT_RANGE_KEY)


def connection_rate(run: Run, cell: Cell) -> float | None:
    """New TCP connections per second the secondary opened: the rate the run sized its port
    range from (meta.json `port_range_choice` for the cell's secondary and transport, the
    calibration's first `failure_at_s`), else the cell's own peak 10 s rate (None for a cell
    without its raw files)."""
    key = f"{cell.params.get('secondary', '')},{cell.params.get('transport', 'tcp')}"
    choice = (run.meta.get("port_range_choice") or {}).get(key) or {}
    rate = choice.get("rate_used_per_s")
    if rate:
        return float(rate)
    try:
        return cold_start(run, cell).open_rate_per_s
    except LabError:
        return None


def connections_per_zone(run: Run, cell: Cell) -> float:
    """TCP connections the secondary opened per zone it served in a cold start (1 Hz monitor:
    active opens from the first to the last sample, over the zones served at the end)."""
    node = run.node_with_role("secondary", cell)
    mon = cell.monitor(node, ("t", "tcp_active_opens")).sort_values("t")
    opened = float(mon["tcp_active_opens"].iloc[-1] - mon["tcp_active_opens"].iloc[0])
    done = cell.csv("zones_done.csv", ("t", "zones_served"))
    served = float(done["zones_served"].max()) if not done.empty else 0.0
    if served <= 0:
        raise LabError(f"{cell.rel('zones_done.csv')}: no zone served",
                       hint="see the secondary's log in the cell folder")
    return opened / served


FINE_LOG_S = 0.01  # a log clock this fine times an AXFR by its own lines
# seed 002's .ch AXFR: "+-0.6 %" over 10 repetitions; F3.tld.repeatable allows each repetition
# that much from the mean plus room for the lab's own timer (the plot draws both)
SEED_TLD_SPREAD = 0.006
TLD_TIMER_ROOM = 0.004
TLD_SPREAD_BAND = 0.01  # SEED_TLD_SPREAD + TLD_TIMER_ROOM


def is_finite(value: object) -> bool:
    """Whether a figure is a finite number (a failed repetition's None or NaN is not)."""
    try:
        return math.isfinite(float(value))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False


def finite_delays(cell: Cell, required: bool = False) -> list[float]:
    """A cell's repetition times (`delays_s`) that are numbers (a failed one is left out);
    `required`: a cell without the figure is an error, as a claim reads it."""
    return [float(d) for d in cell.figure("delays_s", optional=not required) or []
            if is_finite(d)]


def transfer_log_time(row: dict[str, Any]) -> float | None:
    """One AXFR's time from the secondary's own log: the span between the lines that open and
    close it when the log clock is fine enough, else the duration the daemon reports with it
    (Knot's stderr log has whole seconds; its "finished, 27.50 seconds" has 10 ms)."""
    span, resolution = row.get("log_span_s"), row.get("log_resolution_s") or 1.0
    if span is not None and resolution <= FINE_LOG_S:
        return float(span)
    return float(row["log_secs"]) if row.get("log_secs") is not None else None


def transfer_log_error(row: dict[str, Any]) -> float:
    """The timing error of `transfer_log_time`: the log clock's resolution, or the 10 ms of
    the daemon's own duration (BIND prints ms, Knot and NSD hundredths)."""
    resolution = row.get("log_resolution_s") or 1.0
    if row.get("log_span_s") is not None and resolution <= FINE_LOG_S:
        return float(resolution)
    return FINE_LOG_S


def log_timed_transfers(cell: Cell) -> list[tuple[float, float]]:
    """(time, error) of each repetition's AXFR by the secondary's own log (repetitions.csv),
    for the repetitions whose log timed it."""
    if not cell.has("repetitions.csv"):
        return []
    frame = cell.csv("repetitions.csv")
    rows = [{k: (None if isinstance(v, float) and np.isnan(v) else v) for k, v in row.items()}
            for row in frame.to_dict("records")]
    return [(t, transfer_log_error(row)) for row in rows
            if (t := transfer_log_time(row)) is not None]
