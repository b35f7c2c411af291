"""F6 (seed 005, dnsprivacy.org's 2018 measurements): what TCP, DoT and DoH cost a server
against UDP. Two procedures on the reference lab (`topologies/reference.clab.yml`): each
server kind the run names is its node there (unbound: `resolver`, dnsdist: `frontend`, the
authoritative kinds: their secondary), answering the same names from memory: the resolver
and the front-end from their caches (filled by one pass over the names before the trials;
dnsdist with a packet cache, as the seed's), the authoritative servers from their zone.

Zone: the reference lab's, with `names` hosts `h<i>.example.test.` (TTL one day, so a cache
keeps them for the whole run) added to `example.test.`; the query file asks each in turn.

Placement (`Run.placement`): the client (the generators) on the generator's CPUs; the server
under test and every node it needs (the primary its secondary transferred from; the
resolver's and the front-end's authoritative servers, idle once the caches are full) on the
server's. The server under test runs one worker per core it is given (benchmark_options),
with its encrypted listeners (`Driver.transport_options`: the transports its manifest
lists; the others are recorded as not served, with the reason) and room for every client
connection.
The seed's settings (`seed_settings`, the experiment file's parameters): `threads` per kind
(the seed's configs: Unbound and Knot Resolver 4; never more than the cores given, the cell's
`server_threads` beside `seed_threads`), `socket_buffer_kib` through each kind's own option
(`Driver.socket_buffer_options`; none: `socket_buffer_bytes` 0) and dnsperf's `-b`; the
host's rmem/wmem and netdev_max_backlog are host-wide on this kernel, read into the cell's
`host_sysctls`, never set; `stub_resolvers`: a secondary's kind run as a resolver through a
static-stub zone (the queried one) to the primary (`Driver.stub_resolver_options`), as the
seed ran BIND, its cell's `answers_as` saying so.

`throughput` (transport-cost), cells in order:
- `phase=ceiling` (unless `ceiling: false`): the generator's own ceiling for exactly the
  trials' commands, transport by transport, `ceiling_trials` rounds, against `dnsload serve
  -dot -doh` (a canned responder, ephemeral ECDSA P-256 certificate) in the first server's
  node on the server's CPUs, every server daemon held. Figures `ceiling_qps_<t>` (the best
  round's answered qps: what the generator can send), `ceiling_qps_trials_<t>`,
  `generator_<t>`, `tls_<t>` (what the responder negotiated with OpenSSL's client
  defaults); `ceiling.csv` (the trials' rows), `dnsload/serve.jsonl` (the responder's own
  counts, what each generator negotiated).
- `server=<kind>` per server: a fresh lab; the warm-up pass (dnsperf over UDP, `-n 1`), its
  figures `warm_*`; then `trials` rounds, each every transport the server serves once
  (the order rotated by one each round, so drift falls on every transport alike), each
  `trial_s` seconds closed loop: `clients` connections (UDP: sockets, dnsperf's clients) with
  `outstanding` queries in flight in all, connections kept open for the whole trial.
  `trials.csv`: one row per trial (`load.ROW_COLUMNS`, `trial`, and over the trial's window
  `server_cores_busy_pct`, `generator_cores_busy_pct`, `server_cpu_pct` (the daemon's),
  `connections` (established TCP connections in the server's namespace, mean));
  raw tool output per trial. Figures per transport t: `qps_<t>` (median), `qps_trials_<t>`,
  `noerror_share_<t>`, `lost_<t>`, `connections_<t>`, `server_cores_busy_pct_<t>`,
  `generator_cpu_pct_<t>`, `generator_<t>`, `tls_<t>`, `nodelay_<t>` (TCP, DoT, DoH: whether
  the server's end of a connection has TCP_NODELAY set, `load.server_nodelay`; the ceiling
  cell's too, for the responder); and `transports` (served),
  `not_served` ({transport: why}), `server_cores`, `server_node`, `warm_qps`.

`latency` (transport-latency): the client's link delayed by `rtt_ms` (dnslab.wan: every
packet it sends, so a round trip to any node takes that much longer), a paced load of `rate`
qps (far below every capacity: the latency is the transport's, not a queue's) per
transport, each answer's latency kept as a histogram (`latency-<name>.csv`).
`connections: [persistent, per-query]`: kept open (every transport), or a new connection
per query (TCP and DoT: the handshakes' round trips; `dnsload stream -per-query`, or dnsperf
`-O num-queries-per-conn=1`; `per_query_clients` connections at a time at `per_query_rate`,
and the client's `client_sysctls`, a wide port range and few TIME_WAIT sockets kept, as
tcp-sysctl's generator has).
Cells as above: `phase=ceiling` (the same paced loads against `dnsload serve`: what the
generator and the emulated round trip alone give), then `server=<kind>`; `trials.csv` rows
add `mode` (persistent | per-query); figures `p50_ms_<t>` and `p50_ms_<t>_per-query`
(median of the trials' medians), `rtt_ms`.
"""

