"""Zone-transfer procedures for F3 (seed 002): cold-start secondaries, zone-count sweeps.

`cold_start`: a primary serves N small zones; one secondary (BIND, Knot or NSD) starts with
nothing on disk and pulls them all. Every transfer is a TCP connection from the secondary,
which closes it and keeps the socket in TIME_WAIT for 60 s; once TIME_WAIT holds every port
of `ip_local_port_range`, connect() fails with "address not available". Each cell records
zones served over time (verified by querying the secondary), the secondary's log events
(transfers completed, connect failures), and 1 Hz socket counters from its namespace.
"""

from __future__ import annotations

import csv
import re
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

import zones
from dnslab import probe
from dnslab.errors import LabError
from dnslab.experiment import Cell, Run, allow_host_sysctls
from dnslab.render import LabData, ZoneRef
from dnslab.sysctl import node_sysctls

SECONDARY_NODES = {"bind": "sec-bind", "knot": "sec-knot", "nsd": "sec-nsd"}
PORT_RANGE_KEY = "net.ipv4.ip_local_port_range"
TW_BUCKETS_KEY = "net.ipv4.tcp_max_tw_buckets"

# What each secondary writes to its log for a finished transfer and a failed connect.
LOG_EVENTS: dict[str, list[tuple[str, re.Pattern[str]]]] = {
    "bind": [
        ("transfer_ok", re.compile(
            r"transfer of '([^/']+)/IN' from \S+: Transfer completed: [1-9]\d* messages")),
        ("connect_failed", re.compile(
            r"transfer of '([^/']+)/IN' from \S+: failed to connect: address not available")),
        ("transfer_failed", re.compile(
            r"transfer of '([^/']+)/IN' from \S+: Transfer status: (?!success|address not av)")),
    ],
    "knot": [
        ("transfer_ok", re.compile(r"\[([^\]]+)\] AXFR, incoming, remote \S+, finished")),
        ("connect_failed", re.compile(
            r"\[([^\]]+)\] .*(?:address (?:is )?not available|Cannot assign requested address)")),
        ("transfer_failed", re.compile(r"\[([^\]]+)\] refresh, remote \S+, failed")),
    ],
    "nsd": [
        ("transfer_ok", re.compile(r"zone (\S+?)\.? (?:serial \d+ )?is updated")),
        ("connect_failed", re.compile(
            r"(?:connect|xfrd).*?(?:Cannot assign requested address|address not available)"
            r"(?:.*?zone (\S+))?")),
        ("transfer_failed", re.compile(r"xfrd: zone (\S+?)\.? .*(?:failed|bad)")),
    ],
}


class LogFollower:
    """Reads the lines a daemon appends to its log and classifies them."""

    def __init__(self, path: Path, server: str):
        self.path = path
        self.patterns = LOG_EVENTS[server]
        self.offset = path.stat().st_size if path.exists() else 0
        self.partial = ""

    def poll(self) -> list[tuple[str, str]]:
        if not self.path.exists():
            return []
        with open(self.path, errors="replace") as handle:
            handle.seek(self.offset)
            chunk = handle.read()
            self.offset = handle.tell()
        lines = (self.partial + chunk).split("\n")
        self.partial = lines.pop()
        events = []
        for line in lines:
            for event, pattern in self.patterns:
                match = pattern.search(line)
                if match:
                    zone = next((g for g in match.groups() if g), "") if match.groups() else ""
                    events.append((event, zone.rstrip(".")))
                    break
        return events


@dataclass
class ColdStartResult:
    served: int
    total_time_s: float | None
    first_connect_failure_s: float | None
    connect_failures: int
    transfers_logged: int


def _progress() -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(),
                    TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn(),
                    TextColumn("eta"), TimeRemainingColumn(), transient=False)


