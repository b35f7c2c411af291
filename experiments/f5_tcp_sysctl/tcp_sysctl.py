"""F5 (seed 004): authoritative DNS over TCP under each sysctl profile, repeated trials.

Lab `tcpauth`: `auth-knot`, `auth-bind`, `auth-nsd` (the same zone `tcp.test.`, `names` A
records; only the server chosen by SERVER runs) and `client` (dnsperf `-m tcp`, `-c clients`
connections, each closed and reopened after `queries_per_conn` queries so connection setup
and the listen queue are part of the load).

Placement (`Run.placement`): the client (dnsperf) on the generator's CPUs, the server under
test on the server's, in every cell (disjoint unless SHARE_CORES=1; recorded in meta.json).

Cells, in order:
- `phase=capacity`: default profile; `capacity_trials` closed-loop dnsperf runs of
  `capacity_s` (no -Q: as fast as `outstanding` queries in flight allow); figures
  `capacity_qps` (the best trial), `capacity_trials` (each). Every later rate is a share of
  this. The best, not the median: on a shared VM a closed-loop trial is pulled down by
  whatever else runs, never pushed up, and one run's three trials gave 31.5k, 52.7k and
  34.0k qps; with the median (34.0k) as "100 %", Knot answered 99 % of the "150 %" load
  (51k), so no load saturated it and both F5 claims were "not applicable".
- `phase=ceiling` (unless `ceiling: false`): the generator's own ceiling for the trials' load,
  in this run, on this placement: the same dnsperf command as the trials (TCP, `clients`,
  `threads`, `queries_per_conn`, `timeout_s`, the open-loop outstanding, `-Q` at each load
  in `loads` of the capacity, `trial_s`), `ceiling_trials` times per load, plus the capacity
  run's closed-loop command once per trial, against `dnsload serve` (a canned responder that
  answers every query of a TCP connection, on as many connections as come) in the server
  node's namespace, on the server's CPUs, with every server daemon held. `ceiling.csv`: the
  trials.csv columns plus `mode` (`paced` | `closed`) and `sent_qps`; figures per load L
  `ceiling_qps_l<L>` (the best round's answered qps: what dnsperf can send),
  `ceiling_sent_qps_l<L>` (the best round's sent / trial_s), `target_qps_l<L>`, and
  `closed_loop_ceiling_qps`; `dnsload/serve.jsonl` the responder's own counts (queries and TCP
  connections it served, printed when it is stopped). The
  analysis (`analysis.derived.require_paced_load_reached`) judges a load whose target the
  generator did not reach against the responder as generator-limited (a profile trial that
  sent less than its target was held back by the server).
- `profile=<name>,round=<r>` for r in 1..`trials`, round by round: each round runs every
  profile in `profiles` once (the order rotated by one each round, so no profile always goes
  first), each in a fresh lab with the profile's sysctls on the server node (keys that are
  host-wide on this kernel are applied only with ALLOW_HOST_SYSCTLS=1, else listed in
  `params.sysctls_skipped_host_wide`), one trial per load in `loads` (percent of capacity,
  order alternating between rounds so drift does not favour one load), each trial
  `dnsperf -Q <load% of capacity> -l trial_s`. The rounds are blocks: a noisy machine's
  drift over a several-hour study, or a run resumed (RESUME=) on another day, falls on
  every profile alike instead of on the profiles that happened to run late. The load is
  open loop: dnsperf may keep `rate x timeout` queries outstanding, so it offers the rate
  whatever the server does; at 100 % and above a profile that serves more shows it (the
  capacity is the default profile's, not a cap), and one that serves less loses queries.
  `timeout_s` (0.5 s) is under the 1 s after which Linux retries a SYN (or handshake ACK)
  that an overflowing listen queue dropped, so queries on such a connection are lost, as
  the seed's were (F5.abort-on-overflow.lost); a saturated server's own queueing delay
  (`max_outstanding` / its qps, ~50 ms) stays far below it. SCALE=seed: trials of the
  seed's 300 s (`SEED_TRIAL_S`; the plan printed at the start gives both lengths).

Files per profile cell: `trials.csv`, one row per trial: `trial` (the round), `load_pct`,
`target_qps`, `sent_qps` (what dnsperf sent / trial_s: the rate it really offered), `outstanding`,
dnsperf's `qps`, `sent`, `completed`, `lost`, `failures_per_s`,
`avg_latency_ms`, `max_latency_ms`, `stdev_latency_ms`, `reconnections`,
`generator_cpu_pct`, the server namespace's counter increases over the trial
`listen_overflows` (TcpExt ListenOverflows: the accept queue was full, where
tcp_abort_on_overflow acts), `listen_drops`, `retrans_segs`, `passive_opens`,
`embryonic_rsts` (TcpExt EmbryonicRsts: handshakes reset before they were accepted, which is
what tcp_abort_on_overflow=1 does to one whose last ACK meets a full accept queue; a SYN
dropped at a full queue is never reset), the client namespace's `client_syn_retrans`
(TcpExt TCPSynRetrans: SYNs it retried, e.g. after a full queue dropped them),
`client_retrans_segs` (Tcp RetransSegs: SYN retries plus data segments resent, as a query is
when its handshake's last ACK met a full queue) and `client_estab_resets` (Tcp EstabResets:
connections reset under it, as tcp_abort_on_overflow=1 resets such a handshake), and
`latency_file`: the trial's answer-latency histogram (`latency-l<load>-<trial>.csv`, columns
`upper_s`, `count`, from dnsperf -v; percentiles are computed by the analysis);
`dnsperf-l<load>-<trial>.txt` (raw, without the per-answer lines); `monitor/<node>.csv`.
`cell.json` figures (of that round; the analysis pools a profile's rounds), per load L in
`loads`: `qps_trials_l<L>`, `avg_latency_ms_trials_l<L>`,
`lost_trials_l<L>`, `listen_overflows_trials_l<L>`, `target_qps_l<L>`, and for the
claims of today `qps_l<L>`, `avg_latency_ms_l<L>` (medians), `failures_per_s_l<L>`,
`listen_overflows_l<L>` (sum); plus `capacity_qps`, `trials`.

The statistics (Kruskal-Wallis, Dunn, Tukey per load and measure against the first
profile) are the analysis' (`analysis.stats.write_stats` -> `stats.json`).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import yaml

from dnslab import cpus, findings, paths
from dnslab.counters import deltas
from dnslab.errors import LabError
from dnslab.experiment import Cell, Run
from dnslab.lab import Lab
from dnslab.render import LabData, ZoneRef
from dnslab.servers import driver
from dnslab.servers.manifest import short_name
from dnslab.thresholds import SATURATED_SHARE
from experiments.generators import perf
from experiments.generators.dnsload import ensure_dnsload, serving

ZONE = "tcp.test."
# the seed's trial length ("at least twenty 5-minute trials of DNSperf"): SCALE=seed
SEED_TRIAL_S = int(yaml.safe_load(findings.experiment_file("tcp-sysctl").read_text())
                   ["scales"]["seed"]["trial_s"])


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
    tables = lab.tables(node)
    return {f"{name}.{key}": value for name in ("TcpExt", "Tcp")
            for key, value in tables.get(name, {}).items()}


COUNTERS = {"listen_overflows": "TcpExt.ListenOverflows", "listen_drops": "TcpExt.ListenDrops",
            "retrans_segs": "Tcp.RetransSegs", "passive_opens": "Tcp.PassiveOpens",
            "embryonic_rsts": "TcpExt.EmbryonicRsts"}
# the generator's side of the same overflows: a SYN the full queue dropped is retried
# (TCPSynRetrans); a handshake whose last ACK met it leaves the client's first query
# unacknowledged, so the client retransmits data (RetransSegs beyond its SYN retries), or, with
# tcp_abort_on_overflow=1, its established connection is reset (EstabResets)
CLIENT_COUNTERS = {"client_syn_retrans": "TcpExt.TCPSynRetrans",
                   "client_retrans_segs": "Tcp.RetransSegs",
                   "client_estab_resets": "Tcp.EstabResets"}


def open_loop_outstanding(rate: float | None, params: dict[str, Any]) -> int:
    """Queries dnsperf may keep in flight: for a paced (open-loop) trial enough that the rate
    never waits for answers (rate x timeout) up to `max_outstanding`, for the capacity run
    `outstanding`."""
    if not rate:
        return int(params["outstanding"])
    # dnsperf's own pace falls as -q grows (figures at `max_outstanding` in
    # experiments/tcp-sysctl.yaml), so rate x timeout is capped: a server answering within
    # cap / rate seconds still sees the full rate
    wanted = max(int(params["outstanding"]), int(rate * params["timeout_s"]) + 1)
    cap = int(params.get("max_outstanding") or 0)
    return min(wanted, cap) if cap else wanted


def _trial(cell: Cell, client: str, node: str, qfile: Path, params: dict[str, Any],
           rate: float | None, name: str, responder: bool = False) -> dict[str, Any]:
    lab = cell.lab
    assert lab is not None
    before = _tcp_counters(lab, node)
    client_before = _tcp_counters(lab, client)
    extra = []
    if params["queries_per_conn"]:
        extra = ["-O", f"num-queries-per-conn={params['queries_per_conn']}"]
    latency = cell.path / (Path(name).stem.replace("dnsperf-", "latency-") + ".csv")
    outstanding = open_loop_outstanding(rate, params)
    result = perf.dnsperf(lab, client, lab.address(node), qfile, cell.path / name,
                          duration_s=params["trial_s"] if rate else params["capacity_s"],
                          clients=params["clients"], threads=params["threads"],
                          outstanding=outstanding, max_qps=rate, tcp=True,
                          timeout_s=params["timeout_s"], extra=extra,
                          latency_csv=latency if params["latency_histogram"] else None)
    after = _tcp_counters(lab, node)
    client_after = _tcp_counters(lab, client)
    if not responder and not lab.alive(node):
        raise LabError(f"{node} exited under load", hint=f"its log: {lab.log(node)}")
    row = {"outstanding": outstanding, **result.row()}
    if rate:
        row = {"sent_qps": round(result.sent / params["trial_s"], 1), **row}
    gained = deltas(before, after, list(COUNTERS.values()))
    row.update({column: gained[key] for column, key in COUNTERS.items()})
    gained = deltas(client_before, client_after, list(CLIENT_COUNTERS.values()))
    row.update({column: gained[key] for column, key in CLIENT_COUNTERS.items()})
    row["latency_file"] = latency.name if params["latency_histogram"] else ""
    return row


def _data(node: str, client: str, server: str, zone: ZoneRef, params: dict[str, Any],
          sysctls: dict[str, str], placement: cpus.Placement) -> LabData:
    return LabData(zones=[zone], health_zone=ZONE,
                   node_options={node: server_options(server, params)},
                   sysctls={**({node: sysctls} if sysctls else {}),
                            **_client_sysctls(client, params)},
                   cpu_sets={client: placement.generator, node: placement.server})


def _client_sysctls(client: str, params: dict[str, Any]) -> dict[str, dict[str, str]]:
    """The generator node's sysctls, keyed by its node (none: no entry)."""
    chosen = perf.client_sysctls(params)
    return {client: chosen} if chosen else {}


