"""dnsperf and resperf inside a lab node: run them, keep their raw output, parse their figures.

Shared by the F2 (`dnsdist`), F4 (`resolver`) and F5 (`tcp_sysctl`) procedures. Every run
writes the tool's raw stdout+stderr next to the cell's other files and returns a
`DnsperfResult` with what dnsperf printed plus the generator's own CPU time (from the
process's rusage), so a run can tell whether the generator or the server was the limit. The
version each tool printed, where it ran, goes to the lab's record of its generators
(`Lab.note_generator`: meta.json `generators`, the report's environment).
"""

from __future__ import annotations

import csv
import re
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from dnslab.errors import LabError
from dnslab.lab import Lab
from dnslab.probe import check_lab_address

_NUM = r"([0-9.]+)"
_FIELDS: dict[str, re.Pattern[str]] = {
    "sent": re.compile(r"Queries sent:\s+(\d+)"),
    "completed": re.compile(r"Queries completed:\s+(\d+)"),
    "lost": re.compile(r"Queries lost:\s+(\d+)"),
    "interrupted": re.compile(r"Queries interrupted:\s+(\d+)"),
    "run_time_s": re.compile(r"Run time \(s\):\s+" + _NUM),
    "qps": re.compile(r"Queries per second:\s+" + _NUM),
    "avg_latency_s": re.compile(r"^\s*Average Latency \(s\):\s+" + _NUM, re.M),
    "min_latency_s": re.compile(r"^\s*Average Latency \(s\):\s+[0-9.]+ \(min " + _NUM, re.M),
    "max_latency_s": re.compile(r"^\s*Average Latency \(s\):.*max " + _NUM + r"\)", re.M),
    "stdev_latency_s": re.compile(r"^\s*Latency StdDev \(s\):\s+" + _NUM, re.M),
    "reconnections": re.compile(r"Reconnections:\s+(\d+)"),
}
_RCODES = re.compile(r"Response codes:\s+(.*)")
# what dnsperf and resperf print first: "DNS Performance Testing Tool" / "Version 2.14.0"
_VERSION = re.compile(r"^Version (\S+)$", re.M)
_RCODE_ITEM = re.compile(r"([A-Z]+) (\d+)")


@dataclass
class DnsperfResult:
    """What one dnsperf run printed, and what it cost the generator."""

    sent: int = 0
    completed: int = 0
    lost: int = 0
    interrupted: int = 0
    run_time_s: float = 0.0
    qps: float = 0.0
    avg_latency_s: float | None = None
    min_latency_s: float | None = None
    max_latency_s: float | None = None
    stdev_latency_s: float | None = None
    reconnections: int | None = None
    rcodes: dict[str, int] = field(default_factory=dict)
    # with dnsperf -v: per response code, its answers' count, latency sum and slowest
    latency_by_rcode: dict[str, RcodeLatency] = field(default_factory=dict)
    generator_cpu_s: float | None = None
    wall_s: float | None = None
    returncode: int = 0

    @property
    def failures_per_s(self) -> float:
        """Queries dnsperf gave up on (lost: no answer within its timeout) per second."""
        return self.lost / self.run_time_s if self.run_time_s else 0.0

    def row(self) -> dict[str, Any]:
        """A flat CSV row (rcodes as `rcode_<NAME>` columns are added by the caller)."""
        row = {k: v for k, v in asdict(self).items() if k not in ("rcodes", "latency_by_rcode")}
        row["failures_per_s"] = round(self.failures_per_s, 3)
        row["avg_latency_ms"] = _ms(self.avg_latency_s)
        row["max_latency_ms"] = _ms(self.max_latency_s)
        row["stdev_latency_ms"] = _ms(self.stdev_latency_s)
        row["generator_cpu_pct"] = (round(100 * self.generator_cpu_s / self.wall_s, 1)
                                    if self.generator_cpu_s is not None and self.wall_s else None)
        for name in ("NOERROR", "NXDOMAIN", "REFUSED", "SERVFAIL"):
            row[f"rcode_{name}"] = self.rcodes.get(name, 0)
        return row


def tool_version(text: str) -> str | None:
    """The version dnsperf or resperf printed at its start, or None."""
    match = _VERSION.search(text)
    return match.group(1) if match else None


def _ms(value: float | None) -> float | None:
    return round(1000 * value, 3) if value is not None else None


