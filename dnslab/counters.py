"""Network counters and monitor series: the one place that parses /proc/net/snmp and
/proc/net/netstat, samples a namespace's counters, and reads the 1 Hz monitor CSVs back.

Counters, as a node's network namespace sees them:
- `parse_snmp(text)`: the header/value line pairs of /proc/net/snmp and /proc/net/netstat
  -> {table: {key: value}} (tables `Ip`, `Tcp`, `Udp`, `TcpExt`, ...);
- `tables_in(netns)`: both files' tables read inside a namespace, with `Links` (drops on the
  namespace's interfaces, /proc/net/dev) and `Kernel` (host-wide drops before any socket:
  the per-CPU backlog of /proc/net/softnet_stat, ARP's unresolved discards, and `BootId`, the
  kernel that counted them): where a datagram sent inside the lab and never received went;
- `sample_counters()` / `sample_in(netns)`: the monitor's counter columns (UDP errors, TCP
  opens, retransmissions, listen-queue drops, sockets by state, TIME_WAIT).

Monitor series (`monitor/<node>.csv`, `monitor/cores.csv`, columns in docs/architecture.md):
`read_monitor(csv)` -> its rows; `read_series(csv, column)` -> a `Series` (times, values)
with `max()`, `mean(t_start, t_end)` over a window, `growth()` (last minus first: what a
cumulative counter gained) and `mean_above(floor)`; `mean_cores(cores_csv, cpu_set, ...)`
the busy share of a CPU set; `peak_growth` / `peak_rate` the most a cumulative counter
gained within any window.
"""

from __future__ import annotations

import csv
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from dnslab.cpus import parse
from dnslab.nsenter import in_netns

# /proc/net/tcp state codes
TCP_ESTABLISHED, TCP_SYN_SENT, TCP_TIME_WAIT = "01", "02", "06"
PROC_NET = Path("/proc/thread-self/net")  # the calling thread's namespace
BOOT_ID = Path("/proc/sys/kernel/random/boot_id")  # one per kernel, whatever the namespace


# --- counters ---------------------------------------------------------------------------------

def parse_snmp(text: str) -> dict[str, dict[str, int]]:
    """Parse the header/value line pairs of /proc/net/snmp and /proc/net/netstat."""
    tables: dict[str, dict[str, int]] = {}
    lines = text.splitlines()
    for header, values in zip(lines[::2], lines[1::2], strict=False):
        name, _, keys = header.partition(":")
        _, _, nums = values.partition(":")
        tables[name] = {k: int(v) for k, v in zip(keys.split(), nums.split(), strict=False)}
    return tables


def read_tables(proc_net: Path = PROC_NET,
                boot_id: Path = BOOT_ID) -> dict[str, dict[str, int]]:
    """The tables of snmp and netstat under `proc_net` (netstat's only when it exists), and
    the drop counters `Links` and `Kernel` (those whose files exist). `Kernel` carries the
    kernel's boot id as an integer (`BootId`): emulated hosts are namespaces of one kernel,
    so its host-wide drops are one count however many hosts read them."""
    tables = parse_snmp((proc_net / "snmp").read_text())
    try:
        tables.update(parse_snmp((proc_net / "netstat").read_text()))
    except FileNotFoundError:
        pass
    try:
        tables["Links"] = link_drops((proc_net / "dev").read_text())
    except FileNotFoundError:
        pass
    kernel = {}
    try:
        kernel["BacklogDrops"] = backlog_drops((proc_net / "softnet_stat").read_text())
        kernel["ArpUnresolvedDiscards"] = arp_unresolved_discards(
            (proc_net / "stat" / "arp_cache").read_text())
    except FileNotFoundError:
        pass
    if kernel:
        try:
            kernel["BootId"] = uuid.UUID(boot_id.read_text().strip()).int
        except FileNotFoundError:
            pass
        tables["Kernel"] = kernel
    return tables


def link_drops(dev: str) -> dict[str, int]:
    """Packets dropped on every interface but loopback (/proc/net/dev's `drop` columns). A
    veth counts what its peer could not pass on as its own transmit drop and as the peer's
    receive drop."""
    rx = tx = 0
    for line in dev.splitlines()[2:]:
        name, _, fields = line.partition(":")
        if name.strip() == "lo" or not fields.split():
            continue
        values = fields.split()
        rx, tx = rx + int(values[3]), tx + int(values[11])
    return {"RxDrop": rx, "TxDrop": tx}


