"""TCP-fallback procedures for F1 (seed 000): oversized 3GPP NAPTR answers, stair capacity.

`tcp_fallback` (experiment `tcp-fallback`): a BIND primary feeds the 3GPP EPC zone (profile
`before` or `after`) to the secondary under test (BIND, or Knot or NSD "to show what another
server would have done"); the client node sends the mobile-core query mix (zones.queries) with
`dnsload`, UDP first with EDNS 4096 and every truncated answer retried over TCP on a new
connection, as an MME does, in the seed's stair protocol. Matrix: server x records
(before/after) x tuning (untuned: kernel defaults; tuned: the `mobile-core` sysctl profile on
the server node plus the server's tuned options, for BIND `tcp-clients` up, `tcp-listen-queue`
max, socket buffers; `minimal-responses no` in both, as the seed's operator left it off).

Each cell first records what the server really sends: the TAC and APN names asked over UDP
(EDNS 4096) and over TCP from the client, next to the modelled full response of
`zones.model` (what BIND 9.9/9.11 sent), in `responses.csv`; and the TCP share the query file
would cause with this server (`predicted_tcp_share`: every distinct query of the file asked
once over UDP, weighted by how often the file holds it). Then the stair runs (the coarse
pass, then a fine pass around the knee), then (optional) a burst at the capacity, and when
it fails the search below it for the load that holds the burst (short probe bursts, then the
full burst at the load found: the seed's capacity is the load that held stair, burst,
function test and soak), and the function test at the load that held (skipped when none
held, at the stair capacity when no burst runs).

The parts it drives: `experiments/responses.py` (answer sizes, truncated share),
`experiments/dnsload.py` (the generator: build, command line, runner),
`experiments/stairs.py` (step judging, stair/burst/function protocols),
`experiments/stair_recorder.py` (`stair.csv`, stair figures) and `experiments/zone_changes.py`
(the function test's edits on the primary).

Placement: the client (dnsload) runs on the generator's CPUs, the server under test and the
primary on the server's (`Run.placement`: disjoint unless SHARE_CORES=1). Before the server
cells of a record set, the `server=ceiling,records=<r>` cell measures the generator's own
ceiling on that placement: the same query file, criteria and client against `dnsload serve`
in the (held) sec-bind node, truncating the query file's modelled share and padding TCP
answers to the largest modelled answer (`run_ceiling`); its params say `server: ceiling`
and hold no `tuning`, its `stair.csv` has the usual columns and `capacity_qps` is the ceiling.

Files per cell (`cells/<cell-id>/`):
- `responses.csv`: `server, records, kind (tac|apn), qname, source (udp|tcp|model), size,
  answer, authority, additional (OPT included, as dig counts), truncated, rcode`, and for
  TCP answers `missing, extra` (records of the modelled full answer not sent / sent but not
  in it) and `size_full_compression` (the answer re-encoded with full name compression);
  `answers/<qname>.tcp.bin`: each TCP answer as received
- `stair.csv`: the columns of `experiments/stairs.py` (`step, offered_qps, answered_qps, udp,
  tcp, truncated, timeouts, errors, p50_ms, p90_ms, p99_ms, max_ms, tcp_share, passed,
  target_qps, error_rate, reasons`), then `truncated_per_s, throttled, net_errors,
  udp_rcvbuf_errors, udp_in_errors, listen_overflows, listen_drops` (deltas over the step,
  read in the server's namespace), `server_cpu_pct` (mean of the monitor over the step),
  `t_start, t_end` (s since the cell's monitors started), `phase` (coarse | fine),
  `req_q_full_drops` (server, TCPReqQFullDrop), `client_syn_retrans`, `client_retrans_segs`
  (the client's TCPSynRetrans and RetransSegs over the step: a retried SYN waited >= 1 s),
  `generator_cpu_pct` (dnsload's own CPU time / wall time, from wait4),
  `server_cores_busy_pct`, `generator_cores_busy_pct` (mean busy % of each side's CPUs from
  `monitor/cores.csv`: with disjoint sets, each side's whole CPU use, softirq included, and
  whatever else the host ran there), `server_cpus`, `generator_cpus`, `note` (a step whose
  worst TAT is a retried SYN says so)
- `burst.csv` (same columns, one row per full burst: the stair capacity's, then each at a
  load the search found) and `burst-probe.csv` (the search's probe bursts, phase `probe`)
  when BURST_S > 0 and a step passed; `function-load.csv` (one row) when FUNCTION_S > 0 and
  a load held; `function.csv` the function test's changes
- `dnsload/stair-NN.jsonl` (`burst-01.jsonl`): the generator's raw output per step,
  `dnsload/stderr.log` its stderr and exit status per run; `monitor/<server node>.csv`,
  `monitor/client.csv`, `monitor/cores.csv`: 1 Hz node counters and per-core busy share
- `queries.json`: the query file's manifest (mix, modelled truncated share)

`cell.json` figures (the analysis reads these names):
- `capacity_qps`: highest passing stair step (target qps); null when no step passed
- `capacity_step`: the step number of that step; `steps_run`: steps run
- `tcp_share`: TCP queries / (UDP + TCP queries) **measured at the capacity step** (at the
  first step when no step passed); `tcp_share_overall`: the same over every step of the stair
- `truncated_per_s`: truncated UDP answers per second at the capacity step (same fallback)
- `max_latency_ms_at_capacity`, `p99_ms_at_capacity`: worst and 99th-percentile TAT at the
  capacity step (null when no step passed)
- `max_ms_by_qps`, `p99_ms_by_qps`: {target qps (string): ms} for every step run, for
  "worst latency near capacity" comparisons at equal rates
- `answered_qps_at_capacity`, `server_cpu_pct_at_capacity`
- `first_fail_qps`, `first_fail_reasons`: the first failing step above the capacity
- `predicted_truncated_share`: share of the query file's UDP queries this server truncates
  (every distinct query asked once over UDP, weighted by its count in the file);
  `predicted_tcp_share` = s / (1 + s) of it, the TCP share the stair should measure;
  `model_truncated_share`, `model_tcp_share`: the same with the modelled full responses
  (from the query file's manifest)
- response sizes (largest TAC and APN name, bytes as received): `tac_udp_size`,
  `tac_tcp_size`, `tac_model_size`, `tac_udp_truncated`, `tac_tcp_answer`,
  `tac_tcp_additional`, `tac_model_answer`, `tac_model_additional`, `tac_tcp_missing`,
  `tac_tcp_extra`, `tac_tcp_size_full_compression`, and the same with `apn_`
- `udp_rcvbuf_errors`, `udp_in_errors`, `listen_overflows`, `listen_drops`,
  `req_q_full_drops`: server-node counter deltas over the whole stair; `client_syn_retrans`,
  `client_retrans_segs`: the client's
- `burst_qps`, `burst_passed`, `burst_max_ms`, `burst_p99_ms`: the highest load that held a
  full burst (the seed's capacity, the function test's load), else the stair capacity's
  failed burst (`burst_passed` false);
  `burst_stair_qps`, `burst_stair_passed`: the burst at the stair capacity;
  `burst_search`: every full burst and probe in run order (`kind` burst|probe, `qps`,
  `seconds`, `passed`, `max_ms`, `p99_ms`, `error_rate`, `reasons`), `burst_probes`,
  `burst_search_resolution`: (lowest failing load above the held one - held) / held
- `function_qps`, `function_passed`, `function_max_ms`, `function_changes`,
  `function_synced`, `function_sync_max_s` (function test only); `function_skipped`: why
  it did not run (the burst at the capacity failed)
- `zone_records`, `server_sysctls` (read back), `client_sysctls` (read back),
  `server_version` (the server's `version.bind CH TXT` answer; null if it gives none)
"""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dns.rdatatype

