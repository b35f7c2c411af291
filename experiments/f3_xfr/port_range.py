"""The port range of an F3 cold start: ports a secondary needs at its measured transfer
rate, the seed's range, and the TIME_WAIT cap that goes with a narrower range. The seed's
port facts (its range, its first failure, TIME_WAIT's length, the sysctl keys) are defined
here once for the package: the procedure, `derived.py`, `claims.py` and `plots.py` import
them.

`transfer_rate` reads a finished cold-start cell's raw files (1 Hz monitor, transfer log
events); `auto_port_range` turns a connection rate into the range the secondary uses up in a
given time; `tw_cap` scales a profile's TIME_WAIT cap to a range. The procedure that applies
them is `xfr.py` in this package (`choose_port_range`, `effective_sysctls`).
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

from dnslab.counters import read_series
from dnslab.errors import LabError

PORT_RANGE_KEY = "net.ipv4.ip_local_port_range"
TW_BUCKETS_KEY = "net.ipv4.tcp_max_tw_buckets"
SEED_PORT_RANGE = "32768 60999"   # the seed's (and Linux's) default ip_local_port_range
SEED_STATED_PORTS = 28_231         # that range's ports as the seed says (it holds 28,232)
SEED_FAILURE_S = 38.0              # the seed's first 'address not available', s after start
TIME_WAIT_S = 60.0                 # Linux's TCP_TIMEWAIT_LEN, not a sysctl
AUTO_RANGE_LOW = 20000             # where an automatic range starts (below the kernel's)
# well above the transfers a secondary runs at once (BIND's transfers-in here: 100), so a
# slow machine's narrow range runs out because of TIME_WAIT, not because of open transfers
MIN_AUTO_PORTS = 250
MIN_RATE_SAMPLES = 5               # 1 Hz monitor samples for a rate from connection counts


def tw_cap(setting: Any, profile_cap: int, ports: int | None) -> int:
    """The TIME_WAIT cap for a profile that sets one: `auto` keeps the profile's share of the
    seed's port range (1000 of 28,232) in a narrower range, so the cap stays far below the
    ports on any machine; a number is taken as it is; 0 or empty keeps the profile's value."""
    if str(setting).strip() == "auto":
        seed_ports = port_range_size(SEED_PORT_RANGE) or 1
        if ports is None or ports >= seed_ports:
            return profile_cap
        return max(1, round(profile_cap * ports / seed_ports))
    if setting in (None, "", 0, "0"):
        return profile_cap
    try:
        return int(setting)
    except (TypeError, ValueError):
        raise LabError(f"TW_BUCKETS={setting!r} is not a number",
                       hint="TW_BUCKETS=auto, 0 (the profile's value) or a count") from None


def port_range_size(value: str | None) -> int | None:
    if not value:
        return None
    low, high = (int(v) for v in value.split())
    return high - low + 1


def transfer_rate(cell_dir: Path, window_s: float | None = None
                  ) -> dict[str, float | int | None]:
    """The secondary's rates in a finished cold-start cell, from its raw files: TCP
    connections opened per second (what uses ports; 1 Hz monitor, from the last sample before
    growth to the last with growth, or only over the first `window_s` seconds of it: the rate
    falls as the secondary holds more zones, and ports run out on what it opened in the
    first seconds; never past the cell's first connect failure, after which the secondary
    opens only as fast as TIME_WAIT frees ports: BIND 9.20 ran out of the seed's range at
    17 s) and transfers completed per second (log events, 10th to 90th percentile so the
    start and the tail do not count). The monitor and the log events share one clock."""
    out: dict[str, float | int | None] = {"connections_per_s": None, "transfers_per_s": None,
                                          "transfers": 0, "monitor_samples": 0,
                                          "first_failure_t": None}
    times: list[float] = []
    events = cell_dir / "xfr_events.csv"
    if events.exists():
        with open(events) as handle:
            rows = list(csv.DictReader(handle))
        times = sorted(float(r["t"]) for r in rows if r["event"] == "transfer_ok")
        failed = [float(r["t"]) for r in rows if r["event"] == "connect_failed"]
        out["first_failure_t"] = min(failed) if failed else None
    monitor = next((cell_dir / "monitor").glob("sec-*.csv"), None)
    opens = read_series(monitor, "tcp_active_opens") if monitor is not None else None
    if opens is not None:
        t, opened = opens.t, opens.values
        moving = [i for i in range(1, len(t)) if opened[i] > opened[i - 1]]
        if moving:
            first, last = moving[0] - 1, moving[-1]
            end_t = t[first] + window_s if window_s is not None else math.inf
            if out["first_failure_t"] is not None:
                end_t = min(end_t, float(out["first_failure_t"]))
            if end_t < t[last]:
                inside = [i for i in range(first + 1, last + 1) if t[i] <= end_t]
                last = inside[-1] if inside else first + 1
            span = t[last] - t[first]
            out["monitor_samples"] = last - first + 1
            if span > 0:
                out["connections_per_s"] = round((opened[last] - opened[first]) / span, 1)
    out["transfers"] = len(times)
    if len(times) >= 10:
        lo, hi = times[len(times) // 10], times[(9 * len(times)) // 10]
        if hi > lo:
            out["transfers_per_s"] = round(0.8 * len(times) / (hi - lo), 1)
    return out


def auto_port_range(connections_per_s: float, failure_at_s: float,
                    seed_range: str = SEED_PORT_RANGE) -> str:
    """The range whose ports the secondary uses up in `failure_at_s` seconds at the measured
    rate (never wider than the seed's: a machine that fast exhausts the seed's range itself)."""
    seed_ports = port_range_size(seed_range) or 0
    ports = max(MIN_AUTO_PORTS, int(connections_per_s * failure_at_s))
    if ports >= seed_ports:
        return seed_range
    return f"{AUTO_RANGE_LOW} {AUTO_RANGE_LOW + ports - 1}"