def backlog_drops(softnet_stat: str) -> int:
    """Packets dropped because a CPU's input backlog was full (netdev_max_backlog), summed
    over CPUs: host-wide, whatever namespace reads it."""
    return sum(int(line.split()[1], 16) for line in softnet_stat.splitlines() if line.split())


def arp_unresolved_discards(arp_cache: str) -> int:
    """Packets discarded while their next hop's address was being resolved (the neighbour
    queue was full or resolution failed), summed over CPUs: host-wide."""
    lines = arp_cache.splitlines()
    column = lines[0].split().index("unresolved_discards")
    return sum(int(line.split()[column], 16) for line in lines[1:] if line.split())


def tables_in(netns: str) -> dict[str, dict[str, int]]:
    """`read_tables()` inside the network namespace at `netns`."""
    return in_netns(netns, read_tables)


def tcp_states(proc_net: Path) -> dict[str, int]:
    """TCP sockets (v4 and v6) per state code, and in all."""
    counts = {TCP_ESTABLISHED: 0, TCP_SYN_SENT: 0, TCP_TIME_WAIT: 0, "total": 0}
    for name in ("tcp", "tcp6"):
        try:
            with open(proc_net / name) as handle:
                next(handle)
                for line in handle:
                    state = line.split(None, 4)[3]
                    counts["total"] += 1
                    if state in counts:
                        counts[state] += 1
        except FileNotFoundError:
            continue
    return counts


def sockstat_time_wait(proc_net: Path) -> int | None:
    with open(proc_net / "sockstat") as handle:
        for line in handle:
            if line.startswith("TCP:"):
                fields = line.split()
                return int(fields[fields.index("tw") + 1])
    return None


def sample_counters() -> dict[str, int]:
    """The network counters of the calling thread's namespace."""
    tables = read_tables(PROC_NET)
    udp, tcp, ext = tables["Udp"], tables["Tcp"], tables.get("TcpExt", {})
    states = tcp_states(PROC_NET)
    tw = sockstat_time_wait(PROC_NET)
    return {
        "udp_in_errors": udp["InErrors"],
        "udp_rcvbuf_errors": udp.get("RcvbufErrors", 0),
        "tcp_active_opens": tcp["ActiveOpens"],
        "tcp_passive_opens": tcp["PassiveOpens"],
        "retrans_segs": tcp["RetransSegs"],
        "listen_overflows": ext.get("ListenOverflows", 0),
        "listen_drops": ext.get("ListenDrops", 0),
        # SYNs this namespace sent again (a client whose SYN was dropped retries after 1 s)
        "syn_retrans": ext.get("TCPSynRetrans", 0),
        # connection requests dropped because the SYN queue was full (no syncookies)
        "req_q_full_drops": ext.get("TCPReqQFullDrop", 0),
        "tcp_estab": states[TCP_ESTABLISHED],
        "tcp_syn_sent": states[TCP_SYN_SENT],
        "tcp_time_wait": tw if tw is not None else states[TCP_TIME_WAIT],
        "tcp_total": states["total"],
        # how connections ended without TIME_WAIT on either side: resets sent (one closed
        # with unread data: TCPAbortOnClose; one reset while open: EstabResets)
        "tcp_out_rsts": tcp.get("OutRsts", 0),
        "tcp_estab_resets": tcp.get("EstabResets", 0),
        "tcp_abort_on_close": ext.get("TCPAbortOnClose", 0),
        "tcp_abort_on_data": ext.get("TCPAbortOnData", 0),
    }


def sample_in(netns: str) -> dict[str, int]:
    """`sample_counters()` inside the network namespace at `netns`."""
    return in_netns(netns, sample_counters)


def deltas(before: dict[str, int], after: dict[str, int], keys: Sequence[str]) -> dict[str, int]:
    """What each counter gained between two samples (a counter missing from one counts 0)."""
    return {k: after.get(k, 0) - before.get(k, 0) for k in keys}