def wait_primary_serves(cell: Cell, names: list[str], timeout: float) -> float:
    """Wait until the primary answers for every zone (evidence: SOA with AA)."""
    lab = cell.lab
    assert lab is not None
    start = time.monotonic()
    todo = list(names)
    while todo:
        _, todo = probe.count_served(lab.netns("client"), lab.address("primary"), todo)
        if todo and time.monotonic() - start > timeout:
            raise LabError(f"the primary still does not serve {len(todo)} of {len(names)} zones "
                           f"after {timeout:.0f} s", hint=f"its log: {lab.log('primary')}")
        if todo and not lab.alive("primary"):
            raise LabError("the primary exited while loading its zones",
                           hint=f"its log: {lab.log('primary')}")
    return time.monotonic() - start


def effective_sysctls(run: Run, profile_name: str) -> dict[str, str]:
    """The profile's sysctls for the secondary, with the scale's port-range and TIME_WAIT cap
    applied where the profile does not set them itself (CI shrinks both together)."""
    params = run.params
    sysctls = node_sysctls(run.profile(profile_name), allow_host_sysctls())
    if params.get("port_range") and PORT_RANGE_KEY not in sysctls:
        sysctls[PORT_RANGE_KEY] = params["port_range"]
    if params.get("tw_buckets") and TW_BUCKETS_KEY in sysctls:
        sysctls[TW_BUCKETS_KEY] = str(params["tw_buckets"])
    return sysctls


def port_range_size(value: str | None) -> int | None:
    if not value:
        return None
    low, high = (int(v) for v in value.split())
    return high - low + 1


def run_cold_start_cell(run: Run, cell_id: str, zone_refs: list[ZoneRef], server: str,
                        profile_name: str, extra_params: dict[str, Any]) -> None:
    params = run.params
    secondary = SECONDARY_NODES[server]
    sysctls = effective_sysctls(run, profile_name)
    transport = params.get("transport", "tcp")
    if transport not in ("tcp", "tls"):
        raise LabError(f"TRANSPORT={transport!r} is not a zone-transfer transport",
                       hint="TRANSPORT=tcp or tls (XoT)")
    if transport == "tls" and server != "bind":
        raise LabError(f"the packaged {server} cannot transfer zones over TLS (XoT)",
                       hint="TRANSPORT=tls needs SECONDARY=bind")
    xot = {"xot": True} if transport == "tls" else {}
    # the effective sysctls are read back into meta.json; the figures carry the two that
    # decide the outcome (port range, TIME_WAIT cap)
    cell_params = {"profile": profile_name, "secondary": server, "secondary_node": secondary,
                   "zones": len(zone_refs), "transport": transport, **extra_params}
    data = LabData(
        zones=zone_refs, health_zone=zone_refs[0].name,
        sysctls={secondary: sysctls},
        node_options={"primary": {"notify": "no", **params.get("primary_options", {}), **xot},
                      secondary: {**params.get(f"{server}_options", {}), **xot}},
    )
    with run.cell(cell_id, cell_params) as cell:
        lab = cell.up(data, hold=list(SECONDARY_NODES.values()))
        names = [z.name for z in zone_refs]
        cell.figures["primary_load_s"] = round(
            wait_primary_serves(cell, names, params["deadline_s"]), 3)
        readback = lab.state.nodes[secondary].sysctls
        cell.figures["port_range"] = readback.get(PORT_RANGE_KEY)
        result = _cold_start(cell, secondary, server, names, params)
        monitors = cell.monitors
        assert monitors is not None
        monitors.stop()
        tw_peak = _column_max(cell.path / "monitor" / f"{secondary}.csv", "tcp_time_wait")
        cell.figures.update({
            "zones": len(names),
            "port_range_size": port_range_size(readback.get(PORT_RANGE_KEY)),
            "tw_buckets": readback.get(TW_BUCKETS_KEY),
            "total_time_s": result.total_time_s,
            "first_connect_failure_s": result.first_connect_failure_s,
            "connect_failures": result.connect_failures,
            "transfers_logged": result.transfers_logged,
            "tw_peak": tw_peak,
            "zones_served": result.served,
            "deadline_s": params["deadline_s"],
        })