from __future__ import annotations

import statistics
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from dnslab import cpus, paths
from dnslab.counters import mean_cores, mean_cpu, window_mean
from dnslab.errors import LabError
from dnslab.experiment import Cell, Run
from dnslab.lab import Lab
from dnslab.monitor import Monitors
from dnslab.render import LabData, ZoneRef, reference_data
from dnslab.servers import driver, merge_options
from dnslab.servers.base import TRANSPORTS
from dnslab.servers.manifest import kind_version
from dnslab.topology import Topology
from experiments.f6_transport_cost.load import Load, run_load, server_nodelay, tls_session
from experiments.generators import perf
from experiments.generators.dnsload import serving

ZONE = "example.test."
HOST_TTL = 86400  # the added hosts' TTL: a cache keeps them for the whole run
MODES = ("persistent", "per-query")


@dataclass(frozen=True)
class ServerNodes:
    """The reference lab's nodes for a run: each server kind's node, the client, and what
    every node needs running beside it."""

    topology: Topology
    by_kind: dict[str, str]
    client: str

    @classmethod
    def of(cls, topo: Topology, kinds: list[str]) -> ServerNodes:
        found = {}
        # a kind's node: one that is not a primary where the kind has one (BIND: the
        # secondary, as NSD and Knot), so each answers the zone it transferred
        primaries = {n.name for n in topo.by_role("primary")}
        for kind in kinds:
            nodes = sorted(topo.nodes_where(server=kind), key=lambda n: n.name in primaries)
            if not nodes:
                raise LabError(f"SERVERS={kind}: lab {topo.name!r} has no {kind} node",
                               hint="SERVERS from: " + ", ".join(sorted(
                                   {n.server for n in topo.nodes.values()
                                    if driver(n.server).runs_daemon})))
            found[kind] = nodes[0].name
        return cls(topo, found, topo.node(role="client").name)

    def daemons(self) -> list[str]:
        return [n.name for n in self.topology.nodes.values() if driver(n.server).runs_daemon]

    def front_end(self, node: str) -> bool:
        return node in {n.name for n in self.topology.by_role("frontend")}

    def needed(self, node: str) -> list[str]:
        """`node` and what it answers through: a secondary its primary; a resolver or a
        front-end the authoritative servers of the zone (idle once its cache is full)."""
        primaries = [n.name for n in self.topology.by_role("primary")]
        secondaries = [n.name for n in self.topology.by_role("secondary")]
        caching = {n.name for n in self.topology.by_role("resolver")}
        if node in secondaries:
            return [node, *primaries]
        if node in caching or self.front_end(node):
            return [node, *primaries, *secondaries]
        return [node]


def served(kind: str, transports: list[str]) -> tuple[list[str], dict[str, str]]:
    """The transports a kind's packaged version serves, and why it does not serve the others
    (its manifest's comment, in a line)."""
    drv = driver(kind)
    mine, missing = [], {}
    for transport in transports:
        try:
            drv.transport_options([transport])
            mine.append(transport)
        except LabError as exc:
            missing[transport] = exc.message
    return mine, missing


def write_zone(run: Run, names: int) -> tuple[list[ZoneRef], Path]:
    """The reference lab's zones with `names` hosts added to example.test., and the query
    file over them."""
    out = run.path / "zone"
    zones = reference_data(run.topology, out).zones
    example = next(z for z in zones if z.name == ZONE)
    example.path.write_text(example.path.read_text() + "".join(
        f"h{i} {HOST_TTL} IN A 192.0.2.{i % 250 + 1}\n" for i in range(names)))
    qfile = out / "queries.txt"
    qfile.write_text("".join(f"h{i}.{ZONE} A\n" for i in range(names)))
    return zones, qfile


