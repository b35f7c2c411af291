"""Node monitors: once a second, the counters the seed authors read by hand with netstat and sar.

For each monitored node a thread joins the node's network namespace and samples, as that
namespace sees them: UDP InErrors and RcvbufErrors, TCP ActiveOpens, PassiveOpens and
RetransSegs (/proc/net/snmp), ListenOverflows, ListenDrops, TCPSynRetrans and TCPReqQFullDrop
(/proc/net/netstat), TCP
sockets by state (/proc/net/tcp) and TIME_WAIT (/proc/net/sockstat), plus the daemon's CPU
and RSS (its whole process tree). Rows go to `monitor/<node>.csv` as they are taken, so an
interrupted run keeps what was measured. Beside them, `monitor/cores.csv` keeps every core's
busy share per second (`t`, `cpu0`, `cpu1`, ...: % of that second the core was not idle,
softirq included), which with disjoint CPU sets (dnslab/cpus.py) is each node's whole CPU use,
and `other_pct`: what processes outside the lab used (% of one core), so a run says whether
the machine was quiet.
The counters are sampled and the files read back by dnslab/counters.py.
"""

from __future__ import annotations

import csv
import subprocess
import threading
import time
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import IO, Any, Protocol

import psutil

from dnslab.counters import sample_counters
from dnslab.cpus import CoreSampler, OtherLoadSampler
from dnslab.nsenter import in_netns


class Host(Protocol):
    """What a monitor needs of a lab host (`dnslab.hosts.Host`; not imported: the hosts'
    own commands import this module)."""

    local: bool

    def python_argv(self, *args: str) -> list[str]: ...

    def popen(self, argv: list[str], **kwargs: Any) -> subprocess.Popen: ...

COLUMNS = ["t", "cpu_pct", "rss_kb", "udp_in_errors", "udp_rcvbuf_errors", "tcp_active_opens",
           "tcp_passive_opens", "listen_overflows", "listen_drops", "retrans_segs",
           "tcp_estab", "tcp_time_wait", "tcp_syn_sent", "tcp_total", "syn_retrans",
           "req_q_full_drops", "tcp_out_rsts", "tcp_estab_resets", "tcp_abort_on_close",
           "tcp_abort_on_data"]

def _output(out: Path | None, stream: IO[str] | None) -> Any:
    return open(out, "w", newline="") if out is not None else nullcontext(stream)


MIN_CPU_SPAN_S = 0.5  # the shortest span a CPU % is computed over


class _ProcessTree:
    """CPU % and RSS of a daemon and its children (nsd forks workers). The pid is asked for
    at every sample until the daemon exists, so a node started after its monitor is seen."""

    def __init__(self, pid: Callable[[], int | None]):
        self.pid = pid
        self.root: psutil.Process | None = None
        self.last_cpu: float | None = None
        self.last_t = time.monotonic()

    def sample(self) -> tuple[float | None, int | None]:
        if self.root is None:
            pid = self.pid()
            if not pid or not psutil.pid_exists(pid):
                return None, None
            self.root = psutil.Process(pid)
        try:
            procs = [self.root, *self.root.children(recursive=True)]
            cpu = sum(sum(p.cpu_times()[:2]) for p in procs)
            rss = sum(p.memory_info().rss for p in procs) // 1024
        except psutil.Error:
            return None, None
        now = time.monotonic()
        pct = None
        # CPU time moves in 10 ms ticks: over a few ms (the last row, written when the
        # monitor stops) one tick would read as hundreds of per cent
        if self.last_cpu is None or now - self.last_t >= MIN_CPU_SPAN_S:
            if self.last_cpu is not None:
                pct = round(100.0 * (cpu - self.last_cpu) / (now - self.last_t), 1)
            self.last_cpu, self.last_t = cpu, now
        return pct, rss


class NodeMonitor:
    """Samples one node every `interval` seconds into a CSV file until stopped."""

    def __init__(self, node: str, netns: str, pid: Callable[[], int | None], out: Path | None,
                 interval: float = 1.0, t0: float | None = None, stream: IO[str] | None = None):
        self.node, self.netns, self.pid, self.out = node, netns, pid, out
        self.stream = stream  # rows go here instead of `out` (a lab host's monitor: stdout)
        self.interval = interval
        self.t0 = t0 if t0 is not None else time.monotonic()
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._run, name=f"monitor-{node}", daemon=True)
        self.rows = 0
        self.error: BaseException | None = None

    def start(self) -> None:
        if self.out is not None:
            self.out.parent.mkdir(parents=True, exist_ok=True)
        self.thread.start()

    def stop(self) -> None:
        self.stop_event.set()
        self.thread.join(timeout=5)

    def _run(self) -> None:
        try:
            in_netns(self.netns, self._loop)
        except BaseException as exc:  # reported by the owner after stop()
            self.error = exc

    def _loop(self) -> None:
        tree = _ProcessTree(self.pid)
        with _output(self.out, self.stream) as handle:
            writer = csv.DictWriter(handle, fieldnames=COLUMNS)
            writer.writeheader()
            tick = time.monotonic()
            # a last row when stopped: the state the measurement ended in (a transfer run's
            # last TIME_WAIT sockets appear after the last 1 s tick, not before it)
            while True:
                stopping = self.stop_event.is_set()
                row: dict[str, object] = {"t": round(time.monotonic() - self.t0, 3)}
                row.update(sample_counters())
                row["cpu_pct"], row["rss_kb"] = tree.sample()
                writer.writerow(row)
                handle.flush()
                self.rows += 1
                if stopping:
                    break
                tick += self.interval
                self.stop_event.wait(max(0.0, tick - time.monotonic()))