import zones
from dnslab import cpus, paths
from dnslab.errors import LabError
from dnslab.experiment import Cell, Run, allow_host_sysctls
from dnslab.lab import Lab
from dnslab.render import LabData, ZoneRef
from dnslab.servers import driver, kind_param, merge_options
from dnslab.sysctl import node_sysctls
from dnslab.topology import Topology
from experiments.common import check_choice, write_rows
from experiments.f1_tcp_fallback import stairs
from experiments.f1_tcp_fallback.responses import (
    RESPONSE_COLUMNS,
    response_figures,
    response_rows,
    tcp_share_of,
    truncated_share,
)
from experiments.f1_tcp_fallback.stair_recorder import (
    StepRecorder,
    coarse_and_fine,
    criteria,
    stair_figures,
)
from experiments.f1_tcp_fallback.zone_changes import FUNCTION_COLUMNS, sync_changes
from experiments.generators import perf
from experiments.generators.dnsload import DnsloadGenerator, DnsloadRunner, ensure_dnsload, serving
from zones import model, queries


def mix_for(zone_set: zones.ZoneSet) -> dict[str, float]:
    """The mobile-core mix, with a zero share for record types the zone does not have (the
    `before` profile holds no AAAA records, and the mix generator refuses an empty pool); the
    remaining shares are renormalised by the generator."""
    zone_file = zone_set.zones[0]
    present = {dns.rdatatype.to_text(rds.rdtype)
               for node in model.load_zone(zone_file.path, zone_file.fqdn).nodes.values()
               for rds in node.rdatasets}
    return {rdtype: share if rdtype in present else 0.0
            for rdtype, share in queries.MOBILE_MIX.items()}


