"""The `dnsload` load generator (tools/dnsload): its build, its command line, and running it.

`ensure_dnsload()` builds build/bin/dnsload when it is missing; `DnsloadGenerator` is a
load generator for F1's stairs (argv for one step, its JSON totals parsed into a
`StepMeasure`, what any generator measured over one step); `DnsloadRunner` runs it in a lab
node and keeps its own CPU time;
`serving()` runs `dnsload serve`, the canned responder the generator ceilings are measured
against, in a node for the length of a block. `stream_argv` / `parse_stream` are `dnsload
stream`'s command line and totals: queries over UDP sockets or persistent TCP, DoT or DoH
connections.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dnslab import paths
from dnslab.errors import LabError
from dnslab.lab import Lab
from dnslab.paths import BIN
from dnslab.processes import signal_cmdline


@dataclass(frozen=True)
class StepMeasure:
    """What a generator measured over one step (its steady window when it has one)."""

    seconds: float
    offered_qps: float
    answered_qps: float
    sent: int  # queries sent over UDP (first try)
    answered: int
    tcp: int  # TCP retries
    truncated: int
    timeouts: int
    throttled: int  # due but not sent: the generator's outstanding limit was full
    net_errors: int
    rcodes: dict[str, int]
    p50_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float

    def rcode_errors(self, error_rcodes: Sequence[str]) -> int:
        return sum(n for name, n in self.rcodes.items() if name in error_rcodes)


def stop_serve(serve: subprocess.Popen, argv: list[str], timeout: float = 30.0) -> str:
    """Stop a `dnsload serve` started with `lab.popen(node, argv)` by SIGTERM to the responder
    itself, so that it prints its `serve_total` line, and return what it printed. On the clab
    runtime `serve` is the `docker exec` client, which does not pass signals on; the responder
    in the container is a host process too, found by its exact command line."""
    signal_cmdline(argv)
    try:
        out, _ = serve.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        serve.kill()
        out, _ = serve.communicate()
    return out or ""


@contextmanager
def serving(lab: Lab, node: str, limit_s: float, log_dir: Path,
            options: list[str] | None = None) -> Iterator[None]:
    """`dnsload serve` on `node`'s lab address, port 53, for the block: started, waited for
    (its `serve_ready` line), then stopped (`stop_serve`), and everything it printed (ready
    line, then its `serve_total` counts) kept in `log_dir/serve.jsonl`. `limit_s` is its own
    time limit (`-l`), a backstop should the block never end; `options` are extra serve
    flags (`-tc`, `-tcp-size`)."""
    argv = [str(ensure_dnsload()), "serve", "-a", f"{lab.address(node)}:53",
            "-l", f"{limit_s:g}", *(options or [])]
    remote = not lab.host(node).local
    if remote:  # stopped by closing its stdin: the host command sends it SIGTERM
        lab.push(node, [paths.BIN])
        host = lab.host(node)
        wrapped = host.python_argv("measured", "--term", "--report", "/dev/null",
                                   *lab.term_cmdline(argv), "--",
                                   *lab.runtime.node_argv(lab.state, node, argv))
        serve = subprocess.Popen(host.argv(wrapped), stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    else:
        serve = lab.popen(node, argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)
    ready = serve.stdout.readline() if serve.stdout else ""
    if '"serve_ready"' not in ready:
        serve.kill()
        _, err = serve.communicate()
        raise LabError(f"dnsload serve did not start in node {node}: "
                       + ((err or ready).strip().splitlines() or ["no message"])[-1],
                       hint="run build/bin/dnsload serve by hand in that node")
    try:
        yield
    finally:
        if remote:
            assert serve.stdin is not None and serve.stdout is not None
            serve.stdin.close()
            try:
                serve.wait(timeout=30)  # it prints a line or two, never a pipe's worth
            except subprocess.TimeoutExpired:
                serve.kill()
                serve.wait()
            out = serve.stdout.read()
        else:
            out = stop_serve(serve, argv)
        log_dir.mkdir(parents=True, exist_ok=True)
        (log_dir / "serve.jsonl").write_text(ready + out)


def ensure_dnsload() -> Path:
    binary = paths.BIN / "dnsload"
    if binary.exists():
        return binary
    script = paths.REPO / "scripts" / "build-dnsload.sh"
    proc = subprocess.run(["sh", str(script)], capture_output=True, text=True)
    if proc.returncode != 0 or not binary.exists():
        raise LabError("building dnsload failed: "
                       + (proc.stderr.strip().splitlines() or ["no message"])[-1],
                       hint="run scripts/build-dnsload.sh by hand (needs Go)")
    return binary


@dataclass
class DnsloadGenerator:
    """Drives `dnsload run` (tools/dnsload). The timeout is longer than the TAT limit on
    purpose: a 3 s answer must be seen as a 3 s TAT, not hidden as a timeout."""

    server: str  # IP:PORT, loopback or 198.18.0.0/15
    query_file: str
    binary: str = str(BIN / "dnsload")
    timeout_s: float = 5.0
    bufsize: int = 4096
    max_outstanding: int = 100_000
    tcp_reuse: bool = False
    sockets: int | None = None
    name: str = "dnsload"

    def command(self, rate: float, duration: float, warmup: float) -> list[str]:
        argv = [
            self.binary, "run", "-s", self.server, "-d", self.query_file,
            "-Q", f"{rate:g}", "-l", f"{duration:g}", "-t", f"{self.timeout_s:g}",
            "-b", str(self.bufsize), "-q", str(self.max_outstanding),
        ]
        if 0 < warmup < duration:
            argv += ["-warmup", f"{warmup:g}"]
        if self.tcp_reuse:
            argv.append("-tcp-reuse")
        if self.sockets:
            argv += ["-c", str(self.sockets)]
        return argv

    def parse(self, stdout: str) -> StepMeasure:
        lines: dict[str, dict] = {}
        for line in stdout.splitlines():
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                continue
            lines[obj.get("type", "")] = obj
        rec = lines.get("steady") or lines.get("total")
        if rec is None:
            raise LabError(
                "dnsload printed no totals",
                hint="run the printed command by hand; is build/bin/dnsload built "
                "(scripts/build-dnsload.sh)?",
            )
        lat = rec["lat_ms"]
        return StepMeasure(
            seconds=float(rec["seconds"]), offered_qps=float(rec["offered_qps"]),
            answered_qps=float(rec["answered_qps"]), sent=int(rec["udp"]),
            answered=int(rec["answered"]), tcp=int(rec["tcp"]), truncated=int(rec["truncated"]),
            timeouts=int(rec["timeouts"]), throttled=int(rec["throttled"]),
            net_errors=int(rec["net_errors"]), rcodes=dict(rec.get("rcodes") or {}),
            p50_ms=float(lat["p50"]), p90_ms=float(lat["p90"]), p99_ms=float(lat["p99"]),
            max_ms=float(lat["max"]),
        )


class DnsloadRunner:
    """Runs dnsload in `node`, the lab's client (on the client's CPUs); its stderr goes to
    `log`, and
    its own CPU time (from wait4's rusage) and wall time are kept for the step row. A
    generator that dies (seen once on a shared, loaded host: killed without a message) is run
    again once, and the failure is kept in the log; a second failure ends the cell."""

    def __init__(self, lab: Lab, node: str, log: Path, attempts: int = 2,
                 timeout_s: float = 3600.0):
        self.lab, self.log, self.attempts, self.node = lab, log, attempts, node
        self.timeout_s = timeout_s  # a backstop: dnsload ends by itself after its step
        self.cpu_s: float | None = None
        self.wall_s: float | None = None

    def __call__(self, argv: list[str]) -> str:
        status, err = 0, ""
        for attempt in range(self.attempts):
            with tempfile.TemporaryFile("w+") as outfile, \
                    tempfile.TemporaryFile("w+") as errfile:
                # its own CPU time: wait4's rusage of the generator, on whichever host
                measured = self.lab.run_measured(self.node, argv, timeout=self.timeout_s,
                                                 stdout=outfile, stderr=errfile)
                status = measured.returncode
                outfile.seek(0)
                out = outfile.read()
                errfile.seek(0)
                err = errfile.read()
            self.wall_s = measured.wall_s
            self.cpu_s = measured.cpu_s
            with open(self.log, "a") as handle:
                handle.write(f"# {' '.join(argv)}\n# exit {status} (attempt {attempt + 1})\n"
                             + err)
            if status == 0:
                return out
        last = (err.strip().splitlines() or [f"exit status {status}"])[-1]
        raise LabError(f"dnsload failed in the {self.node} node: {last}",
                       hint=f"see {self.log}; run the command there by hand")

    @property
    def cpu_pct(self) -> float | None:
        """The last run's CPU time / wall time (100 = one core busy all the time)."""
        if self.cpu_s is None or not self.wall_s:
            return None
        return round(100 * self.cpu_s / self.wall_s, 1)


# --- dnsload stream: queries over UDP sockets, persistent TCP, DoT and DoH connections ------

STREAM_TRANSPORTS = ("udp", "tcp", "dot", "doh")


def stream_argv(server: str, transport: str, query_file: Path, *, connections: int,
                outstanding: int, duration_s: float, timeout_s: float,
                rate: float | None = None, doh_method: str = "GET",
                doh_path: str = "/dns-query", doh_index_path: bool = False,
                per_query: bool = False) -> list[str]:
    """`dnsload stream` against `server` (IP:PORT): `connections` kept open (UDP: sockets,
    each from a port of its own), `outstanding` queries in flight over them, closed loop or
    paced at `rate`; with `per_query` a new connection per query instead (`outstanding` of
    them at a time; TCP, DoT). DoH's :path goes as a never-indexed literal unless
    `doh_index_path` (bench/kresd_doh_get.py: what Knot Resolver 5.7 trips on)."""
    if transport not in STREAM_TRANSPORTS:
        raise LabError(f"dnsload stream speaks {', '.join(STREAM_TRANSPORTS)}, not {transport}",
                       hint="TRANSPORTS from: " + ", ".join(STREAM_TRANSPORTS))
    argv = [str(ensure_dnsload()), "stream", "-s", server, "-m", transport, "-d",
            str(query_file), "-c", str(connections), "-q", str(max(outstanding, connections)),
            "-l", f"{duration_s:g}", "-t", f"{timeout_s:g}"]
    if rate:
        argv += ["-Q", f"{rate:g}"]
    if transport == "doh":
        argv += ["-doh-method", doh_method, "-doh-path", doh_path]
        if doh_index_path:
            argv.append("-doh-index-path")
    if per_query:
        argv.append("-per-query")
    return argv


def parse_stream(stdout: str) -> dict[str, Any]:
    """The `total` line of a `dnsload stream` run; a LabError without one."""
    for line in reversed(stdout.splitlines()):
        if line.startswith("{") and '"total"' in line:
            try:
                found = json.loads(line)
            except json.JSONDecodeError:
                continue
            if found.get("type") == "total":
                return found
    last = (stdout.strip().splitlines() or ["no output"])[-1]
    raise LabError(f"dnsload stream printed no totals: {last}",
                   hint="run the command of the cell's raw output file by hand")
