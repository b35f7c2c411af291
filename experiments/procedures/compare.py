"""Your own question: the servers of your lab compared by dnsperf over each transport, with the
generator's own ceiling for the same command measured in the same run.

An experiment file of your own (README "Your own question") names this procedure:

    description: NSD, Knot and BIND over UDP and TCP on one core each
    topology: mine.clab.yml            # a lab name, or a file beside this one
    procedure: compare.servers_by_transport
    plots: [compare_qps, compare_latency]
    params: {servers: [nsd, knot, bind], transports: [udp, tcp]}

`servers` names nodes, or versions of a kind the lab has (`[bind@9.18, bind@9.20]`: the run
adds a node per version the lab lacks, a copy of its node of that kind; the cells are named
as given). `transports`: udp, tcp, dot (DNS over TLS on 853: each server's own listener
with the lab's certificate; a version that serves no DoT is refused before the run).

The lab's reference zones are loaded on every server (`example.test.`; the query file's
default asks `www.example.test A`). Placement (`Run.placement`): the client on the
generator's CPUs, every server on the server's CPUs, disjoint unless SHARE_CORES=1.

Cells, in order:
- `server=<name>` for each of `servers` (default: every server node, file order): the
  lab up with that server only (the others held, so they cost no CPU), `repetitions` rounds of
  one closed-loop dnsperf run per transport (`-c clients -q outstanding -l duration_s`, the
  transports' order alternating between rounds), each with its latency histogram.
- `server=ceiling` (unless `ceiling: false`): the same commands against `dnsload serve` (a
  canned responder that answers every query at once) in the first server's node, on the
  server's CPUs, every daemon held: what dnsperf itself reaches on this placement. A server
  within 10 % of it measured the generator, not itself (the plot and its readings say so).

Files per cell: `trials.csv` (one row per run: `transport`, `repetition`, dnsperf's figures,
`generator_cpu_pct`, `latency_file`), `dnsperf-<transport>-<r>.txt`,
`latency-<transport>-<r>.csv` (`upper_s`, `count`), `monitor/`; `cell.json` figures per
transport T: `qps_<T>` (median), `qps_trials_<T>`, `lost_<T>` (sum), `avg_latency_ms_<T>`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dnslab import cpus, paths
from dnslab.errors import LabError
from dnslab.experiment import Cell, Run
from dnslab.lab import Lab
from dnslab.render import LabData, reference_data
from dnslab.servers import driver, merge_options
from dnslab.servers.manifest import encrypted_transports_of
from experiments.generators import perf
from experiments.generators.dnsload import ensure_dnsload, serving

TRANSPORTS = ("udp", "tcp", "dot")
CEILING = "ceiling"


def server_nodes(run: Run) -> dict[str, str]:
    """Each name SERVERS gives (a node, or a kind's version) -> its node, checked against the
    lab; else every server node but the client's, in the topology file's order. A server
    whose version serves no DoT while TRANSPORTS has it is refused here, before any cell."""
    client = run.topology.node(role="client").name
    candidates = [n.name for n in run.topology.nodes.values() if n.name != client]
    chosen: dict[str, str] = {}
    for name in run.params.get("servers") or candidates:
        versions = [n.name for n in run.topology.nodes_where(server=name) if n.name != client]
        node = name if name in candidates else (versions[0] if versions else None)
        if node is None:
            raise LabError(f"SERVERS={name}: no server node or version of lab "
                           f"{run.topology.name}", hint="SERVERS=" + ",".join(candidates))
        chosen[name] = node
    if not chosen:
        raise LabError(f"SERVERS=(none): lab {run.topology.name} has no server node",
                       hint="add a server node to the topology")
    wrong = [t for t in run.params["transports"] if t not in TRANSPORTS]
    if wrong:
        raise LabError(f"TRANSPORTS={','.join(wrong)}: not a transport dnsperf runs here",
                       hint="TRANSPORTS=" + ",".join(TRANSPORTS))
    if "dot" in run.params["transports"]:
        for name, node in chosen.items():
            if "dot" not in encrypted_transports_of(run.topology.node(node).image_key):
                raise LabError(f"SERVERS={name}: {run.topology.node(node).image_key} serves "
                               "no DNS over TLS", hint="leave it out, or TRANSPORTS=udp,tcp")
    return chosen


def query_file(run: Run) -> Path:
    out = run.path / "queries.txt"
    out.write_text("".join(f"{line.strip()}\n" for line in run.params["queries"]))
    return out


def _lab_data(run: Run, servers: list[str], client: str,
              placement: cpus.Placement) -> LabData:
    data = reference_data(run.topology, run.path / "zones-rendered")
    clients = int(run.params["clients"])
    encrypted = [t for t in run.params["transports"] if t == "dot"]
    data.node_options = {}
    for node in servers:
        drv = driver(run.topology.node(node).server)
        data.node_options[node] = merge_options(
            drv.client_room_options(clients),
            drv.transport_options(["udp", "tcp", *encrypted]) if encrypted else {})
    data.cpu_sets = {client: placement.generator, **{n: placement.server for n in servers}}
    return data


def _trial(cell: Cell, lab: Lab, client: str, target: str, transport: str, repetition: int,
           qfile: Path) -> dict[str, Any]:
    params = cell.run.params
    stem = f"{transport}-{repetition}"
    latency = cell.path / f"latency-{stem}.csv"
    result = perf.dnsperf(lab, client, lab.address(target), qfile,
                          cell.path / f"dnsperf-{stem}.txt",
                          duration_s=params["duration_s"], clients=params["clients"],
                          outstanding=params["outstanding"], mode=transport,
                          timeout_s=params["timeout_s"], latency_csv=latency)
    return {"transport": transport, "repetition": repetition, **result.row(),
            "latency_file": latency.name}


def _measure(cell: Cell, lab: Lab, client: str, target: str, qfile: Path) -> None:
    params = cell.run.params
    transports = list(params["transports"])
    rows = []
    for repetition in range(1, int(params["repetitions"]) + 1):
        order = transports if repetition % 2 else list(reversed(transports))
        for transport in order:
            rows.append(_trial(cell, lab, client, target, transport, repetition, qfile))
            perf.write_rows(cell.path / "trials.csv", rows)
    if cell.params["server"] != CEILING and not lab.alive(target):
        raise LabError(f"{target} exited under load", hint=f"its log: {lab.log(target)}")
    for transport in transports:
        mine = [r for r in rows if r["transport"] == transport]
        cell.figures.update({
            f"qps_{transport}": perf.median([r["qps"] for r in mine]),
            f"qps_trials_{transport}": [round(r["qps"], 1) for r in mine],
            f"lost_{transport}": sum(r["lost"] for r in mine),
            f"avg_latency_ms_{transport}": perf.median([r["avg_latency_ms"] for r in mine]),
        })


def servers_by_transport(run: Run) -> None:
    """Every server in SERVERS, then the generator's ceiling, over every transport."""
    params = run.params
    chosen = server_nodes(run)
    servers = list(dict.fromkeys(chosen.values()))
    client = run.topology.node(role="client").name
    placement = run.placement()
    qfile = query_file(run)
    per_run = params["duration_s"] + 2 * params["timeout_s"] + 2
    cells = len(servers) + bool(params["ceiling"])
    run.plan(cells, per_cell_s=params["repetitions"] * len(params["transports"]) * per_run + 15)
    if params["ceiling"]:
        ensure_dnsload()  # built before any lab is up
    for name, node in chosen.items():
        cell_id = f"server={name}"
        if run.finished(cell_id) is not None:
            continue
        kind = run.topology.node(node).server
        with run.cell(cell_id, {"server": name, "node": node, "kind": kind,
                                "version": run.topology.node(node).image_key,
                                "placement": placement.as_dict()}) as cell:
            lab = cell.up(_lab_data(run, servers, client, placement),
                          hold=[n for n in servers if n != node])
            cell.monitor([node])
            _measure(cell, lab, client, node, qfile)
    if not params["ceiling"] or run.finished(f"server={CEILING}") is not None:
        return
    responder = servers[0]
    budget = cells * len(params["transports"]) * params["repetitions"] * per_run + 120
    with run.cell(f"server={CEILING}", {"server": CEILING, "responder": "dnsload serve",
                                        "responder_node": responder,
                                        "placement": placement.as_dict()}) as cell:
        data = _lab_data(run, servers, client, placement)
        data.extra_binds = [paths.BIN]
        lab = cell.up(data, hold=servers)
        dot = ["-dot"] if "dot" in params["transports"] else []
        with serving(lab, responder, budget, cell.path / "dnsload", dot):
            cell.monitor([responder])
            _measure(cell, lab, client, responder, qfile)
