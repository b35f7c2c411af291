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
from analysis.rundata import MACHINE, SETTING, Cell, Run
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
    node = cell.params.get("server_node")
    said = run.in_role(str(node), role="frontend") if node else None
    if said is not None:  # a run with two front-ends (dnsdist@1.7 and @1.9): each its own
        return said
    try:
        return node == run.node_with_role("frontend")
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


def best_qps(frame: pd.DataFrame, transport: str, mode: str = PERSISTENT) -> float | None:
    """The best round's answered qps: a generator's ceiling is what it can send, and a round
    the machine disturbed says nothing of that (F5's ceiling, `analysis.derived.
    paced_ceiling`, the same)."""
    mine = frame[(frame["transport"] == transport) & (frame["mode"] == mode)]
    return float(mine["qps"].astype(float).max()) if not mine.empty else None


# how far a run may sit outside the source's regime and still be in it: its threads' busy
# share this much (absolute) below the source's least busy (its own spread at 8 clients:
# 71-79 %), its queries really in flight within this factor of the source's range over the
# transport (UDP 1.6-8.1 % of the 5,000 slots, the rest held by lost queries; TCP, TLS all)
REGIME_MARGIN = 0.05
IN_FLIGHT_FACTOR = 2.0
# a generator whose cores were this busy (%) was the limit of a server less busy than the
# source's: the machine's (a core of its own for the generator, or a faster one)
GENERATOR_FULL_PCT = 90.0
# a server's threads this far (absolute share) below GENERATOR_FULL_PCT had room: with the
# generator full, the figure was the generator's (part of the generator's cores is the
# kernel's receive work for the answers, still the machine's)
SERVER_ROOM = 0.05


@dataclass(frozen=True)
class Regime:
    """The load the source's figures were measured under, from its own CSVs at 8 clients
    (`published.py`): `busy_low`, the least busy of its servers whose thread count their
    config set (Unbound and Knot Resolver, 4 threads: CPU / (100 x threads), over every
    transport); `in_flight`, per transport, the range of the share of the 5,000 slots really
    in flight, those not held by lost queries waiting out dnsperf's 5 s timeout (UDP
    1.6-8.1 %: ~80-400 queries; TCP and TLS ~100 %). DoH, which the source did not run, is
    held to TLS's."""

    busy_low: float
    busy_high: float
    in_flight: dict[str, tuple[float, float]]

    def in_flight_range(self, transport: str, factor: float = 1.0) -> tuple[float, float]:
        low, high = self.in_flight.get(transport, self.in_flight["dot"])
        return low / factor, min(1.0, high * factor)

    def said(self, transport: str) -> str:
        return (f"the source's servers {self.busy_low:.0%}-{self.busy_high:.0%} busy of their "
                f"threads, {span(*self.in_flight_range(transport), digits=1)} of the "
                f"{LABELS[transport]} slots really in flight")


def span(low: float, high: float, digits: int = 0) -> str:
    """"71-79 %"-style, one figure where both round to it."""
    a, b = f"{low * 100:.{digits}f}", f"{high * 100:.{digits}f}"
    return f"{a} %" if a == b else f"{a}-{b} %"


@cache
def source_regime() -> Regime:
    """The source's regime (`Regime`), read from its CSVs."""
    shares = [share for s in seed() for t in published.FILE_TRANSPORTS
              if (share := s.source.busy_share(t)) is not None]
    in_flight: dict[str, tuple[float, float]] = {}
    for transport in published.FILE_TRANSPORTS:
        found = [1 - s.source.runs[transport].held_share for s in seed()
                 if transport in s.source.runs]
        in_flight[transport] = (min(found), max(found))
    return Regime(busy_low=min(shares), busy_high=max(shares), in_flight=in_flight)