def server_options(params: dict[str, Any], server: str, tuned: bool,
                   kind: str | None = None) -> dict[str, Any]:
    """The server's node options: its base options, the UDP payload it may send (in its
    driver's words; `kind` is the node's server kind when the choice is an image variant),
    and, when tuned, its tuned options."""
    drv = driver(kind or server)
    opts: dict[str, Any] = dict(kind_param(params, server) or {})
    payload = int(params["udp_payload"])
    if payload:
        opts = merge_options(drv.payload_options(payload), opts)
    if tuned:
        opts = drv.tuned_options(opts, kind_param(params, server, "tuned") or {})
    return opts


@dataclass(frozen=True)
class MobileNodes:
    """The lab's nodes by role: the client (dnsload and the probes), the primary that feeds
    the secondaries, and the secondaries by server choice (SERVERS=: image kind -> the
    lab's first secondary of that kind; `bind916` is BIND 9.16 from its image (Debian 11),
    which still fills the additional section as the seed's BIND did)."""

    client: str
    primary: str
    servers: dict[str, str]

    @classmethod
    def of(cls, topo: Topology) -> MobileNodes:
        return cls(client=topo.node(role="client").name, primary=topo.node(role="primary").name,
                   servers=topo.names_by_server("secondary"))

    def placement_sets(self, placement: cpus.Placement, node: str) -> dict[str, str]:
        """Node -> cpu-set: the client (load generator) on the generator's CPUs, the server
        under test (`node`) and the primary that feeds it on the server's."""
        return {self.client: placement.generator, node: placement.server,
                self.primary: placement.server}


def largest_model_answer(zone_set: zones.ZoneSet, payload: int) -> int:
    """Bytes of the largest modelled TAC or APN answer (what the seed's BIND sent over TCP)."""
    zone_file = zone_set.zones[0]
    zone = model.load_zone(zone_file.path, zone_file.fqdn)
    extra = zone_set.manifest.get("extra", {})
    names = [*extra.get("tac_names", []), *extra.get("apn_names", [])]
    return max((model.measure(zone, n, "NAPTR", payload).size for n in names), default=0)