def _column_max(path: Path, column: str) -> int | None:
    if not path.exists():
        return None
    with open(path) as handle:
        values = [int(row[column]) for row in csv.DictReader(handle) if row[column]]
    return max(values) if values else None


def _cold_start(cell: Cell, secondary: str, server: str, names: list[str],
                params: dict[str, Any]) -> ColdStartResult:
    """Start the secondary and follow it until it serves every zone or the deadline passes."""
    lab = cell.lab
    assert lab is not None
    follower = LogFollower(lab.log(secondary), server)
    monitors = cell.monitor([secondary, "primary"])
    t0 = monitors.t0
    lab.start(secondary)
    started = time.monotonic() - t0
    unconfirmed = deque(names)
    served = 0
    batch = int(params.get("probe_batch", 2000))
    first_failure: float | None = None
    failures = transfers = 0
    done_at: float | None = None
    deadline = params["deadline_s"]
    next_probe = time.monotonic()
    with open(cell.path / "zones_done.csv", "w", newline="") as done_file, \
            open(cell.path / "xfr_events.csv", "w", newline="") as events_file, _progress() as bar:
        done_csv = csv.writer(done_file)
        done_csv.writerow(["t", "zones_served", "transfers_logged", "connect_failures"])
        events_csv = csv.writer(events_file)
        events_csv.writerow(["t", "event", "zone"])
        task = bar.add_task(f"{cell.cell_id}: zones served by {secondary}", total=len(names))
        while True:
            now = time.monotonic() - t0
            for event, zone in follower.poll():
                events_csv.writerow([round(now, 3), event, zone])
                if event == "connect_failed":
                    failures += 1
                    first_failure = now if first_failure is None else first_failure
                elif event == "transfer_ok":
                    transfers += 1
            if time.monotonic() >= next_probe:
                next_probe += 1.0
                sample = [unconfirmed.popleft() for _ in range(min(batch, len(unconfirmed)))]
                _count, missing = probe.count_served(lab.netns("client"),
                                                     lab.address(secondary), sample)
                unconfirmed.extend(missing)
                served = len(names) - len(unconfirmed)
                done_csv.writerow([round(time.monotonic() - t0, 3), served, transfers, failures])
                done_file.flush()
                events_file.flush()
                bar.update(task, completed=served)
                if not unconfirmed:
                    done_at = time.monotonic() - t0
                    break
            if now - started > deadline:
                break
            if not lab.alive(secondary):
                raise LabError(f"{secondary} exited during the cold start",
                               hint=f"its log: {lab.log(secondary)}")
            time.sleep(0.2)
    return ColdStartResult(
        served=served,
        total_time_s=round(done_at - started, 3) if done_at is not None else None,
        first_connect_failure_s=round(first_failure - started, 3)
        if first_failure is not None else None,
        connect_failures=failures,
        transfers_logged=transfers,
    )


def small_zone_refs(count: int, seed: int) -> list[ZoneRef]:
    zone_set = zones.ensure("small-zones", {"count": count}, seed=seed)
    return [ZoneRef(z.fqdn, z.path) for z in zone_set.zones]


def cold_start(run: Run) -> None:
    """xfr-30k-zones: one cold-start cell per sysctl profile (and repetition)."""
    params = run.params
    server = params["secondary"]
    if server not in SECONDARY_NODES:
        raise LabError(f"SECONDARY={server!r} is not a secondary this lab has",
                       hint="SECONDARY=bind, knot or nsd")
    zone_refs = small_zone_refs(params["zones"], params["seed"])
    for profile_name in params["profiles"]:
        for rep in range(params["repetitions"]):
            cell_id = f"profile={profile_name}" + (f",rep={rep}" if params["repetitions"] > 1
                                                   else "")
            run_cold_start_cell(run, cell_id, zone_refs, server, profile_name, {"rep": rep})