def check_params(params: dict[str, Any]) -> dict[str, str]:
    """What the parameters' rules cannot say, checked by the runner before the run folder
    exists: a generator for every transport (`dnsload stream` only where it can send), the
    connection modes. Returns the generators by transport."""
    generators = {str(k): str(v) for k, v in (params.get("generators") or {}).items()}
    unknown = [t for t in params["transports"] if t not in TRANSPORTS]
    if unknown:
        raise LabError(f"TRANSPORTS={','.join(unknown)}: no such transport",
                       hint="TRANSPORTS from: " + ", ".join(TRANSPORTS))
    for mode in params.get("connections") or ["persistent"]:
        if mode not in MODES:
            raise LabError(f"CONNECTIONS={mode} is not a connection mode",
                           hint="CONNECTIONS from: " + ", ".join(MODES))
    for kind in params.get("stub_resolvers") or []:
        driver(kind).stub_resolver_options(["."])  # a kind that cannot: one line, before
    for kind in params.get("threads") or {}:
        driver(str(kind))  # an unknown kind: one line, before any work
    for transport in params["transports"]:
        if transport not in generators:
            raise LabError(f"GENERATORS names no generator for {transport}",
                           hint="GENERATORS='{udp: dnsload, tcp: dnsload, dot: dnsload, "
                                "doh: dnsload}'")
        for mode in modes_of(params, transport):
            load_for(params, generators, transport, mode).check()
    return generators


def load_for(params: dict[str, Any], generators: dict[str, str], transport: str,
             mode: str = "persistent") -> Load:
    """The trial's load of a transport: the run's shape (clients, in flight, seconds, the
    rate for a paced run), the run's generator; a new connection per query takes dnsperf."""
    rate = float(params["rate"]) if params.get("rate") else None
    load = Load(transport=transport, generator=generators.get(transport, "dnsperf"),
                clients=int(params["clients"]), outstanding=int(params["outstanding"]),
                seconds=float(params["trial_s"]), timeout_s=float(params["timeout_s"]),
                rate=rate, doh_method=str(params.get("doh_method", "GET")),
                doh_index_path=bool(params.get("doh_index_path")),
                histogram=bool(params.get("latency_histogram")),
                socket_buffer_kib=int(params.get("socket_buffer_kib") or 0))
    if mode == "per-query":
        # one query per connection: each connection in flight holds a query through its
        # handshakes, so as many of them as the rate needs, at a rate they can keep
        load = replace(load, queries_per_conn=1, clients=int(params["per_query_clients"]),
                       outstanding=int(params["per_query_clients"]),
                       rate=float(params["per_query_rate"]))
    return load


def modes_of(params: dict[str, Any], transport: str) -> list[str]:
    """A transport's connection modes in this run: a new connection per query only where a
    connection is set up (TCP, DoT)."""
    wanted = list(params.get("connections") or ["persistent"])
    return [m for m in wanted if m == "persistent" or transport in ("tcp", "dot")]


def _lab_data(nodes: ServerNodes, zones: list[ZoneRef], placement: cpus.Placement,
              running: list[str], options: dict[str, dict[str, Any]],
              params: dict[str, Any], wan: dict[str, dict[str, float]] | None = None
              ) -> LabData:
    cpu_sets = {nodes.client: placement.generator, **{n: placement.server for n in running}}
    client = perf.client_sysctls(params)
    return LabData(zones=list(zones), health_zone=ZONE, node_options=options,
                   cpu_sets=cpu_sets, extra_binds=[paths.BIN], wan=dict(wan or {}),
                   sysctls={nodes.client: client} if client else {})


def _wan(params: dict[str, Any], nodes: ServerNodes) -> dict[str, dict[str, float]]:
    """The emulated round trip: the client's link delayed by `rtt_ms` (none: no WAN)."""
    rtt = float(params.get("rtt_ms") or 0)
    return {nodes.client: {"delay_ms": rtt, "jitter_ms": 0.0, "loss_pct": 0.0}} if rtt else {}


