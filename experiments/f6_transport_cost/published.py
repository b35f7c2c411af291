"""What the seed published, read from its own data: the package's copy of the
perfmeasurements_2018 repository's CSVs (`source/`, its README names the commit and paths).

Each `results/bionic/<server>/test-<T>ct-1-16.csv` row is one client count: the count twice,
then each run's pair (an unlabelled count, qps), then the mean and SD of the counts and of
the qps; a run that did not run is (0, 0) and left out of the means. The unlabelled count is
dnsperf's lost queries: ~19,100-19,700 a 20 s run over UDP at 8 clients, 0 over TCP, 0-1 over
TLS. With dnsperf's default 5 s timeout (config.txt passes no option) a lost query holds its
slot for 5 s, so 5,000 slots can lose at most 5,000 x 20 s / 5 s = 20,000 in a run: the
source's UDP runs had 92-98 % of their slots held by queries waiting out the timeout.
`server-cpu-<T>ct-1-16.csv` rows: the count twice, each run's server CPU (% of one CPU), then
their mean and SD.

The seed's figure of a server over a transport is the page's ("the averages of 5 repeated
runs each of 20 seconds"): the mean qps of the runs at 8 clients (`SEED_CLIENTS`), as the
CSV's own mean column (of the runs that ran: dnsdist's TCP at 8 clients has 2).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import cache
from pathlib import Path

SOURCE_DIR = Path(__file__).parent / "source"
RESULTS = SOURCE_DIR / "results" / "bionic"
SEED_CLIENTS = 8
# the source's load (config.txt, the page): 20 s runs, 5,000 queries in flight over all
# clients, dnsperf's default timeout
RUN_S, OUTSTANDING, TIMEOUT_S = 20.0, 5000, 5.0
# the lab's transport name -> the source's file name for it
FILE_TRANSPORTS = {"udp": "UDP", "tcp": "TCP", "dot": "TLS"}


@dataclass(frozen=True)
class Runs:
    """One transport's row of a server at one client count: each run's (lost, qps), and the
    CSV's own mean qps and its SD."""

    clients: int
    lost: tuple[float, ...]
    qps: tuple[float, ...]
    mean_qps: float
    sd_qps: float

    @property
    def ran(self) -> tuple[int, ...]:
        """The runs that ran (qps > 0)."""
        return tuple(i for i, q in enumerate(self.qps) if q > 0)

    @property
    def mean_lost(self) -> float:
        return sum(self.lost[i] for i in self.ran) / len(self.ran)

    @property
    def held_share(self) -> float:
        """The share of the slots held by lost queries waiting out the timeout (mean of the
        runs that ran): lost x timeout / (run x in flight)."""
        return self.mean_lost * TIMEOUT_S / (RUN_S * OUTSTANDING)

    @property
    def in_flight(self) -> float:
        """The queries really in flight: the slots not held by lost queries."""
        return OUTSTANDING * (1 - self.held_share)


@dataclass(frozen=True)
class Cpu:
    """One transport's server CPU at one client count: each run's % of one CPU, the mean."""

    clients: int
    runs: tuple[float, ...]
    mean: float


def _numbers(line: list[str]) -> list[float]:
    return [float(v) for v in (c.strip() for c in line) if v]


def read_runs(path: Path, clients: int = SEED_CLIENTS) -> Runs:
    """The row of `clients` in a test-<T>ct-1-16.csv."""
    with open(path) as handle:
        for line in csv.reader(handle):
            values = _numbers(line)
            if values and int(values[0]) == clients:
                pairs = values[2:-4]
                return Runs(clients=clients, lost=tuple(pairs[0::2]), qps=tuple(pairs[1::2]),
                            mean_qps=values[-2], sd_qps=values[-1])
    raise ValueError(f"{path}: no row for {clients} clients")


def read_cpu(path: Path, clients: int = SEED_CLIENTS) -> Cpu:
    """The row of `clients` in a server-cpu-<T>ct-1-16.csv."""
    with open(path) as handle:
        for line in csv.reader(handle):
            values = _numbers(line)
            if values and int(values[0]) == clients:
                return Cpu(clients=clients, runs=tuple(values[2:-2]), mean=values[-2])
    raise ValueError(f"{path}: no row for {clients} clients")


@dataclass(frozen=True)
class SourceServer:
    """One server of the source at 8 clients: per transport its runs and its CPU (None where
    the source has no such file: BIND had no TLS, and no CPU file of it), and the threads its
    config set (None: not set, one per CPU)."""

    folder: str
    runs: dict[str, Runs]
    cpu: dict[str, Cpu]
    threads: int | None

    def qps(self, transport: str) -> float | None:
        found = self.runs.get(transport)
        return found.mean_qps if found is not None else None

    def busy_share(self, transport: str) -> float | None:
        """Its CPU as a share of its threads (None: threads or CPU not known)."""
        cpu = self.cpu.get(transport)
        if cpu is None or not self.threads:
            return None
        return cpu.mean / (100 * self.threads)


@cache
def source_server(folder: str, threads: int | None) -> SourceServer:
    """A server's figures from its folder of `source/results/bionic/`."""
    base = RESULTS / folder
    runs, cpu = {}, {}
    for transport, name in FILE_TRANSPORTS.items():
        if (base / f"test-{name}ct-1-16.csv").exists():
            runs[transport] = read_runs(base / f"test-{name}ct-1-16.csv")
        if (base / f"server-cpu-{name}ct-1-16.csv").exists():
            cpu[transport] = read_cpu(base / f"server-cpu-{name}ct-1-16.csv")
    if not runs:
        raise ValueError(f"{base}: no test-*ct-1-16.csv")
    return SourceServer(folder=folder, runs=runs, cpu=cpu, threads=threads)