def run_ceiling(run: Run, nodes: MobileNodes, records: str, zone_set: zones.ZoneSet,
                qfile: queries.QueryFile, placement: cpus.Placement, host_server: str) -> None:
    """The generator's own ceiling for this mix, in this run: the same query file, EDNS size,
    timeout and pass criteria, from the client node on the generator's CPUs, against
    `dnsload serve` (a canned responder) in a held server node's namespace on the server's
    CPUs. The responder truncates the share of UDP answers the query file's model truncates
    and pads TCP answers to the largest modelled answer, so the generator does at least the
    work of the real cells. A geometric coarse stair (CEILING_START x CEILING_FACTOR^k up to
    CEILING_STOP), then the fine pass. The cell's `stair.csv` is the raw data; its
    `capacity_qps` is the ceiling. The responder runs in the node of `host_server` (the first
    server of the run), with that node's daemon held."""
    params = run.params
    node = nodes.servers[host_server]
    payload = int(params["client_bufsize"])
    truncating = float(qfile.manifest["measured"]["truncated_share"])
    tcp_size = largest_model_answer(zone_set, payload)
    zone = zone_set.zones[0]
    data = LabData(zones=[ZoneRef(zone.fqdn, zone.path)], health_zone=zone.fqdn,
                   node_options={nodes.primary: {"notify": "no"}},
                   sysctls={nodes.client: perf.client_sysctls(params)},
                   extra_binds=[paths.BIN], cpu_sets=nodes.placement_sets(placement, node))
    cell_params = {"server": "ceiling", "records": records, "responder": "dnsload serve",
                   "responder_node": node, "truncating": round(truncating, 4),
                   "tcp_answer_size": tcp_size, "query_file": str(qfile.path),
                   "placement": placement.as_dict()}
    rates = stairs.geometric_rates(float(params["ceiling_start"]), float(params["ceiling_stop"]),
                                 float(params["ceiling_factor"]))
    with run.cell(f"server=ceiling,records={records}", cell_params) as cell:
        lab = cell.up(data, hold=list(nodes.servers.values()))
        budget = (len(rates) + 40) * (float(params["ceiling_step_s"]) + 10) + 60
        serve_options = ["-tc", f"{truncating:.4f}", "-tcp-size", str(tcp_size)]
        with serving(lab, node, budget, cell.path / "dnsload", serve_options):
            cell.monitor([node, nodes.client])
            gen = DnsloadGenerator(server=f"{lab.address(node)}:53",
                                   query_file=str(qfile.path),
                                   binary=str(ensure_dnsload()),
                                   timeout_s=float(params["timeout_s"]), bufsize=payload,
                                   max_outstanding=int(params["max_outstanding"]))
            lab.push(nodes.client, [Path(qfile.path)])  # the generator's host reads it
            runner = DnsloadRunner(lab, nodes.client, cell.path / "dnsload" / "stderr.log")
            recorder = StepRecorder(cell, lab, node, nodes.client, runner=runner,
                                    max_tat_ms=float(params["max_tat_ms"]))
            ceiling_params = {**params, "step_s": params["ceiling_step_s"],
                              "fine_step_s": params["ceiling_step_s"]}
            results = coarse_and_fine(runner, gen, recorder, ceiling_params, rates)
            cell.figures.update(stair_figures(results, recorder.rows))