def _record_client(cell: Cell, lab: Lab, client: str) -> None:
    """The generator's sysctls as read back in its namespace, into the cell's figures."""
    cell.figures["client_sysctls"] = lab.state.nodes[client].sysctls


def run_ceiling(run: Run, node: str, client: str, servers: list[str], zone: ZoneRef,
                qfile: Path, capacity: float, placement: cpus.Placement) -> None:
    """The generator's ceiling for the trials' load (see the module docstring): the trials'
    dnsperf command at each load, and the capacity run's, against `dnsload serve` in `node`'s
    namespace (its daemon and every other server held)."""
    params = run.params
    loads = list(params["loads"])
    ensure_dnsload()  # built before the lab is up
    data = LabData(zones=[zone], health_zone=ZONE, extra_binds=[paths.BIN],
                   sysctls=_client_sysctls(client, params),
                   cpu_sets={client: placement.generator, node: placement.server})
    cell_params = {"phase": "ceiling", "responder": "dnsload serve", "responder_node": node,
                   "capacity_qps": round(capacity, 1), "loads": loads,
                   "placement": placement.as_dict()}
    trials = int(params["ceiling_trials"])
    per_trial = max(params["trial_s"], params["capacity_s"]) + 2 * params["timeout_s"] + 10
    budget = trials * (len(loads) + 1) * per_trial + 120
    with run.cell("phase=ceiling", cell_params) as cell:
        lab = cell.up(data, hold=servers)
        _record_client(cell, lab, client)
        with serving(lab, node, budget, cell.path / "dnsload"):
            cell.monitor([node])
            rows: list[dict[str, Any]] = []
            for trial in range(1, trials + 1):
                rows.append({"trial": trial, "mode": "closed", "load_pct": "", "target_qps": "",
                             **_trial(cell, client, node, qfile, params, None,
                                      f"dnsperf-closed-{trial}.txt", responder=True)})
                order = loads if trial % 2 else list(reversed(loads))
                for load in order:
                    rate = capacity * load / 100
                    rows.append({"trial": trial, "mode": "paced", "load_pct": load,
                                 "target_qps": round(rate, 1),
                                 **_trial(cell, client, node, qfile, params, rate,
                                          f"dnsperf-l{load}-{trial}.txt", responder=True)})
            perf.write_rows(cell.path / "ceiling.csv", _uniform(rows))
            cell.figures.update(_ceiling_figures(rows, loads, capacity))