def parse_dnsperf(text: str) -> DnsperfResult:
    """The totals dnsperf prints at the end ("Statistics:"); raises LabError without them."""
    if "Queries sent:" not in text:
        last = (text.strip().splitlines() or ["no output"])[-1]
        raise LabError(f"dnsperf printed no statistics: {last}",
                       hint="see the raw dnsperf output file in the cell folder")
    # TCP runs print a second "Average Latency" under "Connection Statistics": keep the first
    stats = text.split("Connection Statistics:")[0]
    result = DnsperfResult()
    for name, pattern in _FIELDS.items():
        source = text if name == "reconnections" else stats
        match = pattern.search(source)
        if match:
            kind = type(getattr(result, name)) if getattr(result, name) is not None else float
            value = match.group(1)
            setattr(result, name, int(value) if kind is int else float(value))
    match = _RCODES.search(stats)
    if match:
        result.rcodes = {k: int(v) for k, v in _RCODE_ITEM.findall(match.group(1))}
    return result


# dnsperf -v: one line per answer, "> NOERROR name TYPE 0.000856" (latency in s)
_VERBOSE_ANSWER = re.compile(r"^> (\S+) .* ([0-9]+\.[0-9]+)$")
# latency histogram bins: 20 per decade from 10 us to 100 s (upper edges, in s)
LATENCY_BINS = [10 ** (-5 + i / 20) for i in range(1, 141)]


@dataclass
class RcodeLatency:
    """The answers of one response code in a pass: how many, their latencies' sum and the
    slowest, in s."""

    answers: int = 0
    sum_s: float = 0.0
    max_s: float = 0.0

    def add(self, latency_s: float) -> None:
        self.answers += 1
        self.sum_s += latency_s
        self.max_s = max(self.max_s, latency_s)