@dataclass(frozen=True)
class Measured:
    """One server's figure over one transport: its median qps over `trials` trials (each
    trial's in `values`, of the rounds `rounds`), the share of its answers that were NOERROR,
    the generator, and that generator's ceiling for the same load in the run (the best
    round against `dnsload serve`; None: no ceiling measured)."""

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
    # against the source's regime: the server's threads (the cell's `server_threads`, else
    # one per core) and cores, its busy share of those threads, the share of the slots held
    # by lost queries waiting out the timeout (lost x timeout / (seconds x in flight),
    # the median trial's), the generator's cores' busy share (%)
    threads: int | None = None
    cores: int | None = None
    held_share: float | None = None
    generator_busy_pct: float | None = None
    # each trial's qps and its round (`trial`): a ratio's interval pairs the rounds
    values: tuple[float, ...] = ()
    rounds: tuple[int, ...] = ()

    @property
    def generator_full(self) -> bool:
        """In the server's own trials the generator's cores were full and the server's
        threads had room (their busy share, not the cores': one thread on two cores is full
        at 50 %; below GENERATOR_FULL_PCT by SERVER_ROOM, as 89 against 90 % cannot say
        which side set the figure): whatever the ceiling cell read, the generator set it."""
        busy = self.busy_share
        return (self.generator_busy_pct is not None and busy is not None
                and self.generator_busy_pct >= GENERATOR_FULL_PCT
                and busy < GENERATOR_FULL_PCT / 100 - SERVER_ROOM)

    @property
    def limited(self) -> bool:
        """Within GENERATOR_BOUND_SHARE of the generator's ceiling, not above it, or above it
        with the generator full in the server's own trials (run 6638: BIND 9.20's UDP 110,381
        qps, 0.8 % above the ceiling's 109,497, the generator's core 98 % busy and BIND's
        79 %): it measured the generator."""
        if self.ceiling is None:
            return False
        if self.qps > self.ceiling:
            return self.generator_full
        return GENERATOR_BOUND_SHARE * self.ceiling <= self.qps

    @property
    def above_ceiling(self) -> bool:
        """Above the ceiling cell's best round while the generator had room: the ceiling ran
        closed loop against `dnsload serve` on the server's cores, so it was that responder's
        limit, not the generator's, and the generator's own is not known (F2's rule: the
        sink's limit)."""
        return self.ceiling is not None and self.qps > self.ceiling and not self.generator_full

    @property
    def busy_share(self) -> float | None:
        """Its cores' busy share as a share of its threads (the source's CPU / threads)."""
        if self.cores_busy_pct is None:
            return None
        cores = self.cores or 1
        return self.cores_busy_pct / 100 * cores / min(self.threads or cores, cores)

    def out_of_regime(self, margin: float = REGIME_MARGIN) -> list[tuple[str, str]]:
        """How the trials sat outside the source's regime (`source_regime`, `margin` either
        side), each with what would bring it in: MACHINE or SETTING (empty: in it; a figure
        a run did not record is not judged)."""
        regime, misses = source_regime(), []
        busy = self.busy_share
        if busy is not None and busy < regime.busy_low - margin:
            generator_full = (self.generator_busy_pct is not None
                              and self.generator_busy_pct >= GENERATOR_FULL_PCT)
            misses.append((f"its {self.threads or self.cores or 1} thread(s) {busy:.0%} busy "
                           + (f"while the generator's cores were {self.generator_busy_pct:.0f} "
                              "% busy" if generator_full else "(the load held it, not its "
                              "CPU)"), MACHINE if generator_full else SETTING))
        low, high = regime.in_flight_range(self.transport, IN_FLIGHT_FACTOR)
        if self.held_share is not None and not low <= 1 - self.held_share <= high:
            misses.append((f"{1 - self.held_share:.1%} of its slots really in flight, the rest "
                           "held by lost queries waiting out the timeout", SETTING))
        return misses

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
    top = best_qps(trials(ceiling), transport, mode) if ceiling is not None else None
    return Measured(server=server, transport=transport,
                    qps=float(mine["qps"].astype(float).median()), trials=len(mine),
                    noerror_share=(float(mine["noerror"].astype(float).sum()) / completed
                                   if completed else 0.0),
                    generator=str(mine["generator"].iloc[0]), ceiling=top,
                    values=tuple(float(v) for v in mine["qps"].astype(float)),
                    rounds=tuple(int(r) for r in mine["trial"]),
                    threads=_int_figure(cell, "server_threads"),
                    cores=_int_figure(cell, "server_cores"),
                    **_load_held(mine, float(run.params.get("timeout_s") or 0)))


def _int_figure(cell: Cell, name: str) -> int | None:
    found = cell.figure(name, optional=True)
    return int(found) if found is not None else None