def run_cell(run: Run, nodes: MobileNodes, server: str, records: str, tuning: str,
             zone_set: zones.ZoneSet, qfile: queries.QueryFile, mix: dict[str, float],
             placement: cpus.Placement) -> None:
    params = run.params
    node = nodes.servers[server]
    tuned = tuning == "tuned"
    profile_name = params["tuned_profile"] if tuned else params["untuned_profile"]
    server_sysctls = node_sysctls(run.profile(profile_name), allow_host_sysctls())
    client_sysctls = perf.client_sysctls(params)
    kind = run.topology.node(node).server
    opts = server_options(params, server, tuned, kind)
    zone = zone_set.zones[0]
    function_on = float(params.get("function_s", 0)) > 0
    cell_id = f"server={server},records={records},tuning={tuning}"
    data = LabData(
        zones=[ZoneRef(zone.fqdn, zone.path)], health_zone=zone.fqdn,
        node_options={nodes.primary: {"notify": "explicit" if function_on else "no"},
                      node: opts},
        sysctls={node: server_sysctls, nodes.client: client_sysctls},
        extra_binds=[paths.BIN], cpu_sets=nodes.placement_sets(placement, node),
    )
    cell_params = {"server": server, "records": records, "tuning": tuning,
                   "profile": profile_name, "server_options": opts,
                   "sysctls": server_sysctls, "client_sysctls": client_sysctls,
                   "query_file": str(qfile.path), "mix": mix,
                   "placement": placement.as_dict()}
    hold = [n for n in nodes.servers.values() if n != node]
    with run.cell(cell_id, cell_params) as cell:
        function_zone = cell.path / "zone" / zone.path.name
        if function_on:
            # the function test edits the zone: the primary serves a copy kept with the cell
            function_zone.parent.mkdir()
            shutil.copy(zone.path, function_zone)
            data.zones = [ZoneRef(zone.fqdn, function_zone)]
        lab = cell.up(data, hold=hold)
        payload = int(params["client_bufsize"])
        cell.figures["zone_records"] = zone_set.manifest["totals"]["records"]
        cell.figures["server_sysctls"] = lab.state.nodes[node].sysctls
        cell.figures["client_sysctls"] = lab.state.nodes[nodes.client].sysctls
        cell.figures["server_version"] = lab.node(node).version(nodes.client)

        rows = response_rows(lab, nodes.client, node, zone_set, server, records, payload,
                             keep=cell.path / "answers")
        write_rows(cell.path / "responses.csv", RESPONSE_COLUMNS, rows)
        cell.figures.update(response_figures(rows))
        (cell.path / "queries.json").write_text(json.dumps(qfile.manifest, indent=1))
        modelled = float(qfile.manifest["measured"]["truncated_share"])
        real = truncated_share(lab, nodes.client, node, qfile.path, payload)
        cell.figures.update({
            "model_truncated_share": round(modelled, 4),
            "model_tcp_share": round(tcp_share_of(modelled), 4),
            "predicted_truncated_share": round(real, 4),
            "predicted_tcp_share": round(tcp_share_of(real), 4),
        })

        cell.monitor([node, nodes.client])
        (cell.path / "dnsload").mkdir(exist_ok=True)
        gen = DnsloadGenerator(server=f"{lab.address(node)}:53",
                                    query_file=str(qfile.path), binary=str(ensure_dnsload()),
                                    timeout_s=float(params["timeout_s"]), bufsize=payload,
                                    max_outstanding=int(params["max_outstanding"]))
        lab.push(nodes.client, [Path(qfile.path)])  # the generator's host reads it
        runner = DnsloadRunner(lab, nodes.client, cell.path / "dnsload" / "stderr.log")
        recorder = StepRecorder(cell, lab, node, nodes.client, runner=runner,
                                max_tat_ms=float(params["max_tat_ms"]))
        results = coarse_and_fine(runner, gen, recorder, params,
                                  stairs.stair_rates(float(params["stair_start"]),
                                                   float(params["stair_stop"]),
                                                   float(params["stair_step"])))
        cell.figures.update(stair_figures(results, recorder.rows))
        cap = cell.figures["capacity_qps"]
        load = cap  # the function test's load: the stair capacity when no burst runs
        if float(params["burst_s"]) > 0 and cap:
            cell.figures.update(run_burst(cell, lab, node, nodes.client, runner, gen, cap))
            load = cell.figures["burst_qps"] if cell.figures["burst_passed"] else None
        # the seed ran the function test at the load that held stair *and* burst: when no
        # load held (the burst and the search below it failed) it is skipped (and said)
        if float(params.get("function_s", 0)) > 0 and cap and load is None:
            cell.figures["function_skipped"] = (
                f"the {cap:,.0f} qps burst failed and the search below it found no load that "
                "held: the function test runs only at a load that held stair and burst")
        elif float(params.get("function_s", 0)) > 0 and load:
            step, changes = stairs.function(
                runner, gen, load, float(params["function_s"]),
                lambda: sync_changes(lab, node, function_zone, zone.fqdn,
                                     int(params["function_changes"]),
                                     float(params["function_timeout_s"]),
                                     primary=nodes.primary, client=nodes.client),
                criteria(params))
            StepRecorder(cell, lab, node, nodes.client, name="function-load", runner=runner,
                         max_tat_ms=float(params["max_tat_ms"]))(step)
            write_rows(cell.path / "function.csv", FUNCTION_COLUMNS, changes)
            synced = [c["sync_s"] for c in changes if c["ok"]]
            cell.figures.update({
                "function_qps": load, "function_passed": step.passed,
                "function_max_ms": step.measure.max_ms, "function_changes": len(changes),
                "function_synced": len(synced),
                "function_sync_max_s": max(synced) if synced else None})
        if not lab.alive(node):
            raise LabError(f"{node} exited during the load", hint=f"its log: {lab.log(node)}")