class CoreMonitor:
    """Samples every core's busy share every `interval` seconds into a CSV file."""

    def __init__(self, out: Path | None, interval: float = 1.0, t0: float | None = None,
                 stream: IO[str] | None = None,
                 lab_netns: Callable[[], list[str]] | None = None):
        self.out, self.interval, self.stream = out, interval, stream
        # the lab's network namespaces: with them, an `other_pct` column says what else ran
        self.lab_netns = lab_netns
        self.t0 = t0 if t0 is not None else time.monotonic()
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="monitor-cores", daemon=True)
        self.rows = 0

    def start(self) -> None:
        if self.out is not None:
            self.out.parent.mkdir(parents=True, exist_ok=True)
        self.thread.start()

    def stop(self) -> None:
        self.stop_event.set()
        self.thread.join(timeout=5)

    def _loop(self) -> None:
        sampler = CoreSampler()
        other = OtherLoadSampler(self.lab_netns) if self.lab_netns is not None else None
        columns = ["t", *(f"cpu{c}" for c in sorted(sampler.last))]
        columns += ["other_pct"] if other is not None else []
        with _output(self.out, self.stream) as handle:
            writer = csv.DictWriter(handle, fieldnames=columns, extrasaction="ignore")
            writer.writeheader()
            tick = time.monotonic()
            while True:
                tick += self.interval
                if self.stop_event.wait(max(0.0, tick - time.monotonic())):
                    break
                row: dict[str, object] = {"t": round(time.monotonic() - self.t0, 3)}
                row.update({f"cpu{c}": v for c, v in sampler.sample().items()})
                if other is not None:
                    row["other_pct"] = other.sample()
                writer.writerow(row)
                handle.flush()
                self.rows += 1


class Monitors:
    """A group of node monitors, and the per-core monitor, sharing one time origin."""

    def __init__(self, out_dir: Path, interval: float = 1.0, cores: bool = True,
                 lab_netns: Callable[[], list[str]] | None = None):
        self.out_dir = out_dir
        self.interval = interval
        self.t0 = time.monotonic()
        self.monitors: list[NodeMonitor] = []
        self.cores: CoreMonitor | None = None
        if cores:
            self.cores = CoreMonitor(out_dir / "cores.csv", interval, self.t0,
                                     lab_netns=lab_netns)
            self.cores.start()

    def add(self, node: str, netns: str, pid: Callable[[], int | None],
            host: Host | None = None, daemon: bool = True) -> NodeMonitor | RemoteMonitor:
        """Monitor a node: in a thread here, or on the node's own host (`host`). A node
        without a daemon (`daemon` false: a client) has no CPU and RSS columns."""
        out = self.out_dir / f"{node}.csv"
        monitor: NodeMonitor | RemoteMonitor
        if host is not None and not host.local:
            known = pid() or (0 if daemon else -1)  # 0: the host finds it; -1: none
            monitor = RemoteMonitor(host, out, ["--node", node, "--netns", netns,
                                                "--pid", str(known)], self.t0)
        else:
            monitor = NodeMonitor(node, netns, pid, out, self.interval, self.t0)
            monitor.start()
        self.monitors.append(monitor)
        return monitor

    def add_cores(self, host: Host, out: Path) -> None:
        """Every core's busy share of a lab host, into `out`."""
        if host.local:
            monitor: CoreMonitor | RemoteMonitor = CoreMonitor(out, self.interval, self.t0)
            monitor.start()
        else:
            monitor = RemoteMonitor(host, out, ["--cores"], self.t0)
        self.monitors.append(monitor)

    def stop(self) -> None:
        for monitor in self.monitors:
            monitor.stop()
        if self.cores is not None:
            self.cores.stop()


class RemoteMonitor:
    """A monitor that runs on a lab host (the package's `monitor` host command): its rows
    come over ssh straight into the file here, on the cell's time origin (shifted by the
    time it started; the host's clock ticks them). It stops when its stdin is closed. A
    node's daemon not started yet is found by the host as the first process of the node's
    namespace."""

    def __init__(self, host: Host, out: Path, args: list[str], t0: float):
        out.parent.mkdir(parents=True, exist_ok=True)
        self.out = out
        self.handle = open(out, "w")
        argv = host.python_argv("monitor", *args, "--t0-offset", f"{time.monotonic() - t0:.3f}")
        self.proc = host.popen(argv, stdin=subprocess.PIPE, stdout=self.handle,
                               stderr=subprocess.DEVNULL)
        self.error: BaseException | None = None

    @property
    def rows(self) -> int:
        self.handle.flush()
        with open(self.out) as handle:
            return max(sum(1 for _ in handle) - 1, 0)

    def stop(self) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.handle.close()