def zone_sweep(run: Run) -> None:
    """xfr-zone-sweep: total time and time per zone against the number of zones."""
    params = run.params
    for server in params["secondaries"]:
        if server not in SECONDARY_NODES:
            raise LabError(f"{server!r} is not a secondary this lab has",
                           hint="SECONDARIES=bind,knot,nsd")
    for count in params["counts"]:
        zone_refs = small_zone_refs(count, params["seed"])
        for server in params["secondaries"]:
            run_cold_start_cell(run, f"zones={count},secondary={server}", zone_refs, server,
                                params["profiles"][0], {"count": count})


# --- repeated single-zone cold starts: a TLD-size zone (xfr-tld), the smallest zone -------

TRANSFER_STATS: dict[str, re.Pattern[str]] = {
    # BIND: "Transfer completed: 47700 messages, 14000000 records, 691000000 bytes, 26.5 secs"
    "bind": re.compile(r"Transfer completed: (?P<messages>\d+) messages, (?P<records>\d+) "
                       r"records, (?P<bytes>\d+) bytes, (?P<secs>[\d.]+) secs"),
    # Knot: "AXFR, incoming, remote 198.18.0.11@53, finished, 26.50 seconds, 47700 messages,
    # 691000000 bytes"
    "knot": re.compile(r"AXFR, incoming, remote \S+, finished, (?P<secs>[\d.]+) seconds, "
                       r"(?P<messages>\d+) messages, (?P<bytes>\d+) bytes"),
    # NSD: "received update to serial 1 at ... from 198.18.0.11 of 691000000 bytes in 26.5 seconds"
    "nsd": re.compile(r"received update to serial \d+ .* of (?P<bytes>\d+) bytes in "
                      r"(?P<secs>[\d.e-]+) seconds"),
}
STATE_FILES = ("xfrd.state", "zone.list")


def wipe_secondary(node_dir: Path) -> None:
    """Leave the secondary with nothing on disk, as on a first start."""
    import shutil

    for sub in ("zones", "db", "xfr"):
        shutil.rmtree(node_dir / sub, ignore_errors=True)
        (node_dir / sub).mkdir()
    for name in STATE_FILES:
        (node_dir / name).unlink(missing_ok=True)
    for journal in node_dir.glob("*.jnl"):
        journal.unlink()


def _transfer_stats(server: str, log_text: str) -> dict[str, float]:
    found = list(TRANSFER_STATS[server].finditer(log_text))
    if not found:
        return {}
    return {k: float(v) for k, v in found[-1].groupdict().items() if v is not None}


def repeated_cold_start(cell: Cell, secondary: str, server: str, zone: str, repetitions: int,
                        poll_s: float, timeout_s: float) -> list[dict[str, Any]]:
    """Start the secondary cold `repetitions` times; time start -> first authoritative SOA.

    Both instants are read on the host's monotonic clock: the error of one measurement is at
    most one poll interval plus one query round trip, both recorded with it.
    """
    lab = cell.lab
    assert lab is not None
    rows = []
    node_dir = lab.node_dir(secondary)
    with open(cell.path / "repetitions.csv", "w", newline="") as handle:
        writer = None
        for rep in range(repetitions):
            lab.stop(secondary)
            wipe_secondary(node_dir)
            log_start = lab.log(secondary).stat().st_size if lab.log(secondary).exists() else 0
            start = time.monotonic()
            lab.start(secondary)
            answered = None
            rtt = None
            while time.monotonic() - start < timeout_s:
                sent = time.monotonic()
                answer = probe.try_query_in(lab.netns("client"), lab.address(secondary), zone,
                                            "SOA", timeout=0.2)
                if answer and answer.rcode == "NOERROR" and answer.authoritative:
                    answered, rtt = time.monotonic(), time.monotonic() - sent
                    break
                if not lab.alive(secondary):
                    raise LabError(f"{secondary} exited during the transfer",
                                   hint=f"its log: {lab.log(secondary)}")
                time.sleep(poll_s)
            with open(lab.log(secondary), errors="replace") as log:
                log.seek(log_start)
                stats = _transfer_stats(server, log.read())
            row = {"rep": rep, "delay_s": round(answered - start, 4) if answered else None,
                   "error_s": round(poll_s + (rtt or 0), 4), "log_secs": stats.get("secs"),
                   "messages": stats.get("messages"), "records": stats.get("records"),
                   "bytes": stats.get("bytes")}
            rows.append(row)
            if writer is None:
                writer = csv.DictWriter(handle, fieldnames=list(row))
                writer.writeheader()
            writer.writerow(row)
            handle.flush()
    return rows


