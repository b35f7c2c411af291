"""F5 (seed 004): authoritative DNS over TCP under each sysctl profile, repeated trials.

Lab `tcpauth`: `auth-knot`, `auth-bind`, `auth-nsd` (the same zone `tcp.test.`, `names` A
records; only the server chosen by SERVER runs) and `client` (dnsperf `-m tcp`, `-c clients`
connections, each closed and reopened after `queries_per_conn` queries so connection setup
and the listen queue are part of the load).

Cells, in order:
- `phase=capacity`: default profile; `capacity_trials` closed-loop dnsperf runs of
  `capacity_s` (no -Q: as fast as `outstanding` queries in flight allow); figures
  `capacity_qps` (median), `capacity_trials` (each). Every later rate is a share of this.
- `profile=<name>` for each profile in `profiles` (the profile's sysctls on the server node;
  keys that are host-wide on this kernel are applied only with ALLOW_HOST_SYSCTLS=1, else
  listed in `params.sysctls_skipped_host_wide`): `trials` rounds, each round one trial per
  load in `loads` (percent of capacity, order alternating between rounds so drift does not
  favour one load), each trial `dnsperf -Q <load% of capacity> -l trial_s`. The load is
  open loop: dnsperf may keep `rate x timeout` queries outstanding, so it offers the rate
  whatever the server does; at 100 % and above a profile that serves more shows it (the
  capacity is the default profile's, not a cap), and one that serves less loses queries.

Files per profile cell: `trials.csv`, one row per trial: `trial`, `load_pct`, `target_qps`,
`outstanding`, dnsperf's `qps`, `sent`, `completed`, `lost`, `failures_per_s`,
`avg_latency_ms`, `max_latency_ms`, `stdev_latency_ms`, `reconnections`,
`generator_cpu_pct`, the server namespace's counter increases over the trial
`listen_overflows` (TcpExt ListenOverflows: the accept queue was full, where
tcp_abort_on_overflow acts), `listen_drops`, `retrans_segs`, `passive_opens`, and
`latency_file`: the trial's answer-latency histogram (`latency-l<load>-<trial>.csv`, columns
`upper_s`, `count`, from dnsperf -v; percentiles are computed by the analysis);
`dnsperf-l<load>-<trial>.txt` (raw, without the per-answer lines); `monitor/<node>.csv`.
`cell.json` figures, per load L in `loads`: `qps_trials_l<L>`, `avg_latency_ms_trials_l<L>`,
`lost_trials_l<L>`, `listen_overflows_trials_l<L>`, `target_qps_l<L>`, and for the
claims of today `qps_l<L>`, `avg_latency_ms_l<L>` (medians), `failures_per_s_l<L>`,
`listen_overflows_l<L>` (sum); plus `capacity_qps`, `trials`.

The statistics (Kruskal-Wallis, Dunn, Tukey per load and measure against the first
profile) are the analysis' (`analysis.stats.write_stats` -> `stats.json`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from dnslab.counters import deltas, tables_in
from dnslab.errors import LabError
from dnslab.experiment import Cell, Run
from dnslab.lab import Lab
from dnslab.render import LabData, ZoneRef
from dnslab.servers import driver
from experiments.procedures import perf

ZONE = "tcp.test."


def write_zone(run: Run, names: int) -> tuple[ZoneRef, Path]:
    """`tcp.test.` with `names` hosts, and the dnsperf query file over them."""
    out = run.path / "zone"
    out.mkdir(parents=True, exist_ok=True)
    zone = out / "tcp.test.zone"
    lines = ["$ORIGIN tcp.test.\n$TTL 3600\n",
             "@ SOA ns1 hostmaster 1 3600 600 86400 60\n@ NS ns1\nns1 A 198.18.0.11\n"]
    lines += [f"h{i} A 192.0.2.{i % 250 + 1}\n" for i in range(names)]
    zone.write_text("".join(lines))
    qfile = out / "queries.txt"
    qfile.write_text("".join(f"h{i}.tcp.test. A\n" for i in range(names)))
    return ZoneRef(ZONE, zone), qfile


def server_options(server: str, params: dict[str, Any]) -> dict[str, Any]:
    """Room for every client's connection, and no response rate limiting."""
    return driver(server).client_room_options(params["clients"])


def _tcp_counters(lab: Lab, node: str) -> dict[str, int]:
    tables = tables_in(lab.netns(node))
    return {f"{name}.{key}": value for name in ("TcpExt", "Tcp")
            for key, value in tables.get(name, {}).items()}


COUNTERS = {"listen_overflows": "TcpExt.ListenOverflows", "listen_drops": "TcpExt.ListenDrops",
            "retrans_segs": "Tcp.RetransSegs", "passive_opens": "Tcp.PassiveOpens"}


def open_loop_outstanding(rate: float | None, params: dict[str, Any]) -> int:
    """Queries dnsperf may keep in flight: for a paced (open-loop) trial enough that the rate
    never waits for answers (rate x timeout), for the capacity run `outstanding`."""
    if not rate:
        return int(params["outstanding"])
    return max(int(params["outstanding"]), int(rate * params["timeout_s"]) + 1)