def run_burst(cell: Cell, lab: Lab, node: str, client: str, runner: DnsloadRunner,
              gen: DnsloadGenerator, capacity: float) -> dict[str, Any]:
    """The seed's burst (BURST_S) at the stair capacity and, when it fails, the search below
    it for the load that holds it (`stairs.held_burst`: up to BURST_SEARCH_STEPS candidate
    loads, down by DESCENT_FACTOR then bisected to FINE_SHARE, each a probe burst of
    BURST_PROBE_S and, when that holds, the full burst). Full bursts go to `burst.csv`, probes
    to `burst-probe.csv` (phase `probe`); the figures: the highest load that held a full burst
    (`burst_qps`, `burst_passed` true) or, when none did, the stair capacity's failed burst
    (`burst_passed` false); the stair capacity's own burst beside it (`burst_stair_qps`,
    `burst_stair_passed`) and every step in run order (`burst_search`)."""
    params = cell.run.params
    max_tat = float(params["max_tat_ms"])
    recorders = {kind: StepRecorder(cell, lab, node, client, name=name, runner=runner,
                                    max_tat_ms=max_tat)
                 for kind, name in (("burst", "burst"), ("probe", "burst-probe"))}
    recorders["burst"].phase, recorders["probe"].phase = "burst", "probe"
    found = stairs.held_burst(
        runner, gen, capacity, float(params["burst_s"]), float(params["burst_probe_s"]),
        int(params["burst_search_steps"]), criteria(params),
        factor=float(params.get("descent_factor") or 0.8),
        resolution=float(params["fine_share"]), floor=float(params.get("stair_floor") or 1),
        before_step=lambda kind: recorders[kind].mark(),
        on_step=lambda kind, res: recorders[kind](res))
    held = found.held_qps
    shown = next(r for r in found.bursts if r.target_qps == held) if held is not None \
        else found.bursts[0]
    resolution = found.resolution()
    return {"burst_qps": shown.target_qps, "burst_passed": shown.passed,
            "burst_max_ms": shown.measure.max_ms, "burst_p99_ms": shown.measure.p99_ms,
            "burst_stair_qps": capacity, "burst_stair_passed": found.bursts[0].passed,
            "burst_search": found.steps(), "burst_probes": len(found.probes),
            "burst_search_resolution": None if resolution is None else round(resolution, 4)}