def _trial(cell: Cell, monitors: Monitors, lab: Lab, nodes: ServerNodes, node: str,
           qfile: Path, load: Load, name: str, placement: cpus.Placement,
           daemon: bool) -> dict[str, Any]:
    """One trial against `node`'s address, with the server's and the generator's CPU, and the
    established connections in the server's namespace, over the trial's window."""
    t_start = time.monotonic() - monitors.t0
    row = run_load(lab, nodes.client, lab.address(node), qfile, load, cell.path, name)
    t_end = time.monotonic() - monitors.t0
    if daemon and not lab.alive(node):
        raise LabError(f"{node} exited under load", hint=f"its log: {lab.log(node)}")
    time.sleep(1.1)  # the monitors write once a second: the trial's last second
    monitor = cell.path / "monitor"
    connections = window_mean(monitor / f"{node}.csv", "tcp_estab", t_start, t_end)
    row.update({
        "t_start": round(t_start, 3), "t_end": round(t_end, 3),
        "server_cores_busy_pct": mean_cores(monitor / "cores.csv", placement.server,
                                            t_start, t_end),
        "generator_cores_busy_pct": mean_cores(monitor / "cores.csv", placement.generator,
                                               t_start, t_end),
        "server_cpu_pct": mean_cpu(monitor / f"{node}.csv", t_start, t_end) if daemon else "",
        "connections": round(connections, 1) if connections is not None else ""})
    return row


def _rounds(cell: Cell, monitors: Monitors, lab: Lab, nodes: ServerNodes, node: str,
            qfile: Path, params: dict[str, Any], generators: dict[str, str],
            transports: list[str], rounds: int, placement: cpus.Placement,
            daemon: bool) -> list[dict[str, Any]]:
    """`rounds` rounds of every transport (and connection mode) once, the order rotated by
    one each round; `trials.csv` written after every trial."""
    plan = [(t, m) for t in transports for m in modes_of(params, t)]
    rows: list[dict[str, Any]] = []
    for trial in range(1, rounds + 1):
        first = (trial - 1) % len(plan)
        for transport, mode in plan[first:] + plan[:first]:
            load = load_for(params, generators, transport, mode)
            name = f"{transport}{'-per-query' if mode == 'per-query' else ''}-{trial}"
            rows.append({"trial": trial, "mode": mode,
                         **_trial(cell, monitors, lab, nodes, node, qfile, load, name,
                                  placement, daemon)})
            perf.write_rows(cell.path / "trials.csv", _uniform(rows))
    return rows