def _uniform(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows with every column any row has (a closed-loop row has no `sent_qps`)."""
    columns = list(dict.fromkeys(k for row in rows for k in row))
    return [{c: row.get(c, "") for c in columns} for row in rows]


def _ceiling_figures(rows: list[dict[str, Any]], loads: list[int],
                     capacity: float) -> dict[str, Any]:
    closed = [r["qps"] for r in rows if r["mode"] == "closed"]
    figures: dict[str, Any] = {"capacity_qps": round(capacity, 1),
                               "closed_loop_ceiling_qps": perf.median(closed)}
    for load in loads:
        mine = [r for r in rows if r["mode"] == "paced" and r["load_pct"] == load]
        figures.update({
            f"target_qps_l{load}": round(capacity * load / 100, 1),
            f"ceiling_qps_l{load}": max(r["qps"] for r in mine),
            f"ceiling_sent_qps_l{load}": max(r["sent_qps"] for r in mine),
        })
    return figures


def unsaturated_warning(rows: list[dict[str, Any]], loads: list[int]) -> str | None:
    """What to tell the user when the default profile's trial at the highest load answered
    (nearly) all it was offered, else None. The closed-loop capacity swings widely on a
    shared VM (30-61k qps in one day), and a load it calls 120 % may be one the server
    answers in full: the run would then end, hours later, with the F5 claims "not
    applicable". Said after the first default cell, while it is cheap to stop."""
    top = max(loads)
    mine = [r for r in rows if r["load_pct"] == top and r.get("target_qps") and r.get("qps")]
    share = perf.median([r["qps"] / r["target_qps"] for r in mine])
    if share is None or share < SATURATED_SHARE:
        return None
    suggest = math.ceil(top * 1.3 / 10) * 10
    return (f"tcp-sysctl: at {top} % load ({mine[0]['target_qps']:,.0f} qps) the default "
            f"profile answered {share:.0%} of the offered rate: the server is not saturated, "
            f"so the F5 claims will be 'not applicable' (hint: stop with Ctrl-C and run again "
            f"with a higher load, e.g. LOADS={suggest})")


def hours(params: dict[str, Any], trial_s: float) -> float:
    """About how long the profile cells take with trials of `trial_s` seconds."""
    per_cell = len(params["loads"]) * (trial_s + 2 * params["timeout_s"] + 1) + 10
    return (len(params["profiles"]) * params["trials"] * per_cell + 60) / 3600


def plan_line(params: dict[str, Any]) -> str:
    """The study's size and length as the run prints it, with the seed's trial length
    beside when the run's trials are shorter (F5.no-effect's +-5 % needs the seed's)."""
    line = (f"tcp-sysctl: {len(params['profiles'])} profiles x {params['trials']} rounds x "
            f"{len(params['loads'])} loads x {params['trial_s']} s: about "
            f"{hours(params, params['trial_s']):.1f} h")
    if params["trial_s"] < SEED_TRIAL_S:
        line += (f" (the seed's {SEED_TRIAL_S} s trials, SCALE=seed: about "
                 f"{hours(params, SEED_TRIAL_S):.1f} h)")
    return line


def trials(run: Run) -> None:
    """tcp-sysctl: measure capacity and the generator's ceiling, then `trials` rounds, each
    one cell per profile (order rotated) with one trial per load."""
    params = run.params
    server = params["server"]
    # kind@version -> the lab's authoritative node of that version (the tcpauth lab has one
    # of each kind), looked up by any name of a version (`knot` is its default)
    nodes = run.topology.names_by_server("primary")
    if server not in nodes:
        raise LabError(f"SERVER={server!r} is not an authoritative server of this lab",
                       hint="SERVER=" + ", ".join(short_name(k) for k in nodes))
    node = nodes[server]
    client = run.topology.node(role="client").name
    others = [n for n in nodes.values() if n != node]
    placement = run.placement()
    zone, qfile = write_zone(run, params["names"])
    loads = list(params["loads"])
    trial_s = params["trial_s"] + 2 * params["timeout_s"] + 1
    profiles = list(params["profiles"])
    per_cell = len(loads) * trial_s + 10
    run.plan(1 + bool(params.get("ceiling")) + len(profiles) * params["trials"],
             per_cell_s=per_cell)
    print(plan_line(params), file=sys.stderr)
    done = run.finished("phase=capacity")
    if done is not None:
        capacity = float(done["capacity_qps"])
    else:
        with run.cell("phase=capacity", {"phase": "capacity", "server": server,
                                         "primary_node": node, "profile": "default"}) as cell:
            lab = cell.up(_data(node, client, server, zone, params, {}, placement),
                          hold=others)
            _record_client(cell, lab, client)
            cell.monitor([node])
            rows = [_trial(cell, client, node, qfile, params, None,
                           f"dnsperf-capacity-{i}.txt")
                    for i in range(1, params["capacity_trials"] + 1)]
            perf.write_rows(cell.path / "trials.csv", rows)
            capacity = max((r["qps"] or 0.0 for r in rows), default=0.0)
            cell.figures.update({
                "capacity_qps": round(capacity, 1),
                "capacity_trials": [round(r["qps"], 1) for r in rows],
                "avg_latency_ms": perf.median([r["avg_latency_ms"] for r in rows]),
                "listen_overflows": sum(r["listen_overflows"] for r in rows)})
    if capacity <= 0:
        raise LabError("the capacity run answered nothing", hint="see phase=capacity's files")
    # .get: a resumed run from before the ceiling cell keeps its own parameters
    if params.get("ceiling") and run.finished("phase=ceiling") is None:
        run_ceiling(run, node, client, list(nodes.values()), zone, qfile, capacity,
                    placement)
    chosen = {profile: perf.profile_sysctls(run, profile) for profile in profiles}
    checked = False
    for rnd in range(1, params["trials"] + 1):
        first = (rnd - 1) % len(profiles)
        for profile in profiles[first:] + profiles[:first]:
            cell_id = f"profile={profile},round={rnd}"
            if run.finished(cell_id) is not None:
                continue
            sysctls, skipped = chosen[profile]
            # primary_node: the lab holds one node of each kind, so the analysis reads the
            # settings back from the one under test (Run.node_with_role), not the first
            cell_params = {"profile": profile, "round": rnd, "server": server,
                           "primary_node": node, "sysctls": sysctls,
                           "sysctls_skipped_host_wide": skipped,
                           "capacity_qps": round(capacity, 1), "loads": loads,
                           "placement": placement.as_dict()}
            with run.cell(cell_id, cell_params) as cell:
                lab = cell.up(_data(node, client, server, zone, params, sysctls, placement),
                              hold=others)
                _record_client(cell, lab, client)
                cell.monitor([node])
                rows = []
                for load in loads if rnd % 2 else list(reversed(loads)):
                    rate = capacity * load / 100
                    rows.append({"trial": rnd, "load_pct": load, "target_qps": round(rate, 1),
                                 **_trial(cell, client, node, qfile, params, rate,
                                          f"dnsperf-l{load}-{rnd}.txt")})
                    perf.write_rows(cell.path / "trials.csv", rows)
                cell.figures.update(_figures(rows, loads, capacity))
            if profile == "default" and not checked:
                checked = True
                warning = unsaturated_warning(rows, loads)
                if warning:
                    run.warn(warning)


def _figures(rows: list[dict[str, Any]], loads: list[int], capacity: float) -> dict[str, Any]:
    figures: dict[str, Any] = {"capacity_qps": round(capacity, 1),
                               "trials": len({r["trial"] for r in rows})}
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