# --- monitor series -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Series:
    """One column of a monitor CSV: the rows where it has a value, in file (time) order."""

    t: list[float]
    values: list[float]

    def max(self) -> float | None:
        return max(self.values) if self.values else None

    def mean(self, t_start: float, t_end: float) -> float | None:
        """Mean of the samples with t in (t_start, t_end], rounded to 0.1."""
        window = [v for t, v in zip(self.t, self.values, strict=True) if t_start < t <= t_end]
        return round(sum(window) / len(window), 1) if window else None

    def mean_above(self, floor: float) -> float | None:
        """Mean of the samples above `floor` (e.g. a daemon's CPU while it worked)."""
        busy = [v for v in self.values if v > floor]
        return round(sum(busy) / len(busy), 1) if busy else None

    def growth(self) -> float | None:
        """Last minus first sample: what a cumulative counter gained over the file."""
        return self.values[-1] - self.values[0] if self.values else None


@dataclass(frozen=True)
class MonitorFile:
    """The rows of a monitor CSV, as written (strings; a column is empty where a sample had
    no value, e.g. `cpu_pct` before the daemon started)."""

    rows: list[dict[str, str]]

    def series(self, column: str) -> Series:
        rows = [r for r in self.rows if r.get(column)]
        return Series([float(r["t"]) for r in rows], [float(r[column]) for r in rows])


def read_monitor(monitor_csv: Path) -> MonitorFile | None:
    """A monitor CSV's rows (None when the file does not exist)."""
    if not monitor_csv.exists():
        return None
    with open(monitor_csv) as handle:
        return MonitorFile(list(csv.DictReader(handle)))


def read_series(monitor_csv: Path, column: str) -> Series | None:
    """One column of a monitor CSV (None when the file does not exist)."""
    monitor = read_monitor(monitor_csv)
    return monitor.series(column) if monitor is not None else None


def window_mean(monitor_csv: Path, column: str, t_start: float, t_end: float) -> float | None:
    """Mean of a monitor column over (t_start, t_end]; None without file or samples."""
    series = read_series(monitor_csv, column)
    return series.mean(t_start, t_end) if series else None


def mean_cpu(monitor_csv: Path, t_start: float, t_end: float) -> float | None:
    """Mean `cpu_pct` of a node monitor's rows with t in (t_start, t_end]."""
    return window_mean(monitor_csv, "cpu_pct", t_start, t_end)


def mean_cores(cores_csv: Path, cpu_set: str, t_start: float, t_end: float) -> float | None:
    """Mean busy % of the cores in `cpu_set` over the rows of `cores.csv` with t in
    (t_start, t_end]; None when the set is not placed ("" or "any") or nothing was sampled."""
    if not cpu_set or cpu_set == "any" or not cores_csv.exists():
        return None
    columns = [f"cpu{c}" for c in parse(cpu_set)]
    with open(cores_csv) as handle:
        values = [float(r[c]) for r in csv.DictReader(handle)
                  if t_start < float(r["t"]) <= t_end for c in columns if r.get(c)]
    return round(sum(values) / len(values), 1) if values else None


MIN_RATE_SPAN_S = 0.9  # one 1 Hz sample's gap, less its jitter


def _windows(t: Sequence[float], values: Sequence[float],
             window_s: float) -> Iterator[tuple[float, float]]:
    """(seconds, increase) of a cumulative counter over every window of at most `window_s`
    that starts at a sample and ends at the last sample inside it."""
    # imported here: a lab host runs the sampling half of this module with Debian's python3
    # and its few packages (dnslab.hostcmd), without numpy
    import numpy as np

    order = np.argsort(np.asarray(t, dtype=float), kind="stable")
    times = np.asarray(t, dtype=float)[order]
    vals = np.asarray(values, dtype=float)[order]
    for i in range(times.size):
        j = int(np.searchsorted(times, times[i] + window_s, side="right")) - 1
        if j > i:
            yield float(times[j] - times[i]), float(vals[j] - vals[i])


def peak_growth(t: Sequence[float], values: Sequence[float], window_s: float) -> float:
    """The largest increase of a cumulative counter within any `window_s` (the whole series
    when it is shorter)."""
    return max((grew for _, grew in _windows(t, values, window_s)), default=0.0)


def peak_rate(t: Sequence[float], values: Sequence[float], window_s: float) -> float:
    """The highest increase of a cumulative counter per second over any `window_s` window
    spanning at least MIN_RATE_SPAN_S (a monitor's last row comes when it stops, maybe
    milliseconds after the tick before: a rate over that gap is noise)."""
    shortest = min(window_s, MIN_RATE_SPAN_S)
    return max((grew / span for span, grew in _windows(t, values, window_s)
                if span >= shortest), default=0.0)
