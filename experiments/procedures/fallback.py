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
pass, then a fine pass around the knee), then (optional) a burst and the function test at
the capacity.

Placement: the client (dnsload) runs on the generator's CPUs, the server under test and the
primary on the server's (`Run.placement`: disjoint unless SHARE_CORES=1). Before the server
cells of a record set, the `server=ceiling,records=<r>` cell measures the generator's own
ceiling on that placement: the same query file, criteria and client against `dnsload serve`
in the (held) sec-bind node, truncating the query file's modelled share and padding TCP
answers to the largest modelled answer (`run_ceiling`); its params say `server: ceiling`
and hold no `tuning`, its `stair.csv` has the usual columns and `capacity_qps` is the ceiling.

Files per cell (`cells/<cell-id>/`):
- `responses.csv`: `server, records, kind (tac|apn), qname, source (udp|tcp|model), size,
  answer, authority, additional (OPT included, as dig counts), truncated, rcode`
- `stair.csv`: the columns of `experiments/load.py` (`step, offered_qps, answered_qps, udp,
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
- `burst.csv` and `function-load.csv` (same columns, one row each) when BURST_S /
  FUNCTION_S > 0 and a step passed; `function.csv` the function test's changes
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
  `tac_tcp_additional`, `tac_model_answer`, `tac_model_additional`, and the same with `apn_`
- `udp_rcvbuf_errors`, `udp_in_errors`, `listen_overflows`, `listen_drops`,
  `req_q_full_drops`: server-node counter deltas over the whole stair; `client_syn_retrans`,
  `client_retrans_segs`: the client's
- `burst_qps`, `burst_passed`, `burst_max_ms`, `burst_p99_ms` (burst only)
- `zone_records`, `server_sysctls` (read back), `client_sysctls` (read back),
  `server_version` (the server's `version.bind CH TXT` answer; null if it gives none)

`cache_curve` (experiment `tcp-fallback-cache`): `experiments/cache_model.py`'s amplification
curve over record counts around an MME cache size, one cell per lookup distribution, written
to `cache.csv`; figures `cache_size`, `records`, `amplification`, `onset_records` (smallest
record count whose amplification exceeds 1 + ONSET_MARGIN), `max_amplification`.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dns.exception
import dns.flags
import dns.message
import dns.query
import dns.rcode
import dns.rdatatype

import zones
from dnslab import cpus, paths, probe
from dnslab.errors import LabError
from dnslab.experiment import Cell, Run, allow_host_sysctls
from dnslab.lab import Lab
from dnslab.monitor import mean_cores, mean_cpu, sample_counters
from dnslab.netns import in_netns
from dnslab.probe import check_lab_address
from dnslab.render import LabData, ZoneRef
from dnslab.sysctl import node_sysctls
from experiments import cache_model, load
from zones import model, queries

# server choice -> the mobile lab's node; bind916 is BIND 9.16 from its image (Debian 11),
# which still fills the additional section as the seed's BIND did
SERVER_NODES = {"bind": "sec-bind", "knot": "sec-knot", "nsd": "sec-nsd",
                "bind916": "sec-bind916"}
COUNTERS = ["udp_rcvbuf_errors", "udp_in_errors", "listen_overflows", "listen_drops"]
# counters read in the client's namespace, per step: SYNs it had to send again (each one a
# connection that waited 1 s more) and its retransmitted segments
CLIENT_COUNTERS = {"client_syn_retrans": "syn_retrans", "client_retrans_segs": "retrans_segs"}
STAIR_COLUMNS = [*load.CSV_COLUMNS, "truncated_per_s", "throttled", "net_errors", *COUNTERS,
                 "server_cpu_pct", "t_start", "t_end",
                 "phase", "req_q_full_drops", *CLIENT_COUNTERS, "generator_cpu_pct",
                 "server_cores_busy_pct", "generator_cores_busy_pct", "server_cpus",
                 "generator_cpus", "note"]
RESPONSE_COLUMNS = ["server", "records", "kind", "qname", "source", "size", "answer",
                    "authority", "additional", "truncated", "rcode"]


# --- what the servers send ------------------------------------------------------------------

@dataclass
class Response:
    """One answer as received: wire size, dig-style section counts, TC flag."""

    size: int
    answer: int
    authority: int
    additional: int  # OPT included, as dig counts it
    truncated: bool
    rcode: str


def _read_exact(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise OSError("connection closed before the whole answer arrived")
        data += chunk
    return data


def ask(server: str, name: str, rdtype: str = "NAPTR", tcp: bool = False,
        payload: int = 4096, timeout: float = 2.0, port: int = 53) -> Response:
    """One non-recursive query with EDNS `payload` from the calling thread's namespace; the
    size is the length of the wire message as received (not re-encoded)."""
    check_lab_address(server)
    query = dns.message.make_query(name, rdtype, use_edns=0, payload=payload)
    query.flags &= ~dns.flags.RD
    wire = query.to_wire()
    if tcp:
        with socket.create_connection((server, port), timeout=timeout) as sock:
            sock.sendall(struct.pack("!H", len(wire)) + wire)
            (length,) = struct.unpack("!H", _read_exact(sock, 2))
            data = _read_exact(sock, length)
    else:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.settimeout(timeout)
            sock.sendto(wire, (server, port))
            while True:
                data = sock.recv(65535)
                if data[:2] == wire[:2]:
                    break
    reply = dns.message.from_wire(data, ignore_trailing=True)
    return Response(
        size=len(data),
        answer=sum(len(r) for r in reply.answer),
        authority=sum(len(r) for r in reply.authority),
        additional=sum(len(r) for r in reply.additional) + (1 if reply.edns >= 0 else 0),
        truncated=bool(reply.flags & dns.flags.TC),
        rcode=dns.rcode.to_text(reply.rcode()),
    )


def response_rows(lab: Lab, node: str, zone_set: zones.ZoneSet, server: str, records: str,
                  payload: int) -> list[dict[str, Any]]:
    """Every TAC and APN name of the zone set: real answers (UDP, TCP) and the model."""
    zone_file = zone_set.zones[0]
    zone = model.load_zone(zone_file.path, zone_file.fqdn)
    extra = zone_set.manifest.get("extra", {})
    names = [("tac", n) for n in extra.get("tac_names", [])] + \
            [("apn", n) for n in extra.get("apn_names", [])]
    if not names:
        raise LabError(f"zone set {zone_set.set_id} lists no TAC or APN names",
                       hint="regenerate it with the current zones package (3gpp generator)")
    target = lab.address(node)

    def probe_all() -> list[dict[str, Any]]:
        rows = []
        for kind, name in names:
            base = {"server": server, "records": records, "kind": kind, "qname": name}
            for source in ("udp", "tcp"):
                r = ask(target, name, "NAPTR", tcp=source == "tcp", payload=payload)
                rows.append({**base, "source": source, **r.__dict__})
            m = model.measure(zone, name, "NAPTR", payload)
            rows.append({**base, "source": "model", "size": m.size, "answer": m.answer,
                         "authority": m.authority, "additional": m.additional,
                         "truncated": m.truncated, "rcode": m.rcode})
        return rows

    return in_netns(lab.netns("client"), probe_all)


def server_version(lab: Lab, node: str) -> str | None:
    """What the server under test says it is (`version.bind CH TXT`), or None if it will not
    say: it tells a BIND 9.16 image node from the host's BIND 9.18 in the results."""
    target = lab.address(node)
    check_lab_address(target)

    def query() -> str | None:
        message = dns.message.make_query("version.bind", "TXT", "CH")
        try:
            reply = dns.query.udp(message, target, timeout=2)
        except (OSError, dns.exception.DNSException):
            return None
        texts = [b"".join(r.strings).decode(errors="replace") for rrset in reply.answer
                 for r in rrset]
        return texts[0] if texts else None

    return in_netns(lab.netns("client"), query)


def response_figures(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Sizes of the largest TAC and APN answer (by modelled size), per source."""
    figures: dict[str, Any] = {}
    for kind in ("tac", "apn"):
        models = [r for r in rows if r["kind"] == kind and r["source"] == "model"]
        if not models:
            continue
        name = max(models, key=lambda r: r["size"])["qname"]
        for r in rows:
            if r["kind"] == kind and r["qname"] == name:
                src = r["source"]
                figures[f"{kind}_{src}_size"] = r["size"]
                if src == "udp":
                    figures[f"{kind}_udp_truncated"] = r["truncated"]
                else:
                    figures[f"{kind}_{src}_answer"] = r["answer"]
                    figures[f"{kind}_{src}_additional"] = r["additional"]
        figures[f"{kind}_name"] = name
    return figures


def tcp_share_of(truncated: float) -> float:
    """TCP share of all queries a server receives (UDP + TCP retries, the definition of
    experiments/load.py) when a fraction `truncated` of the UDP queries is truncated."""
    return truncated / (1 + truncated)


def truncated_share(lab: Lab, node: str, query_file: Path, payload: int) -> float:
    """Share of the file's (UDP) queries the server truncates: each distinct query asked
    once, weighted by how often the file holds it."""
    counts: Counter[tuple[str, str]] = Counter()
    with open(query_file) as handle:
        for line in handle:
            parts = line.split()
            if len(parts) >= 2 and not parts[0].startswith("#"):
                counts[(parts[0], parts[1])] += 1
    target = lab.address(node)

    def probe_all() -> dict[tuple[str, str], bool]:
        return {key: ask(target, key[0], key[1], payload=payload).truncated for key in counts}

    truncated = in_netns(lab.netns("client"), probe_all)
    total = sum(counts.values())
    return sum(n for key, n in counts.items() if truncated[key]) / total if total else 0.0


def write_rows(path: Path, columns: list[str], rows: list[dict[str, Any]]) -> None:
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


# --- query file -----------------------------------------------------------------------------

@contextmanager
def _mix_without_missing_types(zone_set: zones.ZoneSet) -> Iterator[dict[str, float]]:
    """The mobile-core mix, with a zero share for record types the zone does not have (the
    `before` profile holds no AAAA records, and the mix generator refuses an empty pool); the
    remaining shares are renormalised by the generator. Yields the mix as used."""
    zone_file = zone_set.zones[0]
    present = {dns.rdatatype.to_text(rds.rdtype)
               for node in model.load_zone(zone_file.path, zone_file.fqdn).nodes.values()
               for rds in node.rdatasets}
    saved = dict(queries.MOBILE_MIX)
    for rdtype in saved:
        if rdtype not in present:
            queries.MOBILE_MIX[rdtype] = 0.0
    try:
        yield dict(queries.MOBILE_MIX)
    finally:
        queries.MOBILE_MIX.clear()
        queries.MOBILE_MIX.update(saved)


# --- the stair ------------------------------------------------------------------------------

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


def _counters(lab: Lab, node: str) -> dict[str, int]:
    return in_netns(lab.netns(node), sample_counters)


def step_note(row: dict[str, Any], max_tat_ms: float) -> str:
    """What a step's TCP counters say about its worst TAT: a SYN the client had to send
    again waited at least 1 s (the kernel's first SYN retransmission timer), so a step that
    fails on worst TAT with retried SYNs and a p99 under the limit failed on them."""
    retried = int(row.get("client_syn_retrans") or 0)
    if not retried:
        return ""
    drops = int(row.get("listen_overflows") or 0) + int(row.get("req_q_full_drops") or 0)
    note = (f"{retried} SYN retransmission(s) by the client, {drops} listen/SYN-queue "
            "drop(s) at the server")
    if (float(row["max_ms"]) > max_tat_ms >= float(row["p99_ms"])
            and float(row["max_ms"]) >= 1000.0):
        note = f"worst TAT {float(row['max_ms']):.0f} ms is a retried SYN: " + note
    return note


class StepRecorder:
    """Turns each judged step into a `stair.csv` row with the server's and the client's
    counter deltas, the generator's CPU time and the busy share of each side's cores."""

    def __init__(self, cell: Cell, lab: Lab, node: str, name: str = "stair",
                 runner: DnsloadRunner | None = None, max_tat_ms: float = 1000.0):
        self.cell, self.lab, self.node, self.name = cell, lab, node, name
        self.runner, self.max_tat_ms = runner, max_tat_ms
        self.phase = "coarse"
        assert cell.monitors is not None
        self.t0 = cell.monitors.t0
        self.rows: list[dict[str, Any]] = []
        self.raw_dir = cell.path / "dnsload"
        self.raw_dir.mkdir(exist_ok=True)
        self.server_cpus = lab.state.nodes[node].cpu_set or "any"
        self.generator_cpus = lab.state.nodes["client"].cpu_set or "any"
        self.mark()

    def mark(self) -> None:
        self.before = _counters(self.lab, self.node)
        self.client_before = _counters(self.lab, "client")
        self.started = time.monotonic() - self.t0

    def __call__(self, result: load.StepResult) -> None:
        after = _counters(self.lab, self.node)
        client_after = _counters(self.lab, "client")
        ended = time.monotonic() - self.t0
        m = result.measure
        row = result.row()
        row.update({k: after[k] - self.before[k] for k in [*COUNTERS, "req_q_full_drops"]})
        row.update({column: client_after[key] - self.client_before[key]
                    for column, key in CLIENT_COUNTERS.items()})
        cores_csv = self.cell.path / "monitor" / "cores.csv"
        row.update({
            "truncated_per_s": round(m.truncated / m.seconds, 1) if m.seconds else None,
            "throttled": m.throttled, "net_errors": m.net_errors,
            "server_cpu_pct": mean_cpu(self.cell.path / "monitor" / f"{self.node}.csv",
                                        self.started, ended),
            "t_start": round(self.started, 3), "t_end": round(ended, 3),
            "phase": self.phase,
            "generator_cpu_pct": self.runner.cpu_pct if self.runner else None,
            "server_cores_busy_pct": mean_cores(cores_csv, self.server_cpus, self.started,
                                                 ended),
            "generator_cores_busy_pct": mean_cores(cores_csv, self.generator_cpus,
                                                    self.started, ended),
            "server_cpus": self.server_cpus, "generator_cpus": self.generator_cpus,
        })
        row["note"] = step_note(row, self.max_tat_ms)
        self.rows.append(row)
        (self.raw_dir / f"{self.name}-{result.step:02d}.jsonl").write_text(result.raw)
        write_rows(self.cell.path / f"{self.name}.csv", STAIR_COLUMNS, self.rows)
        verdict = "pass" if result.passed else "FAIL " + "; ".join(result.reasons)
        print(f"  {self.cell.cell_id} {self.name} {self.phase} step {result.step}: "
              f"{result.target_qps:.0f} qps offered {m.offered_qps:.0f} answered "
              f"{m.answered_qps:.0f} tcp {result.tcp_share:.1%} p99 {m.p99_ms:.1f} ms "
              f"max {m.max_ms:.0f} ms: {verdict}"
              + (f" ({row['note']})" if row["note"] else ""), file=sys.stderr)
        self.mark()


def stair_figures(results: list[load.StepResult], rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The figures of a stair: capacity, and the measurements at the capacity step."""
    cap = load.capacity(results)
    at = next((i for i, r in enumerate(results) if r.passed and r.target_qps == cap), None)
    ref = at if at is not None else 0
    queries_all = sum(r.measure.sent + r.measure.tcp for r in results)
    figures: dict[str, Any] = {
        "capacity_qps": cap,
        "capacity_step": results[at].step if at is not None else None,
        "steps_run": len(results),
        "tcp_share": round(results[ref].tcp_share, 4) if results else None,
        "tcp_share_overall": round(sum(r.measure.tcp for r in results) / queries_all, 4)
        if queries_all else None,
        "truncated_per_s": rows[ref]["truncated_per_s"] if rows else None,
        "max_latency_ms_at_capacity": results[at].measure.max_ms if at is not None else None,
        "p99_ms_at_capacity": results[at].measure.p99_ms if at is not None else None,
        "answered_qps_at_capacity": round(results[at].measure.answered_qps, 1)
        if at is not None else None,
        "server_cpu_pct_at_capacity": rows[at]["server_cpu_pct"] if at is not None else None,
        "max_ms_by_qps": {f"{r.target_qps:g}": r.measure.max_ms for r in results},
        "p99_ms_by_qps": {f"{r.target_qps:g}": r.measure.p99_ms for r in results},
    }
    above = [r for r in results if not r.passed and (cap is None or r.target_qps > cap)]
    figures["first_fail_qps"] = above[0].target_qps if above else None
    figures["first_fail_reasons"] = "; ".join(above[0].reasons) if above else None
    for key in [*COUNTERS, "req_q_full_drops", *CLIENT_COUNTERS]:
        figures[key] = sum(int(row.get(key) or 0) for row in rows)
    return figures


# --- one cell -------------------------------------------------------------------------------

def server_options(params: dict[str, Any], server: str, tuned: bool) -> dict[str, Any]:
    """The server's node options: its base options, the UDP payload it may send, and, when
    tuned, its tuned options."""
    opts: dict[str, Any] = dict(params.get(f"{server}_options") or {})
    payload = int(params["udp_payload"])
    if payload:
        if server in ("bind", "bind916"):
            opts.setdefault("max-udp-size", payload)
            opts.setdefault("edns-udp-size", payload)
        elif server == "knot":
            opts.setdefault("server", {})
            opts["server"] = {"udp-max-payload": payload, **opts["server"]}
        elif server == "nsd":
            opts.setdefault("server", {})
            opts["server"] = {"ipv4-edns-size": payload, **opts["server"]}
    if tuned:
        for key, value in (params.get(f"{server}_tuned") or {}).items():
            if key == "server" and isinstance(value, dict):
                opts["server"] = {**opts.get("server", {}), **value}
            else:
                opts[key] = value
    return opts


class DnsloadRunner:
    """Runs dnsload in the client node (on the client's CPUs); its stderr goes to `log`, and
    its own CPU time (from wait4's rusage) and wall time are kept for the step row. A
    generator that dies (seen once on a shared, loaded host: killed without a message) is run
    again once, and the failure is kept in the log; a second failure ends the cell."""

    def __init__(self, lab: Lab, log: Path, attempts: int = 2, node: str = "client"):
        self.lab, self.log, self.attempts, self.node = lab, log, attempts, node
        self.cpu_s: float | None = None
        self.wall_s: float | None = None

    def __call__(self, argv: list[str]) -> str:
        status, err = 0, ""
        for attempt in range(self.attempts):
            started = time.monotonic()
            with tempfile.TemporaryFile("w+") as errfile:
                proc = self.lab.popen(self.node, argv, stdout=subprocess.PIPE, stderr=errfile,
                                      text=True)
                out = proc.stdout.read() if proc.stdout else ""
                # wait4, not wait: its rusage is the generator's own CPU time
                _, wait_status, usage = os.wait4(proc.pid, 0)
                proc.returncode = status = os.waitstatus_to_exitcode(wait_status)
                errfile.seek(0)
                err = errfile.read()
            self.wall_s = time.monotonic() - started
            self.cpu_s = usage.ru_utime + usage.ru_stime
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


def criteria(params: dict[str, Any]) -> load.Criteria:
    return load.Criteria(max_error_rate=float(params["max_error_rate"]),
                         max_tat_ms=float(params["max_tat_ms"]), tat_stat=params["tat_stat"],
                         warmup_s=float(params["warmup_s"]))


def coarse_and_fine(runner: load.Runner, gen: load.LoadGenerator, recorder: StepRecorder,
                    params: dict[str, Any], rates: list[float]) -> list[load.StepResult]:
    """The stair as the seed ran it, made finer around the knee: the coarse rates (ending
    after STOP_AFTER_FAILURES failing steps in a row), then a fine pass from the coarse
    capacity up to the first failing rate, in steps of at most FINE_SHARE of that capacity
    (FINE_STEP_S each). Step numbers run on; `stair.csv`'s `phase` says which pass."""
    stop_after = int(params["stop_after_failures"]) or None
    recorder.phase = "coarse"
    results = load.steps(runner, gen, rates, float(params["step_s"]), criteria(params),
                         stop_after_failures=stop_after, on_step=recorder)
    fine = load.fine_rates(results, float(params["fine_share"]))
    if fine:
        recorder.phase = "fine"
        results += load.steps(runner, gen, fine,
                              float(params["fine_step_s"] or params["step_s"]),
                              criteria(params), stop_after_failures=stop_after,
                              on_step=recorder, first_step=len(results) + 1)
    return results


def placement_sets(placement: cpus.Placement, node: str) -> dict[str, str]:
    """Node -> cpu-set: the client (load generator) on the generator's CPUs, the server under
    test and the primary that feeds it on the server's."""
    return {"client": placement.generator, node: placement.server,
            "primary": placement.server}


def largest_model_answer(zone_set: zones.ZoneSet, payload: int) -> int:
    """Bytes of the largest modelled TAC or APN answer (what the seed's BIND sent over TCP)."""
    zone_file = zone_set.zones[0]
    zone = model.load_zone(zone_file.path, zone_file.fqdn)
    extra = zone_set.manifest.get("extra", {})
    names = [*extra.get("tac_names", []), *extra.get("apn_names", [])]
    return max((model.measure(zone, n, "NAPTR", payload).size for n in names), default=0)


def run_ceiling(run: Run, records: str, zone_set: zones.ZoneSet, qfile: queries.QueryFile,
                placement: cpus.Placement) -> None:
    """The generator's own ceiling for this mix, in this run: the same query file, EDNS size,
    timeout and pass criteria, from the client node on the generator's CPUs, against
    `dnsload serve` (a canned responder) in a held server node's namespace on the server's
    CPUs. The responder truncates the share of UDP answers the query file's model truncates
    and pads TCP answers to the largest modelled answer, so the generator does at least the
    work of the real cells. A geometric coarse stair (CEILING_START x CEILING_FACTOR^k up to
    CEILING_STOP), then the fine pass. The cell's `stair.csv` is the raw data; its
    `capacity_qps` is the ceiling."""
    params = run.params
    node = SERVER_NODES["bind"]
    payload = int(params["client_bufsize"])
    truncating = float(qfile.manifest["measured"]["truncated_share"])
    tcp_size = largest_model_answer(zone_set, payload)
    zone = zone_set.zones[0]
    data = LabData(zones=[ZoneRef(zone.fqdn, zone.path)], health_zone=zone.fqdn,
                   node_options={"primary": {"notify": "no"}},
                   sysctls={"client": {k: str(v) for k, v in
                                       (params.get("client_sysctls") or {}).items()}},
                   extra_binds=[paths.BIN], cpu_sets=placement_sets(placement, node))
    cell_params = {"server": "ceiling", "records": records, "responder": "dnsload serve",
                   "responder_node": node, "truncating": round(truncating, 4),
                   "tcp_answer_size": tcp_size, "query_file": str(qfile.path),
                   "placement": placement.as_dict()}
    rates = load.geometric_rates(float(params["ceiling_start"]), float(params["ceiling_stop"]),
                                 float(params["ceiling_factor"]))
    with run.cell(f"server=ceiling,records={records}", cell_params) as cell:
        lab = cell.up(data, hold=list(SERVER_NODES.values()))
        budget = (len(rates) + 40) * (float(params["ceiling_step_s"]) + 10) + 60
        serve = lab.popen(node, [str(ensure_dnsload()), "serve", "-a", f"{lab.address(node)}:53",
                                 "-l", f"{budget:g}", "-tc", f"{truncating:.4f}",
                                 "-tcp-size", str(tcp_size)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            ready = serve.stdout.readline() if serve.stdout else ""
            if '"serve_ready"' not in ready:
                raise LabError("dnsload serve did not start in the server node: "
                               + (serve.stderr.read() if serve.stderr else ""),
                               hint="run build/bin/dnsload serve by hand in that node")
            cell.monitor([node, "client"])
            (cell.path / "dnsload").mkdir(exist_ok=True)
            gen = load.DnsloadGenerator(server=f"{lab.address(node)}:53",
                                        query_file=str(qfile.path),
                                        binary=str(ensure_dnsload()),
                                        timeout_s=float(params["timeout_s"]), bufsize=payload,
                                        max_outstanding=int(params["max_outstanding"]))
            runner = DnsloadRunner(lab, cell.path / "dnsload" / "stderr.log")
            recorder = StepRecorder(cell, lab, node, runner=runner,
                                    max_tat_ms=float(params["max_tat_ms"]))
            ceiling_params = {**params, "step_s": params["ceiling_step_s"],
                              "fine_step_s": params["ceiling_step_s"]}
            results = coarse_and_fine(runner, gen, recorder, ceiling_params, rates)
            cell.figures.update(stair_figures(results, recorder.rows))
        finally:
            serve.terminate()
            out, _ = serve.communicate(timeout=30)
            (cell.path / "dnsload" / "serve.jsonl").write_text(ready + (out or ""))


def run_cell(run: Run, server: str, records: str, tuning: str, zone_set: zones.ZoneSet,
             qfile: queries.QueryFile, mix: dict[str, float],
             placement: cpus.Placement) -> None:
    params = run.params
    node = SERVER_NODES[server]
    tuned = tuning == "tuned"
    profile_name = params["tuned_profile"] if tuned else params["untuned_profile"]
    server_sysctls = node_sysctls(run.profile(profile_name), allow_host_sysctls())
    client_sysctls = {k: str(v) for k, v in (params.get("client_sysctls") or {}).items()}
    opts = server_options(params, server, tuned)
    zone = zone_set.zones[0]
    function_on = float(params.get("function_s", 0)) > 0
    cell_id = f"server={server},records={records},tuning={tuning}"
    data = LabData(
        zones=[ZoneRef(zone.fqdn, zone.path)], health_zone=zone.fqdn,
        node_options={"primary": {"notify": "explicit" if function_on else "no"}, node: opts},
        sysctls={node: server_sysctls, "client": client_sysctls},
        extra_binds=[paths.BIN], cpu_sets=placement_sets(placement, node),
    )
    cell_params = {"server": server, "records": records, "tuning": tuning,
                   "profile": profile_name, "server_options": opts,
                   "sysctls": server_sysctls, "client_sysctls": client_sysctls,
                   "query_file": str(qfile.path), "mix": mix,
                   "placement": placement.as_dict()}
    hold = [n for n in SERVER_NODES.values() if n != node]
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
        cell.figures["client_sysctls"] = lab.state.nodes["client"].sysctls
        cell.figures["server_version"] = server_version(lab, node)

        rows = response_rows(lab, node, zone_set, server, records, payload)
        write_rows(cell.path / "responses.csv", RESPONSE_COLUMNS, rows)
        cell.figures.update(response_figures(rows))
        (cell.path / "queries.json").write_text(json.dumps(qfile.manifest, indent=1))
        modelled = float(qfile.manifest["measured"]["truncated_share"])
        real = truncated_share(lab, node, qfile.path, payload)
        cell.figures.update({
            "model_truncated_share": round(modelled, 4),
            "model_tcp_share": round(tcp_share_of(modelled), 4),
            "predicted_truncated_share": round(real, 4),
            "predicted_tcp_share": round(tcp_share_of(real), 4),
        })

        cell.monitor([node, "client"])
        (cell.path / "dnsload").mkdir(exist_ok=True)
        gen = load.DnsloadGenerator(server=f"{lab.address(node)}:53",
                                    query_file=str(qfile.path), binary=str(ensure_dnsload()),
                                    timeout_s=float(params["timeout_s"]), bufsize=payload,
                                    max_outstanding=int(params["max_outstanding"]))
        runner = DnsloadRunner(lab, cell.path / "dnsload" / "stderr.log")
        recorder = StepRecorder(cell, lab, node, runner=runner,
                                max_tat_ms=float(params["max_tat_ms"]))
        results = coarse_and_fine(runner, gen, recorder, params,
                                  load.stair_rates(float(params["stair_start"]),
                                                   float(params["stair_stop"]),
                                                   float(params["stair_step"])))
        cell.figures.update(stair_figures(results, recorder.rows))
        cap = cell.figures["capacity_qps"]
        if float(params["burst_s"]) > 0 and cap:
            bursts = StepRecorder(cell, lab, node, name="burst", runner=runner,
                                  max_tat_ms=float(params["max_tat_ms"]))
            res = load.burst(runner, gen, cap, float(params["burst_s"]), criteria(params))
            bursts(res)
            cell.figures.update({"burst_qps": cap, "burst_passed": res.passed,
                                 "burst_max_ms": res.measure.max_ms,
                                 "burst_p99_ms": res.measure.p99_ms})
        if float(params.get("function_s", 0)) > 0 and cap:
            step, changes = load.function(
                runner, gen, cap, float(params["function_s"]),
                lambda: sync_changes(lab, node, function_zone, zone.fqdn,
                                     int(params["function_changes"]),
                                     float(params["function_timeout_s"])),
                criteria(params))
            StepRecorder(cell, lab, node, name="function-load", runner=runner,
                         max_tat_ms=float(params["max_tat_ms"]))(step)
            write_rows(cell.path / "function.csv", FUNCTION_COLUMNS, changes)
            synced = [c["sync_s"] for c in changes if c["ok"]]
            cell.figures.update({
                "function_qps": cap, "function_passed": step.passed,
                "function_max_ms": step.measure.max_ms, "function_changes": len(changes),
                "function_synced": len(synced),
                "function_sync_max_s": max(synced) if synced else None})
        if not lab.alive(node):
            raise LabError(f"{node} exited during the load", hint=f"its log: {lab.log(node)}")


FUNCTION_COLUMNS = ["change", "action", "name", "serial", "sync_s", "ok"]
SOA_SERIAL = re.compile(r"^(@\s+(?:\d+\s+)?(?:IN\s+)?SOA\s+\S+\s+\S+\s+)(\d+)", re.MULTILINE)


def _bump_serial(text: str) -> tuple[str, int]:
    match = SOA_SERIAL.search(text)
    if match is None:
        raise LabError("cannot find the zone's SOA serial to bump",
                       hint="the function test expects '@ SOA mname rname serial ...'")
    serial = int(match.group(2)) + 1
    return text[:match.start(2)] + str(serial) + text[match.end(2):], serial


def sync_changes(lab: Lab, node: str, zone_file: Path, origin: str, changes: int,
                 timeout_s: float) -> list[dict[str, Any]]:
    """The seed's function test: add, then delete, a record on the primary (new serial,
    `rndc reload`, NOTIFY to the secondaries) and wait for the evidence on the server under
    test: its SOA serial, then the record present (add) or gone (delete)."""
    rows: list[dict[str, Any]] = []
    rndc = ["rndc", "-c", str(lab.node_dir("primary") / "rndc.conf")]
    for k in range(changes):
        name = f"dnslab-function-{k}.{origin}"
        for action in ("add", "delete"):
            text = zone_file.read_text()
            if action == "add":
                text = text.rstrip("\n") + f'\n{name} 300 IN TXT "dnslab function test {k}"\n'
            else:
                text = "".join(line for line in text.splitlines(keepends=True)
                               if not line.startswith(name + " "))
            text, serial = _bump_serial(text)
            zone_file.write_text(text)
            start = time.monotonic()
            lab.run("primary", [*rndc, "reload", origin.rstrip(".")], timeout=30)
            synced = None
            while time.monotonic() - start < timeout_s:
                soa = probe.try_query_in(lab.netns("client"), lab.address(node), origin, "SOA")
                if soa is not None and soa.serial == serial:
                    answer = probe.try_query_in(lab.netns("client"), lab.address(node), name,
                                                "TXT")
                    if answer is not None and (answer.answers == 1 if action == "add"
                                               else answer.rcode == "NXDOMAIN"):
                        synced = time.monotonic() - start
                        break
                time.sleep(0.1)
            rows.append({"change": k, "action": action, "name": name, "serial": serial,
                         "sync_s": round(synced, 3) if synced is not None else None,
                         "ok": synced is not None})
    return rows


def _check_choice(name: str, values: list[str], allowed: tuple[str, ...] | list[str]) -> None:
    bad = [v for v in values if v not in allowed]
    if bad or not values:
        raise LabError(f"{name.upper()}={','.join(values)}: {bad[0] if bad else 'empty'!r} "
                       "is not a choice", hint=f"{name.upper()} from: {', '.join(allowed)}")


def usable_servers(run: Run) -> list[str]:
    """SERVERS, checked; `bind916` (BIND 9.16 from its image) is dropped with a note when its
    image cannot be had and SERVERS is the experiment's default, and is an error when asked
    for by name."""
    params = run.params
    _check_choice("servers", params["servers"], tuple(SERVER_NODES))
    servers = list(params["servers"])
    if "bind916" in servers and servers == list(run.spec.params["servers"]):
        try:
            run.prepare_nodes([SERVER_NODES["bind916"]])
        except LabError as exc:
            servers.remove("bind916")
            run.meta["servers_skipped"] = {"bind916": exc.message}
            run.save_meta()
            print(f"tcp-fallback: bind916 skipped ({exc.message}); `make images` builds it",
                  file=sys.stderr)
    run.prepare_nodes([SERVER_NODES[s] for s in servers])
    return servers


def tcp_fallback(run: Run) -> None:
    """tcp-fallback: per record set, the generator's ceiling, then one stair cell per
    server x tuning; the load generator and the server on disjoint CPUs unless SHARE_CORES."""
    params = run.params
    _check_choice("records", params["records"], zones.epc.PROFILES)
    _check_choice("tunings", params["tunings"], ("untuned", "tuned"))
    servers = usable_servers(run)
    placement = run.placement()
    ensure_dnsload()
    for records in params["records"]:
        zone_set = zones.ensure("3gpp", {"profile": records, **(params.get("zone_params") or {})},
                                seed=params["seed"])
        with _mix_without_missing_types(zone_set) as mix:
            qfile = queries.mobile_core(zone_set, count=int(params["queries"]),
                                        truncating=float(params["truncating"]),
                                        seed=params["seed"], payload=int(params["client_bufsize"]))
        if params["ceiling"]:
            run_ceiling(run, records, zone_set, qfile, placement)
        for server in servers:
            for tuning in params["tunings"]:
                run_cell(run, server, records, tuning, zone_set, qfile, mix, placement)


# --- MME cache model ------------------------------------------------------------------------

CACHE_COLUMNS = ["dist", "records", "cache_size", "state", "lookups", "upstream",
                 "baseline_upstream", "upstream_qps", "baseline_qps", "amplification",
                 "hit_ratio"]


def curve_figures(results: list[cache_model.CacheResult], margin: float) -> dict[str, Any]:
    onset = next((r.records for r in results if r.amplification > 1 + margin), None)
    return {
        "cache_size": results[0].cache_size if results else None,
        "records": [r.records for r in results],
        "amplification": [round(r.amplification, 4) for r in results],
        "states": [r.state for r in results],
        "onset_records": onset,
        "max_amplification": round(max(r.amplification for r in results), 4)
        if results else None,
    }


def cache_curve(run: Run) -> None:
    """tcp-fallback-cache: amplification vs records around the cache size, per distribution."""
    params = run.params
    counts = sorted(int(c) for c in params["record_counts"])
    cache = int(params["cache_size"])
    for dist in params["dists"]:
        _check_choice("dists", [dist], ("uniform", "zipf"))
        cell_params = {"dist": dist, "cache_size": cache, "record_counts": counts}
        with run.cell(f"dist={dist}", cell_params) as cell:
            results = cache_model.amplification_curve(
                counts, cache, lookup_rate=float(params["lookup_rate"]),
                duration=float(params["duration_s"]), ttl=float(params["ttl_s"]),
                dist=dist, zipf_s=float(params["zipf_s"]), seed=int(params["seed"]))
            write_rows(cell.path / "cache.csv", CACHE_COLUMNS,
                       [{"dist": dist, **r.__dict__} for r in results])
            cell.figures.update(curve_figures(results, float(params["onset_margin"])))