def _summarise(rows: list[dict[str, Any]], records: int) -> dict[str, Any]:
    import statistics

    delays = [r["delay_s"] for r in rows if r["delay_s"] is not None]
    figures: dict[str, Any] = {"repetitions": len(rows), "completed": len(delays),
                               "delays_s": delays}
    if delays:
        mean = statistics.fmean(delays)
        stdev = statistics.stdev(delays) if len(delays) > 1 else 0.0
        figures.update({"mean_s": round(mean, 4), "stdev_s": round(stdev, 4),
                        "rel_stdev_pct": round(100 * stdev / mean, 3) if mean else None,
                        "min_s": min(delays), "max_s": max(delays),
                        "records_per_s": round(records / mean) if mean else None,
                        "error_s": max(r["error_s"] for r in rows)})
    last = rows[-1] if rows else {}
    figures.update({"messages": last.get("messages"), "bytes": last.get("bytes"),
                    "records": records})
    return figures


def _single_zone_cells(run: Run, zone_ref: ZoneRef, records: int, load_timeout: float) -> None:
    params = run.params
    for server in params["secondaries"]:
        if server not in SECONDARY_NODES:
            raise LabError(f"{server!r} is not a secondary this lab has",
                           hint="SECONDARIES=bind,knot,nsd")
        secondary = SECONDARY_NODES[server]
        data = LabData(zones=[zone_ref], health_zone=zone_ref.name,
                       node_options={"primary": {"notify": "no"},
                                     secondary: dict(params.get(f"{server}_options", {}))})
        with run.cell(f"secondary={server}", {"secondary": server, "secondary_node": secondary,
                                              "records": records,
                                              "zone": zone_ref.name}) as cell:
            lab = cell.up(data, hold=list(SECONDARY_NODES.values()))
            cell.figures["primary_load_s"] = round(
                wait_primary_serves(cell, [zone_ref.name], load_timeout), 3)
            cell.monitor([secondary, "primary"])
            rows = repeated_cold_start(cell, secondary, server, zone_ref.name,
                                       params["repetitions"], params["poll_s"],
                                       params["timeout_s"])
            cell.figures.update(_summarise(rows, records))
            lab.stop(secondary)


def tld(run: Run) -> None:
    """xfr-tld: AXFR of a TLD-scale zone into a cold secondary, repeated."""
    params = run.params
    zone_set = zones.ensure("tld", {"records": params["records"]}, seed=params["seed"])
    zone = zone_set.zones[0]
    _single_zone_cells(run, ZoneRef(zone.fqdn, zone.path), zone_set.manifest["totals"]["records"],
                       params["timeout_s"])


def smallest(run: Run) -> None:
    """xfr-smallest: SOA + NS, the transfer delay on one clock with its error bar."""
    from dnslab.render import _environment

    out = run.path / "zone"
    out.mkdir()
    path = out / "smallest.test.zone"
    path.write_text(_environment().get_template("zones/smallest.zone.j2").render(
        origin="smallest.test", serial=1))
    _single_zone_cells(run, ZoneRef("smallest.test.", path), 2, 30)
