"""CPU placement: which cores a lab node may run on, as containerlab's `cpu-set` says.

A node's `cpu-set` (containerlab's own node field, e.g. `cpu-set: "1"` or `"0-1,3"`) comes
from the topology file or from the experiment (`LabData.cpu_sets`). The clab runtime passes it
on in the rendered clab file (Docker's `--cpuset-cpus`); the netns runtime starts the node's
daemon, and every command run in the node, under `taskset -c <set>`, so the daemon and all
its children inherit the affinity.

Load experiments place the load generator (the client node) and the server under test on
disjoint cores (`place`), unless told to share them; the placement is recorded in the run.
`CoreSampler` reads /proc/stat so a run can keep each core's busy share second by second:
with disjoint sets that is each side's whole CPU use, softirq work on its cores included.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from dnslab.errors import LabError


def parse(text: str | int) -> list[int]:
    """`"0-2,5"` -> [0, 1, 2, 5] (sorted, no duplicates); a LabError on bad syntax."""
    cpus: set[int] = set()
    for part in str(text).replace(" ", "").split(","):
        if not part:
            continue
        low, _, high = part.partition("-")
        try:
            first, last = int(low), int(high) if high else int(low)
        except ValueError:
            raise LabError(f"cpu-set {text!r} is not a list of CPUs",
                           hint='write it as containerlab does, e.g. "1" or "0-1,3"') from None
        if first < 0 or last < first:
            raise LabError(f"cpu-set {text!r}: bad range {part!r}",
                           hint="ranges go low-high, CPUs count from 0")
        cpus.update(range(first, last + 1))
    if not cpus:
        raise LabError(f"cpu-set {text!r} names no CPU", hint='e.g. cpu-set: "1"')
    return sorted(cpus)


def format_set(cpus: list[int] | set[int]) -> str:
    """[0, 1, 2, 5] -> "0-2,5" (the inverse of `parse`)."""
    ordered = sorted(set(cpus))
    parts: list[str] = []
    start = prev = None
    for cpu in ordered:
        if prev is not None and cpu == prev + 1:
            prev = cpu
            continue
        if start is not None:
            parts.append(f"{start}-{prev}" if prev != start else f"{start}")
        start = prev = cpu
    if start is not None:
        parts.append(f"{start}-{prev}" if prev != start else f"{start}")
    return ",".join(parts)


def available() -> list[int]:
    """The CPUs this process may run on (what a node's set must stay within)."""
    return sorted(os.sched_getaffinity(0))


def check(text: str, node: str, allowed: list[int] | None = None) -> str:
    """A node's cpu-set, normalised; a LabError when it names a CPU this host lacks."""
    allowed = available() if allowed is None else allowed
    cpus = parse(text)
    missing = [c for c in cpus if c not in allowed]
    if missing:
        raise LabError(f"node {node!r}: cpu-set {text!r} names CPU {missing[0]}, which this "
                       f"host does not offer (CPUs {format_set(allowed)})",
                       hint="change the node's cpu-set, or the experiment's GENERATOR_CPUS/"
                       "SERVER_CPUS")
    return format_set(cpus)


@dataclass(frozen=True)
class Placement:
    """Where the load generator and the server under test run, and whether they share."""

    generator: str
    server: str
    shared: bool
    cores: int

    def as_dict(self) -> dict[str, object]:
        return {"generator_cpus": self.generator, "server_cpus": self.server,
                "shared": self.shared, "host_cpus": self.cores}


def place(generator_cpus: str = "", server_cpus: str = "", share: bool = False,
          generator_cores: int = 1, allowed: list[int] | None = None) -> Placement:
    """Disjoint cores for generator and server by default: the generator gets the last
    `generator_cores` CPUs, the server the rest. Explicit sets win; `share` gives both every
    CPU. A LabError when disjoint sets are asked for but impossible or overlapping."""
    allowed = available() if allowed is None else allowed
    everything = format_set(allowed)
    if share:
        return Placement(generator=check(generator_cpus or everything, "generator", allowed),
                         server=check(server_cpus or everything, "server", allowed),
                         shared=True, cores=len(allowed))
    if not generator_cpus or not server_cpus:
        if len(allowed) < 2:
            raise LabError("one CPU cannot keep the load generator off the server's core",
                           hint="SHARE_CORES=1 runs them on the same core (and says so)")
        take = max(1, min(generator_cores, len(allowed) - 1))
        generator_cpus = generator_cpus or format_set(allowed[-take:])
        gen = set(parse(generator_cpus))
        server_cpus = server_cpus or format_set([c for c in allowed if c not in gen])
    gen_set = check(generator_cpus, "generator", allowed)
    srv_set = check(server_cpus, "server", allowed)
    overlap = set(parse(gen_set)) & set(parse(srv_set))
    if overlap:
        raise LabError(f"generator CPUs {gen_set} and server CPUs {srv_set} overlap "
                       f"(CPU {min(overlap)})",
                       hint="give them disjoint sets, or SHARE_CORES=1 to share on purpose")
    return Placement(generator=gen_set, server=srv_set, shared=False, cores=len(allowed))


def place_apart(generator_cpus: str, server_cpus: str, generator_allowed: list[int],
                server_allowed: list[int]) -> Placement:
    """The generator and the server on different hosts: each side every CPU of its own host
    unless its set is given (checked against that host's CPUs); they share none."""
    return Placement(
        generator=check(generator_cpus or format_set(generator_allowed), "generator",
                        generator_allowed),
        server=check(server_cpus or format_set(server_allowed), "server", server_allowed),
        shared=False, cores=len(server_allowed))


def taskset_argv(cpu_set: str, argv: list[str]) -> list[str]:
    """`argv` confined to `cpu_set` (inherited by its children); unchanged when empty."""
    return ["taskset", "-c", cpu_set, *argv] if cpu_set else list(argv)


# --- per-core busy share -----------------------------------------------------------------------

# /proc/stat cpuN columns: user nice system idle iowait irq softirq steal guest guest_nice
_IDLE_COLUMNS = (3, 4)
_BUSY_COLUMNS = (0, 1, 2, 5, 6, 7)


def read_stat(path: Path = Path("/proc/stat")) -> dict[int, tuple[int, int]]:
    """{cpu: (busy jiffies, total jiffies)} from /proc/stat (guest time is inside user)."""
    cores: dict[int, tuple[int, int]] = {}
    for line in path.read_text().splitlines():
        if not line.startswith("cpu") or line.startswith("cpu "):
            continue
        name, *fields = line.split()
        values = [int(v) for v in fields[:8]]
        busy = sum(values[i] for i in _BUSY_COLUMNS if i < len(values))
        idle = sum(values[i] for i in _IDLE_COLUMNS if i < len(values))
        cores[int(name[3:])] = (busy, busy + idle)
    return cores


class CoreSampler:
    """Busy % of every core since the previous sample (100 = the core was never idle)."""

    def __init__(self, path: Path = Path("/proc/stat")):
        self.path = path
        self.last = read_stat(path)

    def sample(self) -> dict[int, float | None]:
        now = read_stat(self.path)
        shares: dict[int, float | None] = {}
        for cpu, (busy, total) in now.items():
            busy0, total0 = self.last.get(cpu, (busy, total))
            shares[cpu] = (round(100.0 * (busy - busy0) / (total - total0), 1)
                           if total > total0 else None)
        self.last = now
        return shares


class OtherLoadSampler:
    """CPU used since the previous sample by processes outside the lab, in % of one core:
    what else the machine ran while the lab measured (other labs, test suites, builds). Not
    counted: processes in the lab's network namespaces (its daemons, its generators), kernel
    threads (their softirq work is mostly the lab's own traffic) and this controller's own
    process tree. A process that starts and ends within one interval is missed. A busy
    machine breaks within-run comparisons that assume quiet: the analysis reads this column
    (`other_pct` in monitor/cores.csv) to say so."""

    def __init__(self, lab_netns: Callable[[], list[str]]):
        self.lab_netns = lab_netns
        self.last = self._cpu_outside()
        self.at = time.monotonic()

    def _namespaces(self) -> set[int]:
        inodes = set()
        for path in self.lab_netns():
            with suppress(OSError):
                inodes.add(os.stat(path).st_ino)
        return inodes

    def _cpu_outside(self) -> dict[tuple[int, float], float]:
        import psutil  # here: a lab host's sampling needs only the standard library

        lab = self._namespaces()
        me = psutil.Process()
        mine = {me.pid, *(c.pid for c in me.children(recursive=True))}
        seen: dict[tuple[int, float], float] = {}
        for proc in psutil.process_iter(["pid", "ppid", "create_time"]):
            info = proc.info
            if info["pid"] in mine or info["pid"] == 2 or info["ppid"] == 2:
                continue
            try:
                if os.stat(f"/proc/{info['pid']}/ns/net").st_ino in lab:
                    continue
                times = proc.cpu_times()
            except (OSError, psutil.Error):
                continue
            seen[(info["pid"], info["create_time"])] = times.user + times.system
        return seen

    def sample(self) -> float | None:
        now, at = self._cpu_outside(), time.monotonic()
        elapsed, self.at = at - self.at, at
        used = sum(cpu - self.last.get(key, 0.0) for key, cpu in now.items())
        self.last = now
        return round(100.0 * max(used, 0.0) / elapsed, 1) if elapsed > 0 else None