def _trial(cell: Cell, node: str, qfile: Path, params: dict[str, Any], rate: float | None,
           name: str) -> dict[str, Any]:
    lab = cell.lab
    assert lab is not None
    before = _tcp_counters(lab, node)
    extra = []
    if params["queries_per_conn"]:
        extra = ["-O", f"num-queries-per-conn={params['queries_per_conn']}"]
    latency = cell.path / (Path(name).stem.replace("dnsperf-", "latency-") + ".csv")
    outstanding = open_loop_outstanding(rate, params)
    result = perf.dnsperf(lab, "client", lab.address(node), qfile, cell.path / name,
                          duration_s=params["trial_s"] if rate else params["capacity_s"],
                          clients=params["clients"], threads=params["threads"],
                          outstanding=outstanding, max_qps=rate, tcp=True,
                          timeout_s=params["timeout_s"], extra=extra,
                          latency_csv=latency if params["latency_histogram"] else None)
    after = _tcp_counters(lab, node)
    if not lab.alive(node):
        raise LabError(f"{node} exited under load", hint=f"its log: {lab.log(node)}")
    row = {"outstanding": outstanding, **result.row()}
    gained = deltas(before, after, list(COUNTERS.values()))
    row.update({column: gained[key] for column, key in COUNTERS.items()})
    row["latency_file"] = latency.name if params["latency_histogram"] else ""
    return row


def _data(node: str, server: str, zone: ZoneRef, params: dict[str, Any],
          sysctls: dict[str, str]) -> LabData:
    return LabData(zones=[zone], health_zone=ZONE,
                   node_options={node: server_options(server, params)},
                   sysctls={node: sysctls} if sysctls else {})


def trials(run: Run) -> None:
    """tcp-sysctl: measure capacity, then N interleaved trials per load for each profile."""
    params = run.params
    server = params["server"]
    # server kind -> the lab's authoritative node of that kind (the tcpauth lab has one each)
    nodes = {kind: n.name for kind, n in run.topology.nodes_by_server("primary").items()}
    if server not in nodes:
        raise LabError(f"SERVER={server!r} is not an authoritative server of this lab",
                       hint="SERVER=" + ", ".join(nodes))
    node = nodes[server]
    others = [n for n in nodes.values() if n != node]
    zone, qfile = write_zone(run, params["names"])
    loads = list(params["loads"])
    trial_s = params["trial_s"] + 2 * params["timeout_s"] + 1
    per_profile = params["trials"] * len(loads) * trial_s + 15
    run.plan(1 + len(params["profiles"]), per_cell_s=per_profile)
    print(f"tcp-sysctl: {len(params['profiles'])} profiles x {params['trials']} trials x "
          f"{len(loads)} loads x {params['trial_s']} s: about "
          f"{(len(params['profiles']) * per_profile + 60) / 3600:.1f} h", file=sys.stderr)
    done = run.finished("phase=capacity")
    if done is not None:
        capacity = float(done["capacity_qps"])
    else:
        with run.cell("phase=capacity", {"phase": "capacity", "server": server,
                                         "profile": "default"}) as cell:
            cell.up(_data(node, server, zone, params, {}), hold=others)
            cell.monitor([node])
            rows = [_trial(cell, node, qfile, params, None, f"dnsperf-capacity-{i}.txt")
                    for i in range(1, params["capacity_trials"] + 1)]
            perf.write_rows(cell.path / "trials.csv", rows)
            capacity = perf.median([r["qps"] for r in rows]) or 0.0
            cell.figures.update({
                "capacity_qps": round(capacity, 1),
                "capacity_trials": [round(r["qps"], 1) for r in rows],
                "avg_latency_ms": perf.median([r["avg_latency_ms"] for r in rows]),
                "listen_overflows": sum(r["listen_overflows"] for r in rows)})
    if capacity <= 0:
        raise LabError("the capacity run answered nothing", hint="see phase=capacity's files")
    for profile in params["profiles"]:
        if run.finished(f"profile={profile}") is not None:
            continue
        sysctls, skipped = perf.profile_sysctls(run, profile)
        cell_params = {"profile": profile, "server": server, "sysctls": sysctls,
                       "sysctls_skipped_host_wide": skipped, "capacity_qps": round(capacity, 1),
                       "loads": loads}
        with run.cell(f"profile={profile}", cell_params) as cell:
            cell.up(_data(node, server, zone, params, sysctls), hold=others)
            cell.monitor([node])
            rows = []
            for trial in range(1, params["trials"] + 1):
                order = loads if trial % 2 else list(reversed(loads))
                for load in order:
                    rate = capacity * load / 100
                    row = {"trial": trial, "load_pct": load, "target_qps": round(rate, 1),
                           **_trial(cell, node, qfile, params, rate,
                                    f"dnsperf-l{load}-{trial}.txt")}
                    rows.append(row)
                    perf.write_rows(cell.path / "trials.csv", rows)
            cell.figures.update(_figures(rows, loads, capacity))


def _figures(rows: list[dict[str, Any]], loads: list[int], capacity: float) -> dict[str, Any]:
    figures: dict[str, Any] = {"capacity_qps": round(capacity, 1),
                               "trials": max(r["trial"] for r in rows)}
    for load in loads:
        mine = [r for r in rows if r["load_pct"] == load]
        figures.update({
            f"target_qps_l{load}": round(capacity * load / 100, 1),
            f"qps_l{load}": perf.median([r["qps"] for r in mine]),
            f"avg_latency_ms_l{load}": perf.median([r["avg_latency_ms"] for r in mine]),
            f"qps_trials_l{load}": [round(r["qps"], 1) for r in mine],
            f"avg_latency_ms_trials_l{load}": [r["avg_latency_ms"] for r in mine],
            f"failures_per_s_l{load}": perf.median([r["failures_per_s"] for r in mine]),
            f"listen_overflows_l{load}": sum(r["listen_overflows"] for r in mine),
            f"lost_trials_l{load}": [r["lost"] for r in mine],
            f"listen_overflows_trials_l{load}": [r["listen_overflows"] for r in mine],
        })
    return figures