def _load_held(trials: pd.DataFrame, timeout_s: float) -> dict[str, float | None]:
    """What the trials say of the load the server really had: its cores' median busy share,
    the generator's, the share of the queries lost, the median share of the slots held by
    lost queries (lost but with a broken connection x timeout / (seconds x in flight)), the
    median queries in flight (qps x mean latency)."""
    def median_of(values: pd.Series) -> float | None:
        found = pd.to_numeric(values, errors="coerce").dropna()
        return float(found.median()) if not found.empty else None

    def column(name: str) -> pd.Series:
        return pd.to_numeric(trials[name], errors="coerce")

    held: dict[str, float | None] = {"cores_busy_pct": None, "lost_share": None,
                                     "in_flight": None, "held_share": None,
                                     "generator_busy_pct": None}
    if "server_cores_busy_pct" in trials:
        held["cores_busy_pct"] = median_of(trials["server_cores_busy_pct"])
    if "generator_cores_busy_pct" in trials:
        held["generator_busy_pct"] = median_of(trials["generator_cores_busy_pct"])
    if {"lost", "sent"} <= set(trials.columns):
        sent = float(column("sent").sum())
        lost = float(column("lost").sum())
        held["lost_share"] = lost / sent if sent else None
    if {"lost", "run_time_s", "outstanding"} <= set(trials.columns) and timeout_s > 0:
        # a lost query holds its slot for the timeout, or the rest of a trial shorter than it;
        # but not one lost with its connection: dnsload counts a broken connection's queries
        # in flight lost at the break and reuses their slots at once (stream.go `lostWith`),
        # so each reconnection's share of the slots is taken off (run ee1c: kresd over DoH
        # lost 39,501 queries in 64 reconnections of 8 connections x 625, and read "0 % of its
        # slots really in flight")
        seconds = column("run_time_s")
        lost = column("lost")
        if {"reconnections", "connections"} <= set(trials.columns):
            per_connection = column("outstanding") / column("connections").where(
                column("connections") > 0)
            broken = (column("reconnections").fillna(0) * per_connection).fillna(0)
            lost = (lost - broken).clip(lower=0)
        share = (lost * seconds.clip(upper=timeout_s)
                 / (seconds * column("outstanding")))
        found = median_of(share.clip(upper=1.0))
        held["held_share"] = found
    if "avg_latency_ms" in trials:
        held["in_flight"] = median_of(column("qps") * column("avg_latency_ms") / 1000)
    return held


def not_served(run: Run, server: str) -> dict[str, str]:
    """{transport: why} the server's packaged version does not serve (its cell's figure)."""
    cell = server_cells(run).get(server)
    found = cell.figure("not_served", optional=True) if cell is not None else None
    return dict(found or {})


def label(run: Run, server: str) -> str:
    """The server as a verdict names it: its kind, "(resolver)" where a secondary's kind ran
    as one through a static-stub (the cell's `answers_as`), as the seed ran BIND."""
    cell = server_cells(run).get(server)
    found = cell.figure("answers_as", optional=True) if cell is not None else None
    return f"{server} (resolver)" if str(found or "").startswith("resolver (") else server


def seed_differences(run: Run, servers: list[str]) -> list[str]:
    """What the run set unlike the seed for these servers, each a few words: fewer threads
    than the seed's config (the cores given), the timeout, the generators."""
    said = []
    for server in servers:
        cell = server_cells(run).get(server)
        if cell is None:
            continue
        seed_threads = cell.figure("seed_threads", optional=True)
        threads = cell.figure("server_threads", optional=True)
        if seed_threads and threads is not None and int(threads) < int(seed_threads):
            said.append(f"{server} {int(threads)} thread(s) (seed {int(seed_threads)})")
    timeout = run.params.get("timeout_s")
    if timeout is not None and float(timeout) != published.TIMEOUT_S:
        said.append(f"timeout {float(timeout):g} s (seed {published.TIMEOUT_S:g})")
    generators = run.params.get("generators") or {}
    others = sorted(t for t, g in generators.items() if g != "dnsperf" and t in ("udp", "tcp",
                                                                                "dot"))
    if others:
        said.append(f"dnsload for {', '.join(LABELS[t] for t in others)} (seed: dnsperf)")
    return said


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