class LatencyHistogram:
    """Counts of answer latencies in `LATENCY_BINS` (kept as raw data; percentiles are the
    analysis' business), and per response code the answers, their latencies' sum and the
    slowest (`by_rcode`: which part of a pass's waiting its failures were)."""

    def __init__(self) -> None:
        self.counts = [0] * (len(LATENCY_BINS) + 1)  # the last one: above the top edge
        self.by_rcode: dict[str, RcodeLatency] = {}

    def add(self, latency_s: float, rcode: str | None = None) -> None:
        import bisect

        self.counts[bisect.bisect_left(LATENCY_BINS, latency_s)] += 1
        if rcode is not None:
            self.by_rcode.setdefault(rcode, RcodeLatency()).add(latency_s)

    def write(self, path: Path) -> None:
        with open(path, "w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["upper_s", "count"])
            for edge, count in zip([*LATENCY_BINS, float("inf")], self.counts, strict=True):
                writer.writerow([f"{edge:.6g}", count])


def _split_verbose(stream: Any, handle: Any, histogram: LatencyHistogram) -> None:
    for line in stream:
        match = _VERBOSE_ANSWER.match(line.rstrip("\n"))
        if match:
            histogram.add(float(match.group(2)), match.group(1))
        else:
            handle.write(line)


def run_tool(lab: Lab, node: str, argv: list[str], out: Path, timeout: float,
             histogram: LatencyHistogram | None = None
             ) -> tuple[str, float | None, float, int]:
    """Run a tool in a node, output to `out`; return (output, its CPU seconds, wall s, rc).

    The CPU time is the tool's own (`Lab.run_measured`: wait4's rusage, or the container's
    cgroup on clab, or the host's wait4 when the node is on another host). With
    `histogram`, the tool's per-answer lines (dnsperf -v) are binned into it instead of
    being written out: the tool writes them to a scratch file and they are binned once it
    has exited (read through a pipe while it ran, this process could not keep up above
    ~15,000 answers/s and held dnsperf back).
    """
    out.parent.mkdir(parents=True, exist_ok=True)
    stderr_file = out.with_name(out.name + ".stderr")
    verbose_file = out.with_name(out.name + ".verbose")
    with open(out, "w") as handle:
        if histogram is None:
            measured = lab.run_measured(node, argv, timeout=timeout, stdout=handle,
                                        stderr=subprocess.STDOUT)
        else:
            # stderr apart: through `docker exec` the two streams arrive as separate frames
            # on one pipe, and a stderr frame could split an answer line (seen on clab)
            with open(verbose_file, "w") as verbose, open(stderr_file, "w") as errors:
                measured = lab.run_measured(node, argv, timeout=timeout, stdout=verbose,
                                            stderr=errors)
            with open(verbose_file, errors="replace") as verbose:
                _split_verbose(verbose, handle, histogram)
            handle.write(stderr_file.read_text(errors="replace"))
            verbose_file.unlink()
            stderr_file.unlink()
    return (out.read_text(errors="replace"), measured.cpu_s, measured.wall_s,
            measured.returncode)


def hang_guard_s(query_file: Path, *, duration_s: float | None, runs: int | None,
                 outstanding: int, timeout_s: float) -> float:
    """The wall time after which a dnsperf run is stopped as hung: its duration, or for
    passes over the query file (-n) the worst case of every query waiting out the timeout
    `outstanding` at a time (a cold pass of 30,000 names at -q 100 took ~81 s, over the 80 s
    a fixed guard allowed), plus the last queries' timeouts and a margin."""
    passes = 0.0
    if runs and not duration_s:
        with open(query_file, "rb") as handle:
            lines = sum(1 for line in handle if line.strip() and not line.startswith(b";"))
        passes = runs * lines * timeout_s / max(outstanding, 1)
    return (duration_s or 0) + passes + 4 * timeout_s + 60


def dnsperf(lab: Lab, node: str, server: str, query_file: Path, out: Path, *,
            duration_s: float | None = None, runs: int | None = None, clients: int = 1,
            threads: int = 1, outstanding: int = 100, max_qps: float | None = None,
            tcp: bool = False, timeout_s: float = 5.0,
            extra: list[str] | None = None,
            latency_csv: Path | None = None, mode: str = "") -> DnsperfResult:
    """One dnsperf run from `node` against `server` (a lab address); raw output in `out`.
    `mode`: dnsperf's -m (udp, tcp, dot, doh; `tcp=True` is -m tcp).
    With `latency_csv`, dnsperf reports every answer (-v) and their latencies are written
    there as a histogram (`LATENCY_BINS`, columns `upper_s`, `count`)."""
    check_lab_address(server)
    lab.push(node, [query_file])
    argv = ["dnsperf", "-s", server, "-d", str(query_file), "-c", str(clients),
            "-T", str(threads), "-q", str(outstanding), "-t", f"{timeout_s:g}",
            # one line per timed-out query would bury the totals under a flood
            "-O", "suppress=timeout"]
    if duration_s is not None:
        argv += ["-l", f"{duration_s:g}"]
    if runs is not None:
        argv += ["-n", str(runs)]
    if max_qps:
        argv += ["-Q", str(max(1, int(max_qps)))]
    if tcp or (mode and mode != "udp"):
        argv += ["-m", mode if mode else "tcp"]
    argv += extra or []
    histogram = LatencyHistogram() if latency_csv is not None else None
    if histogram is not None:
        argv.append("-v")
    limit = hang_guard_s(query_file, duration_s=duration_s, runs=runs,
                         outstanding=outstanding * clients, timeout_s=timeout_s)
    text, cpu, wall, rc = run_tool(lab, node, argv, out, limit, histogram)
    lab.note_generator("dnsperf", node, tool_version(text))
    if histogram is not None and latency_csv is not None:
        histogram.write(latency_csv)
    if "Queries sent:" not in text and wall >= limit:
        raise LabError(f"dnsperf was stopped after {limit:,.0f} s, the most its run could "
                       f"take (-n {runs} over {query_file.name})",
                       hint="see the raw dnsperf output file in the cell folder")
    result = parse_dnsperf(text)
    if histogram is not None:
        result.latency_by_rcode = histogram.by_rcode
    result.generator_cpu_s = round(cpu, 3) if cpu is not None else None
    result.wall_s = round(wall, 3)
    result.returncode = rc
    return result


# --- resperf ---------------------------------------------------------------------------------

RESPERF_COLUMNS = ["time_s", "target_qps", "actual_qps", "responses_per_s", "failures_per_s",
                   "avg_latency_s", "connections_per_s", "conn_latency_s"]
_RESPERF_SUMMARY: dict[str, re.Pattern[str]] = {
    "max_throughput_qps": re.compile(r"Maximum throughput:\s+" + _NUM),
    "lost_at_max": re.compile(r"Lost at that point:\s+" + _NUM),
    "sent": re.compile(r"Queries sent:\s+(\d+)"),
    "completed": re.compile(r"Queries completed:\s+(\d+)"),
    "lost": re.compile(r"Queries lost:\s+(\d+)"),
    "run_time_s": re.compile(r"Run time \(s\):\s+" + _NUM),
}


def parse_resperf_plot(text: str) -> list[dict[str, float]]:
    """Rows of resperf's plot file (-P): one per plot interval, columns `RESPERF_COLUMNS`."""
    rows = []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        values = [float(v) for v in line.split()]
        rows.append(dict(zip(RESPERF_COLUMNS, values, strict=False)))
    return rows


def parse_resperf_summary(text: str) -> dict[str, float | None]:
    found: dict[str, float | None] = {}
    for name, pattern in _RESPERF_SUMMARY.items():
        match = pattern.search(text)
        found[name] = float(match.group(1)) if match else None
    return found


def resperf(lab: Lab, node: str, server: str, query_file: Path, cell_dir: Path, *,
            max_qps: int, ramp_s: float, constant_s: float = 0.0, clients: int = 1,
            max_loss_pct: float = 100.0, timeout_s: float = 5.0,
            reopen: bool = False) -> dict[str, Any]:
    """resperf's ramp (`reopen`: -R, loop over the list). Keeps `resperf.txt` (stdout) and
    `resperf.gnuplot` (its plot file), writes `resperf.csv` (the plot parsed, columns
    `RESPERF_COLUMNS`) and returns its summary."""
    check_lab_address(server)
    lab.push(node, [query_file])
    plot = cell_dir / "resperf.gnuplot"
    argv = ["resperf", "-s", server, "-d", str(query_file), "-m", str(max_qps),
            "-r", f"{ramp_s:g}", "-c", f"{constant_s:g}", "-C", str(clients),
            "-L", f"{max_loss_pct:g}", "-t", f"{timeout_s:g}", "-P", str(plot)]
    if reopen:  # loop over the list: fine for a warm cache, not for a cold one
        argv.append("-R")
    text, cpu, wall, rc = run_tool(lab, node, argv, cell_dir / "resperf.txt",
                                   ramp_s + constant_s + 4 * timeout_s + 60)
    lab.note_generator("resperf", node, tool_version(text))
    lab.fetch(node, plot)  # resperf wrote it in the node, on the node's host
    rows = parse_resperf_plot(plot.read_text()) if plot.exists() else []
    if not rows:
        raise LabError("resperf wrote no plot data",
                       hint=f"see {cell_dir / 'resperf.txt'}")
    with open(cell_dir / "resperf.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=RESPERF_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    summary: dict[str, Any] = parse_resperf_summary(text)
    answered = [r for r in rows if r.get("responses_per_s")]
    summary.update({
        "peak_responses_per_s": max((r["responses_per_s"] for r in rows), default=None),
        "latency_at_peak_s": max(answered, key=lambda r: r["responses_per_s"]).get(
            "avg_latency_s") if answered else None,
        "generator_cpu_s": round(cpu, 3) if cpu is not None else None,
        "wall_s": round(wall, 3), "returncode": rc, "plot_rows": len(rows),
    })
    return summary


def write_rows(path: Path, rows: list[dict[str, Any]]) -> None:
    """A list of dicts as CSV (columns from the first row)."""
    if not rows:
        return
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def median(values: list[float]) -> float | None:
    import statistics

    clean = [v for v in values if v is not None]
    return statistics.median(clean) if clean else None


def profile_sysctls(run: Any, name: str) -> tuple[dict[str, str], dict[str, str]]:
    """A profile's sysctls for one node: (applied, skipped). Keys that are host-wide on the
    running kernel (some kernels show `net.core.rmem_max` read-only inside a namespace) are
    skipped unless the user allowed host changes (ALLOW_HOST_SYSCTLS=1); the cell records
    them, so a reader sees what the profile could not change."""
    from dnslab.experiment import allow_host_sysctls
    from dnslab.sysctl import node_sysctls, split_per_node

    wanted = node_sysctls(run.profile(name), allow_host_sysctls())
    if allow_host_sysctls():
        return wanted, {}
    _per_node, host_wide = split_per_node(list(wanted))
    return ({k: v for k, v in wanted.items() if k not in host_wide},
            {k: v for k, v in wanted.items() if k in host_wide})


def client_sysctls(params: dict[str, Any]) -> dict[str, str]:
    """The load generator's own sysctls from an experiment's `client_sysctls` parameter, as
    strings (none when the parameter is absent, as in a resumed older run)."""
    return {k: str(v) for k, v in (params.get("client_sysctls") or {}).items()}