def _uniform(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    columns = list(dict.fromkeys(k for row in rows for k in row))
    return [{c: row.get(c, "") for c in columns} for row in rows]


def _key(transport: str, mode: str) -> str:
    return transport if mode == "persistent" else f"{transport}_{mode}"


def _median(values: list[Any]) -> float | None:
    found = perf.median([float(v) for v in values if v not in ("", None)])
    return round(found, 3) if found is not None else None


def transport_figures(rows: list[dict[str, Any]], prefix: str = "",
                      best_round: bool = False) -> dict[str, Any]:
    """Per transport (and mode): the median (`best_round`: the best trial's, a ceiling's)
    and each trial of the answered qps, and what the trials say of the server, the
    generator and the connections."""
    figures: dict[str, Any] = {}
    for key in dict.fromkeys(_key(r["transport"], r["mode"]) for r in rows):
        mine = [r for r in rows if _key(r["transport"], r["mode"]) == key]
        completed = sum(int(r["completed"]) for r in mine)
        figures.update({
            f"{prefix}qps_{key}": (max(round(float(r["qps"]), 3) for r in mine) if best_round
                                   else _median([r["qps"] for r in mine])),
            f"{prefix}qps_trials_{key}": [round(float(r["qps"]), 1) for r in mine],
            f"lost_{key}": sum(int(r["lost"]) for r in mine),
            f"noerror_share_{key}": (round(sum(int(r["noerror"]) for r in mine) / completed, 4)
                                     if completed else None),
            f"connections_{key}": _median([r["connections"] for r in mine]),
            f"server_cores_busy_pct_{key}": _median([r["server_cores_busy_pct"] for r in mine]),
            f"generator_cpu_pct_{key}": _median([r["generator_cpu_pct"] for r in mine]),
            f"generator_{key}": mine[0]["generator"],
        })
    return figures


def latency_figures(cell: Cell, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per transport (and mode): the median of the trials' median latencies, from their
    histograms."""
    figures: dict[str, Any] = {}
    for key in dict.fromkeys(_key(r["transport"], r["mode"]) for r in rows):
        medians = [histogram_median(cell.path / str(r["latency_file"])) for r in rows
                   if _key(r["transport"], r["mode"]) == key and r.get("latency_file")]
        found = [m for m in medians if m is not None]
        figures[f"p50_ms_{key}"] = round(statistics.median(found), 3) if found else None
    return figures


def histogram_median(path: Path) -> float | None:
    """The median of a latency histogram file (`upper_s`, `count`) in ms: the upper edge of
    the bucket that holds it (None without answers)."""
    import csv

    with open(path) as handle:
        buckets = [(float(r["upper_s"]), int(r["count"])) for r in csv.DictReader(handle)]
    total = sum(n for _, n in buckets)
    seen = 0
    for upper, count in buckets:
        seen += count
        if total and seen * 2 >= total:
            return upper * 1000
    return None


def run_ceiling(run: Run, nodes: ServerNodes, zones: list[ZoneRef], qfile: Path,
                generators: dict[str, str], placement: cpus.Placement,
                wan: dict[str, dict[str, float]]) -> None:
    """The generator's ceiling: every trial's command against `dnsload serve` (DoT, DoH)
    in the first server's node, on the server's CPUs, every server daemon held."""
    params = run.params
    node = next(iter(nodes.by_kind.values()))
    transports = list(params["transports"])
    rounds = int(params["ceiling_trials"])
    trials = rounds * sum(len(modes_of(params, t)) for t in transports)
    budget = trials * (params["trial_s"] + 4 * params["timeout_s"] + 15) + 120
    cell_params = {"phase": "ceiling", "responder": "dnsload serve -dot -doh",
                   "responder_node": node, "placement": placement.as_dict()}
    with run.cell("phase=ceiling", cell_params) as cell:
        lab = cell.up(_lab_data(nodes, zones, placement, [node], {}, params, wan),
                      hold=nodes.daemons())
        with serving(lab, node, budget, cell.path / "dnsload", ["-dot", "-doh"]):
            monitors = cell.monitor([node])
            tls = {t: tls_session(lab, nodes.client, lab.address(node), t) for t in transports}
            nodelay = _nodelay(lab, nodes.client, node, transports)
            rows = _rounds(cell, monitors, lab, nodes, node, qfile, params, generators,
                           transports, rounds, placement, daemon=False)
            monitors.stop()
        perf.write_rows(cell.path / "ceiling.csv", _uniform(rows))
        cell.figures.update(transport_figures(rows, prefix="ceiling_", best_round=True))
        if params.get("latency_histogram"):
            cell.figures.update(latency_figures(cell, rows))
        cell.figures.update({f"tls_{t}": v for t, v in tls.items() if v})
        cell.figures.update(nodelay)


def _nodelay(lab: Lab, client: str, node: str, transports: list[str]) -> dict[str, bool]:
    """`nodelay_<t>`: whether the server's end of a connection over each stream transport
    has TCP_NODELAY set (`load.server_nodelay`; left out where it cannot be read)."""
    found = {t: server_nodelay(lab, client, node, lab.address(node), t)
             for t in transports if t != "udp"}
    return {f"nodelay_{t}": value for t, value in found.items() if value is not None}


HOST_SYSCTLS = ("net/core/rmem_default", "net/core/rmem_max", "net/core/wmem_default",
                "net/core/wmem_max", "net/core/netdev_max_backlog")


def host_sysctls() -> dict[str, int]:
    """The host's socket-buffer and backlog sysctls, read (never set: host-wide on this
    kernel), for the run to say how they differ from the seed's netsetup.sh."""
    found = {}
    for key in HOST_SYSCTLS:
        path = Path("/proc/sys") / key
        if path.exists():
            found[key.replace("/", ".")] = int(path.read_text().split()[0])
    return found


def seed_settings(params: dict[str, Any], kind: str, node: str, nodes: ServerNodes,
                  cores: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """The seed's settings for a server kind (the experiment file's `threads`,
    `socket_buffer_kib`, `stub_resolvers`: through a static-stub of the queried zone to the
    primary), as the kind's own options, and the figures that
    say what was set: `server_threads` (never more than its cores), `seed_threads` (None:
    one per CPU), `socket_buffer_bytes` (0: the kind has no option, or none asked),
    `answers_as` (its role, or "resolver (static-stub)")."""
    drv = driver(kind)
    options: dict[str, Any] = {}
    base = kind_version(kind).kind  # the settings name kinds: `unbound` for unbound@1.26 too
    wanted = (params.get("threads") or {}).get(base)
    threads = min(int(wanted), cores) if wanted else cores
    if wanted:
        options = merge_options(options, drv.worker_options(threads))
    size = int(params.get("socket_buffer_kib") or 0) * 1024
    buffers = drv.socket_buffer_options(size) if size else {}
    options = merge_options(options, buffers)
    answers_as = nodes.topology.node(node).role
    if base in (params.get("stub_resolvers") or []) and answers_as == "secondary":
        # the seed's stub was the root at a local authoritative server; the lab's root
        # delegates to every secondary (this one too), so the stub is the queried zone at the
        # primary, which serves it
        options = merge_options(options, drv.stub_resolver_options([ZONE]))
        answers_as = "resolver (static-stub)"
    return options, {"server_threads": threads, "seed_threads": int(wanted) if wanted else None,
                     "socket_buffer_bytes": size if buffers else 0, "answers_as": answers_as}


def run_server(run: Run, nodes: ServerNodes, kind: str, zones: list[ZoneRef], qfile: Path,
               generators: dict[str, str], placement: cpus.Placement,
               wan: dict[str, dict[str, float]]) -> None:
    """One server kind's cell: its lab, its cache filled, then the rounds of every transport
    it serves."""
    params = run.params
    node = nodes.by_kind[kind]
    transports, not_served = served(kind, list(params["transports"]))
    drv = driver(kind)
    options = merge_options(drv.transport_options(transports),
                            drv.client_room_options(int(params["clients"])))
    if nodes.front_end(node):
        options["packet_cache"] = 2 * int(params["names"])  # answers from its cache
    seed_options, settings = seed_settings(params, kind, node, nodes,
                                           len(cpus.parse(placement.server)))
    options = merge_options(options, seed_options)
    running = nodes.needed(node)
    cell_params = {"server": kind, "server_node": node,
                   "role": nodes.topology.node(node).role, "transports": transports,
                   "placement": placement.as_dict()}
    with run.cell(f"server={kind}", cell_params) as cell:
        lab = cell.up(_lab_data(nodes, zones, placement, running, {node: options}, params,
                                wan),
                      hold=[n for n in nodes.daemons() if n not in running])
        warm = perf.dnsperf(lab, nodes.client, lab.address(node), qfile,
                            cell.path / "dnsperf-warm.txt", runs=1, clients=1,
                            outstanding=100, timeout_s=float(params["timeout_s"]))
        tls = {t: tls_session(lab, nodes.client, lab.address(node), t) for t in transports}
        nodelay = _nodelay(lab, nodes.client, node, transports)
        monitors = cell.monitor([node])
        rows = _rounds(cell, monitors, lab, nodes, node, qfile, params, generators,
                       transports, int(params["trials"]), placement, daemon=True)
        monitors.stop()
        cell.figures.update(transport_figures(rows))
        if params.get("latency_histogram"):
            cell.figures.update(latency_figures(cell, rows))
        cell.figures.update({
            **{f"tls_{t}": v for t, v in tls.items() if v}, **nodelay,
            "transports": transports, "not_served": not_served, "server_node": node,
            "server_cores": len(cpus.parse(placement.server)),
            **settings, "host_sysctls": host_sysctls(),
            "warm_qps": round(warm.qps, 1), "warm_completed": warm.completed,
            "warm_noerror": warm.rcodes.get("NOERROR", 0),
            "rtt_ms": float(params.get("rtt_ms") or 0)})


def _measure(run: Run, what: str) -> None:
    params = run.params
    generators = check_params(run.params)
    nodes = ServerNodes.of(run.topology, list(params["servers"]))
    placement = run.placement()
    zones, qfile = write_zone(run, int(params["names"]))
    wan = _wan(params, nodes)
    trials = sum(len(modes_of(params, t)) for t in params["transports"])
    per_cell = int(params["trials"]) * trials * (float(params["trial_s"]) + 2) + 40
    run.plan(len(params["servers"]) + bool(params.get("ceiling")), per_cell_s=per_cell)
    print(f"{what}: {len(params['servers'])} servers x {trials} transport runs x "
          f"{params['trials']} rounds x {params['trial_s']} s", file=sys.stderr)
    if params.get("ceiling") and run.finished("phase=ceiling") is None:
        run_ceiling(run, nodes, zones, qfile, generators, placement, wan)
    for kind in params["servers"]:
        if run.finished(f"server={kind}") is None:
            run_server(run, nodes, kind, zones, qfile, generators, placement, wan)


def throughput(run: Run) -> None:
    """transport-cost: the generator's ceiling per transport, then every server's qps over
    each transport it serves, closed loop (module docstring)."""
    _measure(run, "transport-cost")


def latency(run: Run) -> None:
    """transport-latency: paced loads under an emulated round trip, every answer's latency
    kept, per transport and connection mode (module docstring)."""
    _measure(run, "transport-latency")