def usable_servers(run: Run, nodes: MobileNodes) -> list[str]:
    """SERVERS, checked; a version other than its kind's default (bind@9.16: another suite's
    image or root file system) is dropped with a note when it cannot be had here and SERVERS
    is the experiment's default, and is an error when asked for by name."""
    params = run.params
    check_choice("servers", params["servers"], nodes.servers)
    servers = list(params["servers"])
    if servers == list(run.spec.params["servers"]):
        for server in [s for s in servers if run.topology.node(nodes.servers[s]).versioned]:
            try:
                run.prepare_nodes([nodes.servers[server]])
            except LabError as exc:
                servers.remove(server)
                run.writer.merge("servers_skipped", {server: exc.message})
                print(f"tcp-fallback: {server} skipped ({exc.message})", file=sys.stderr)
    run.prepare_nodes([nodes.servers[s] for s in servers])
    return servers


def tcp_fallback(run: Run) -> None:
    """tcp-fallback: per record set, the generator's ceiling; then, server by server, one
    stair cell per record set x tuning; the load generator and the server on disjoint CPUs
    unless SHARE_CORES. A server's cells run one after another, so the ratios its claims
    take (before/after, untuned/tuned) come from one stretch of time, also when a long run
    is resumed (RESUME=) on another day: finished cells are kept, never run again."""
    params = run.params
    check_choice("records", params["records"], zones.epc.PROFILES)
    check_choice("tunings", params["tunings"], ("untuned", "tuned"))
    nodes = MobileNodes.of(run.topology)
    servers = usable_servers(run, nodes)
    placement = run.placement()
    ensure_dnsload()
    record_sets = list(params["records"])
    stair_cells = len(record_sets) * len(servers) * len(params["tunings"])
    ceiling_cells = len(record_sets) if params["ceiling"] else 0
    # about 16 stair steps (coarse, failing, fine; DESCENT_BELOW more after a descent), the
    # burst (and, when it fails, the search below it: about half its candidates, each a
    # probe and a full burst) and the function test; a ceiling's geometric stair ~25 steps
    burst_s = float(params["burst_s"])
    search_s = (float(params["burst_search_steps"]) / 2
                * (float(params["burst_probe_s"]) + burst_s) if burst_s > 0 else 0.0)
    stair_s = float(params["step_s"]) * (16 + int(params.get("descent_below") or 0)) \
        + burst_s + search_s \
        + float(params.get("function_s", 0)) + 60
    ceiling_s = float(params["ceiling_step_s"]) * 25 + 60
    run.plan(stair_cells + ceiling_cells,
             per_cell_s=(stair_cells * stair_s + ceiling_cells * ceiling_s)
             / (stair_cells + ceiling_cells),
             cell_estimate=lambda cell_id: ceiling_s if cell_id.startswith("server=ceiling")
             else stair_s)
    inputs: dict[str, tuple[zones.ZoneSet, queries.QueryFile, dict[str, float]]] = {}
    for records in record_sets:
        zone_set = zones.ensure("3gpp", {"profile": records, **(params.get("zone_params") or {})},
                                seed=params["seed"])
        mix = mix_for(zone_set)
        qfile = queries.mobile_core(zone_set, count=int(params["queries"]),
                                    truncating=float(params["truncating"]),
                                    seed=params["seed"], payload=int(params["client_bufsize"]),
                                    mix=mix)
        inputs[records] = (zone_set, qfile, mix)
        if params["ceiling"] and run.finished(f"server=ceiling,records={records}") is None:
            run_ceiling(run, nodes, records, zone_set, qfile, placement, servers[0])
    for server in servers:
        for records in record_sets:
            zone_set, qfile, mix = inputs[records]
            for tuning in params["tunings"]:
                if run.finished(f"server={server},records={records},tuning={tuning}") is None:
                    run_cell(run, nodes, server, records, tuning, zone_set, qfile, mix,
                             placement)
