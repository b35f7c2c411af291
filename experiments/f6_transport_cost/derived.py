"""F6's figures from the raw files, for its claims and plots alike: each server's answered
qps per transport (the median of its trials in `trials.csv`), the generator's ceiling for
the same load (the `phase=ceiling` cell's `ceiling.csv`), whether a transport's figure is
the server's or the generator's, and each transport's pooled answer latencies (the trials'
histogram files) for the latency experiment.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.plots import latency
from analysis.rundata import Cell, Run
from dnslab.errors import LabError
from dnslab.thresholds import GENERATOR_BOUND_SHARE
from experiments.f6_transport_cost import published

TRANSPORTS = ("udp", "tcp", "dot", "doh")
PERSISTENT = "persistent"
PER_QUERY = "per-query"
TRIAL_COLUMNS = ("trial", "mode", "transport", "generator", "qps", "completed", "noerror")
LABELS = {"udp": "UDP", "tcp": "TCP", "dot": "DoT", "doh": "DoH"}


@dataclass(frozen=True)
class SeedServer:
    """One server of the seed at 8 clients: its qps over UDP, TCP and TLS (the mean of its
    runs, read from the source's CSVs: `published.py`), and those runs, losses and CPU."""

    name: str
    kind: str | None
    role: str
    front_end: bool
    udp: float
    tcp: float
    tls: float | None
    source: published.SourceServer

    def ratio(self, transport: str) -> float | None:
        other = self.tls if transport == "dot" else self.tcp if transport == "tcp" else None
        return other / self.udp if other else None


@cache
def seed() -> tuple[SeedServer, ...]:
    """The seed's servers, as data: `seed.csv` beside this module names each (`kind` the
    lab's server kind of it, empty: none in the lab; `role` its role (the seed's BIND
    recursed through a static-stub root: a resolver, as the source's bind.conf); `front_end`
    1 for the front-end the seed's summary excepts; `folder` its folder of the source's
    results/bionic/; `threads` what its config set, empty: none, one per CPU); its figures
    are the source's CSVs' (`published.source_server`): the mean qps of the runs at 8
    clients, `tls` None where the server had none."""
    with open(Path(__file__).parent / "seed.csv") as handle:
        rows = list(csv.DictReader(handle))
    found = []
    for row in rows:
        source = published.source_server(row["folder"],
                                         int(row["threads"]) if row["threads"] else None)
        udp, tcp, tls = (source.qps(t) for t in ("udp", "tcp", "dot"))
        if udp is None or tcp is None:
            raise ValueError(f"{row['folder']}: the source has no UDP or no TCP CSV")
        found.append(SeedServer(name=row["name"], kind=row["kind"] or None, role=row["role"],
                                front_end=row["front_end"] == "1", udp=udp, tcp=tcp, tls=tls,
                                source=source))
    return tuple(found)


def is_front_end(run: Run, cell: Cell) -> bool:
    """Whether a server cell's node is the lab's front-end (by its role in the run's
    topology)."""
    try:
        return cell.params.get("server_node") == run.node_with_role("frontend")
    except LabError:  # a lab without a front-end
        return False


def server_cells(run: Run) -> dict[str, Cell]:
    """{server kind: its cell}, in the run's order (the ceiling cell is none)."""
    return {str(c.params["server"]): c for c in run.cells
            if c.params.get("server") and c.has("trials.csv")}


def trials(cell: Cell) -> pd.DataFrame:
    name = "ceiling.csv" if cell.params.get("phase") == "ceiling" else "trials.csv"
    return cell.csv(name, TRIAL_COLUMNS)


def ceiling_cell(run: Run) -> Cell | None:
    found = [c for c in run.cells_where(phase="ceiling") if c.has("ceiling.csv")]
    return found[0] if found else None


def median_qps(frame: pd.DataFrame, transport: str, mode: str = PERSISTENT) -> float | None:
    mine = frame[(frame["transport"] == transport) & (frame["mode"] == mode)]
    return float(mine["qps"].astype(float).median()) if not mine.empty else None


# the seed's figures are each server's capacity at 5,000 queries in flight: a figure is the
# server's capacity when its cores were at least this busy (%) through the trials. Below it
# something else held the rate: in run 33b9 every UDP trial lost ~48,000 queries to the
# server's socket receive buffer, each holding its slot for the 2 s timeout, so 100-640
# queries were really in flight and the cores 74-91 % busy, where TCP kept 5,000 at 97-100 %
SATURATED_CORES_PCT = 90.0


@dataclass(frozen=True)
class Measured:
    """One server's figure over one transport: its median qps over `trials` trials (each
    trial's in `values`, of the rounds `rounds`), the share of its answers that were NOERROR,
    the generator, and that generator's ceiling for the same load in the run (None: no
    ceiling measured)."""

    server: str
    transport: str
    qps: float
    trials: int
    noerror_share: float
    generator: str
    ceiling: float | None
    # over the trials (None in a run without the column): the server's cores' busy share,
    # the share of the queries sent that were lost, and the queries really in flight
    # (answered qps x mean latency, Little's law)
    cores_busy_pct: float | None = None
    lost_share: float | None = None
    in_flight: float | None = None
    # each trial's qps and its round (`trial`): a ratio's interval pairs the rounds
    values: tuple[float, ...] = ()
    rounds: tuple[int, ...] = ()

    @property
    def limited(self) -> bool:
        """Within GENERATOR_BOUND_SHARE of the generator's ceiling: it measured the
        generator."""
        return self.ceiling is not None and self.qps >= GENERATOR_BOUND_SHARE * self.ceiling

    @property
    def below_capacity(self) -> bool:
        """Its cores were less than SATURATED_CORES_PCT busy: not the server's capacity."""
        return self.cores_busy_pct is not None and self.cores_busy_pct < SATURATED_CORES_PCT

    @property
    def share_of_ceiling(self) -> float | None:
        return self.qps / self.ceiling if self.ceiling else None


def measured(run: Run, server: str, transport: str, mode: str = PERSISTENT) -> Measured | None:
    """A server's figure over a transport (None: the run did not measure it)."""
    cell = server_cells(run).get(server)
    if cell is None:
        return None
    frame = trials(cell)
    mine = frame[(frame["transport"] == transport) & (frame["mode"] == mode)]
    if mine.empty:
        return None
    completed = float(mine["completed"].astype(float).sum())
    ceiling = ceiling_cell(run)
    top = median_qps(trials(ceiling), transport, mode) if ceiling is not None else None
    return Measured(server=server, transport=transport,
                    qps=float(mine["qps"].astype(float).median()), trials=len(mine),
                    noerror_share=(float(mine["noerror"].astype(float).sum()) / completed
                                   if completed else 0.0),
                    generator=str(mine["generator"].iloc[0]), ceiling=top,
                    values=tuple(float(v) for v in mine["qps"].astype(float)),
                    rounds=tuple(int(r) for r in mine["trial"]), **_load_held(mine))


def _load_held(trials: pd.DataFrame) -> dict[str, float | None]:
    """What the trials say of the load the server really had: its cores' median busy share,
    the share of the queries lost, the median queries in flight (qps x mean latency)."""
    def median_of(values: pd.Series) -> float | None:
        found = pd.to_numeric(values, errors="coerce").dropna()
        return float(found.median()) if not found.empty else None

    held: dict[str, float | None] = {"cores_busy_pct": None, "lost_share": None,
                                     "in_flight": None}
    if "server_cores_busy_pct" in trials:
        held["cores_busy_pct"] = median_of(trials["server_cores_busy_pct"])
    if {"lost", "sent"} <= set(trials.columns):
        sent = float(pd.to_numeric(trials["sent"], errors="coerce").sum())
        lost = float(pd.to_numeric(trials["lost"], errors="coerce").sum())
        held["lost_share"] = lost / sent if sent else None
    if "avg_latency_ms" in trials:
        held["in_flight"] = median_of(pd.to_numeric(trials["qps"], errors="coerce")
                                      * pd.to_numeric(trials["avg_latency_ms"],
                                                      errors="coerce") / 1000)
    return held


def not_served(run: Run, server: str) -> dict[str, str]:
    """{transport: why} the server's packaged version does not serve (its cell's figure)."""
    cell = server_cells(run).get(server)
    found = cell.figure("not_served", optional=True) if cell is not None else None
    return dict(found or {})


def server_cores(run: Run, server: str) -> int | None:
    cell = server_cells(run).get(server)
    found = cell.figure("server_cores", optional=True) if cell is not None else None
    return int(found) if found is not None else None


def nodelay_of(run: Run, server: str, transport: str) -> bool | None:
    """Whether the server's end of a connection over the transport had TCP_NODELAY set
    (its cell's `nodelay_<t>`; None: not read, as in runs before it was)."""
    cell = server_cells(run).get(server)
    found = cell.figure(f"nodelay_{transport}", optional=True) if cell is not None else None
    return None if found is None else bool(found)


def tls_of(run: Run, server: str, transport: str) -> str:
    """What the server's listener negotiated ("TLSv1.3 TLS_AES_256_GCM_SHA384 [h2]")."""
    cell = server_cells(run).get(server)
    found = cell.figure(f"tls_{transport}", optional=True) if cell is not None else None
    return str(found or "")


# --- latencies -----------------------------------------------------------------------------

def pooled_latency(cell: Cell, transport: str, mode: str = PERSISTENT
                   ) -> latency.Latencies | None:
    """Every trial's answer latencies of a transport and mode in a cell, pooled (lost
    queries with them); None without histograms."""
    frame = cell.csv("ceiling.csv" if cell.params.get("phase") == "ceiling" else "trials.csv",
                     ("transport", "mode", "latency_file", "lost"))
    mine = frame[(frame["transport"] == transport) & (frame["mode"] == mode)]
    pooled = None
    for _, row in mine.iterrows():
        name = row["latency_file"]
        if not isinstance(name, str) or not name or not cell.has(name):
            continue
        found = latency.from_dnsperf_csv(cell.dir / name, int(row["lost"] or 0))
        pooled = found if pooled is None else pooled + found
    return pooled


def median_ms(latencies: latency.Latencies) -> float | None:
    """The median answer's latency (the upper edge of the bucket holding it)."""
    if latencies.answered == 0:
        return None
    cumulative = np.cumsum(latencies.counts)
    return float(latencies.upper_ms[int(np.searchsorted(cumulative, latencies.answered / 2))])


def responder_median_ms(run: Run, transport: str, mode: str = PERSISTENT) -> float | None:
    """The lab's responder's median answer over the transport and mode (the ceiling cell:
    the same paced load against `dnsload serve`, TCP_NODELAY on); None: not measured."""
    cell = ceiling_cell(run)
    pooled = pooled_latency(cell, transport, mode) if cell is not None else None
    return median_ms(pooled) if pooled is not None else None


def rtt_ms(run: Run) -> float:
    return float(run.params.get("rtt_ms") or 0)


def wan_applied(run: Run, cell: Cell) -> float | None:
    """The delay read back on the client's link in this cell (meta.json `wan`), in ms."""
    entry = (run.meta.get("cells") or {}).get(cell.id) or {}
    for applied in (entry.get("wan") or {}).values():
        if isinstance(applied, dict) and applied.get("delay_ms") is not None:
            return float(applied["delay_ms"])
    return None
