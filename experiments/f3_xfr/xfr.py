"""Zone-transfer procedures for F3 (seed 002): cold-start secondaries, zone-count sweeps.

`cold_start`: a primary serves N small zones; one secondary starts with nothing on disk and
pulls them all (any authoritative kind at either end: SECONDARY=, PRIMARY=; the lab's first
primary by default). Every transfer is a TCP connection from the secondary,
which closes it and keeps the socket in TIME_WAIT for 60 s; once TIME_WAIT holds every port
of `ip_local_port_range`, connect() fails with "address not available". Each cell records
zones served over time (verified by querying the secondary), the secondary's log events
(transfers completed, connect failures), and 1 Hz socket counters from its namespace and
the primary's (a last row when the cold start ends; `secondary_resets_sent` /
`primary_resets_sent`: connections an end reset, which leave no TIME_WAIT).

Whether N zones exhaust the ports depends on the machine: it takes more than ports / 60 s
transfers per second. With `PORT_RANGE=auto` (the default) the run first measures the
secondary's rate in a calibration cell per transport (`phase=calibrate`: a cold start of
`calibrate_zones` zones, by default all of them, with the seed's port range) and then
shrinks `ip_local_port_range` on the secondary (its own namespace) for the profiles that do
not set it, to the connections the secondary opened in the first `failure_at_s` seconds of
the calibration (38 s: when the seed's secondary failed, or the calibration's own first
connect failure if sooner: `transfer_rate`). On a machine as fast as the
seed's the seed's range stays. `PORT_RANGE=seed` keeps the seed's exact 32768-60999;
`PORT_RANGE="a b"` sets one.
The calibration's raw files, the rate, the rule and the chosen range are in the calibration
cell (`calibration.json`) and in meta.json (`port_range_choice`); the prediction itself
(rate x 60 s against the ports) is left to the analysis, from those raw figures. The range
arithmetic is experiments/port_range.py; the single-zone transfers (xfr-tld, xfr-smallest)
are in `xfr_single.py` in this package.
"""

from __future__ import annotations

import csv
import json
import sys
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

import zones
from dnslab import probe
from dnslab.counters import read_series
from dnslab.errors import LabError
from dnslab.experiment import Cell, Run, allow_host_sysctls
from dnslab.render import LabData, ZoneRef
from dnslab.servers import driver, kind_param
from dnslab.servers.manifest import short_name
from dnslab.sysctl import node_sysctls
from dnslab.wait import WaitTimeout, wait_until
from experiments.f3_xfr.port_range import (
    MIN_RATE_SAMPLES,
    PORT_RANGE_KEY,
    SEED_PORT_RANGE,
    TIME_WAIT_S,
    TW_BUCKETS_KEY,
    auto_port_range,
    port_range_size,
    transfer_rate,
    tw_cap,
)


@dataclass(frozen=True)
class Ends:
    """The two ends of the transfers in a cell: the primary and the secondary node, each
    with its server kind, every primary and secondary node of the lab (`lab.up` holds all
    but the chosen primary; the procedure starts the secondary itself), and the client node
    the probes ask from."""

    primary: str
    primary_kind: str
    secondary: str
    secondary_kind: str
    primaries: tuple[str, ...]
    secondaries: tuple[str, ...]
    client: str

    @property
    def servers(self) -> list[str]:
        return [*self.primaries, *self.secondaries]

    @property
    def held(self) -> list[str]:
        """The nodes `lab.up` must not start: all but the chosen primary."""
        return [n for n in self.servers if n != self.primary]

    def lab_data(self, zone_refs: list[ZoneRef], primary_options: dict[str, Any],
                 secondary_options: dict[str, Any], **more: Any) -> LabData:
        """The cell's lab: the zones on the chosen primary, none on the other primaries."""
        unused = [n for n in self.primaries if n != self.primary]
        return LabData(zones=zone_refs, health_zone=zone_refs[0].name, primary=self.primary,
                       node_zones=dict.fromkeys(unused, []),
                       node_options={self.primary: primary_options,
                                     self.secondary: secondary_options}, **more)

    def params(self) -> dict[str, str]:
        return {"primary": self.primary_kind, "primary_node": self.primary,
                "secondary": self.secondary_kind, "secondary_node": self.secondary}


def ends(run: Run, secondary_kind: str, primary: str | None = None) -> Ends:
    """The primary `primary` (else PRIMARY=, else the lab's first primary) and the secondary of
    `secondary_kind`; a LabError naming the choices when the lab has no such node."""
    primaries = run.topology.names_by_server("primary")
    secondaries = run.topology.names_by_server("secondary")
    primary_kind = primary or run.params.get("primary") or short_name(next(iter(primaries), ""))
    for name, kind, nodes in (("PRIMARY", primary_kind, primaries),
                              ("SECONDARY", secondary_kind, secondaries)):
        if kind not in nodes:
            raise LabError(f"{name}={kind!r}: lab {run.spec.topology!r} has no such "
                           f"{name.lower()}",
                           hint=f"{name}=" + " | ".join(short_name(k) for k in nodes))
    return Ends(primary=primaries[primary_kind], primary_kind=primary_kind,
                secondary=secondaries[secondary_kind], secondary_kind=secondary_kind,
                primaries=tuple(primaries.values()),
                secondaries=tuple(secondaries.values()),
                client=run.topology.node(role="client").name)


def check_secondaries(run: Run, kinds: list[str]) -> None:
    for kind in kinds:
        ends(run, kind)


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


def wait_primary_serves(cell: Cell, pair: Ends, names: list[str], timeout: float) -> float:
    """Wait until the primary answers for every zone (evidence: SOA with AA, asked from the
    client)."""
    lab = cell.lab
    assert lab is not None
    primary = pair.primary
    start = time.monotonic()
    todo = list(names)

    def serves_all() -> bool:
        nonlocal todo
        _, todo = probe.count_served(lab.netns(pair.client), lab.address(primary), todo)
        if todo and not lab.alive(primary):
            raise LabError("the primary exited while loading its zones",
                           hint=f"its log: {lab.log(primary)}")
        return not todo

    wait_until(serves_all, timeout,
               lambda: f"the primary to serve all {len(names)} zones ({len(todo)} still not)",
               interval=0.0, hint=f"its log: {lab.log(primary)}")
    return time.monotonic() - start


def effective_sysctls(run: Run, profile_name: str, port_range: str | None = None
                      ) -> dict[str, str]:
    """The profile's sysctls for the secondary, with the run's port range (explicit, or chosen
    from the calibration) and TIME_WAIT cap applied where the profile does not set them itself
    (CI shrinks both together)."""
    params = run.params
    sysctls = node_sysctls(run.profile(profile_name), allow_host_sysctls())
    if port_range and PORT_RANGE_KEY not in sysctls:
        sysctls[PORT_RANGE_KEY] = port_range
    if TW_BUCKETS_KEY in sysctls:
        sysctls[TW_BUCKETS_KEY] = str(tw_cap(params.get("tw_buckets"),
                                             int(sysctls[TW_BUCKETS_KEY]),
                                             port_range_size(sysctls.get(PORT_RANGE_KEY))))
    return sysctls


def _gained(monitor_csv: Path, column: str) -> int | None:
    """What a counter gained over a cell's monitor file (None: not recorded)."""
    series = read_series(monitor_csv, column)
    growth = series.growth() if series else None
    return int(growth) if growth is not None else None


def check_transport(transport: str, *kinds: str) -> None:
    """A transport both ends can use (tls: XoT needs it on the primary and the secondary)."""
    if transport not in ("tcp", "tls"):
        raise LabError(f"transport {transport!r} is not a zone-transfer transport",
                       hint="TRANSPORTS=tcp,tls (tls: XoT)")
    if transport == "tls":
        for kind in kinds:
            driver(kind).check_xot()


def run_cold_start_cell(run: Run, cell_id: str, zone_refs: list[ZoneRef], server: str,
                        profile_name: str, extra_params: dict[str, Any],
                        transport: str = "tcp", port_range: str | None = None,
                        primary: str | None = None) -> Cell | None:
    """One cold start; returns the finished cell (None when a resumed run already has it).
    `primary`: the primary's kind (and version) when not PRIMARY='s."""
    params = run.params
    pair = ends(run, server, primary)
    secondary = pair.secondary
    if run.finished(cell_id) is not None:
        return None
    sysctls = effective_sysctls(run, profile_name, port_range)
    # meta.json's profile description says what the run set beside the profile
    profile = node_sysctls(run.profile(profile_name), allow_host_sysctls())
    run.profile_extended(profile_name, secondary,
                         {k: v for k, v in sysctls.items() if profile.get(k) != v})
    check_transport(transport, pair.primary_kind, server)
    xot = {"xot": True} if transport == "tls" else {}
    # the effective sysctls are read back into meta.json; the figures carry the two that
    # decide the outcome (port range, TIME_WAIT cap)
    secondary_options = dict(kind_param(params, server) or {})
    cell_params = {"profile": profile_name, **pair.params(),
                   "zones": len(zone_refs), "transport": transport, **extra_params,
                   "secondary_options": secondary_options}
    data = pair.lab_data(zone_refs, primary_options(run, pair, xot),
                         {**secondary_options, **xot}, sysctls={secondary: sysctls})
    if port_range:
        cell_params["port_range_set"] = port_range
    with run.cell(cell_id, cell_params) as cell:
        lab = cell.up(data, hold=pair.held)
        names = [z.name for z in zone_refs]
        cell.figures["primary_load_s"] = round(
            wait_primary_serves(cell, pair, names, params["deadline_s"]), 3)
        readback = lab.state.nodes[secondary].sysctls
        cell.figures["port_range"] = readback.get(PORT_RANGE_KEY)
        result = _cold_start(cell, pair, names, params)
        monitors = cell.monitors
        assert monitors is not None
        monitors.stop()
        time_wait = read_series(cell.path / "monitor" / f"{secondary}.csv", "tcp_time_wait")
        peak = time_wait.max() if time_wait else None
        tw_peak = int(peak) if peak is not None else None
        # a connection one end resets leaves no TIME_WAIT on either: BIND 9.20's XoT
        # secondary held TIME_WAIT for a third of its 30,000 connections, the primary none
        for figure, node in (("secondary_resets_sent", secondary),
                             ("primary_resets_sent", pair.primary)):
            cell.figures[figure] = _gained(cell.path / "monitor" / f"{node}.csv", "tcp_out_rsts")
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
    return cell


def primary_options(run: Run, pair: Ends, xot: dict[str, Any]) -> dict[str, Any]:
    """No NOTIFY (the secondary asks for every zone by itself, as on a cold start), the
    outgoing-transfer limit in the primary's own option, its extra options, XoT."""
    params = run.params
    limit = driver(pair.primary_kind).transfer_out_options(int(params.get("transfers_out", 0)))
    return {"notify": "no", **limit,
            **(kind_param(params, pair.primary_kind, "primary_options") or {}), **xot}


def _cold_start(cell: Cell, pair: Ends, names: list[str],
                params: dict[str, Any]) -> ColdStartResult:
    """Start the secondary and follow it until it serves every zone or the deadline passes."""
    lab = cell.lab
    assert lab is not None
    secondary = pair.secondary
    follower = driver(pair.secondary_kind).log_follower(lab.log(secondary))
    monitors = cell.monitor([secondary, pair.primary])
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

        def read_log(now: float) -> None:
            nonlocal failures, first_failure, transfers
            for event, zone in follower.poll():
                events_csv.writerow([round(now, 3), event, zone])
                if event == "connect_failed":
                    failures += 1
                    first_failure = now if first_failure is None else first_failure
                elif event == "transfer_ok":
                    transfers += 1

        def all_served() -> bool:
            nonlocal next_probe, served, done_at
            read_log(time.monotonic() - t0)
            if time.monotonic() >= next_probe:
                next_probe += 1.0
                sample = [unconfirmed.popleft() for _ in range(min(batch, len(unconfirmed)))]
                _count, missing = probe.count_served(lab.netns(pair.client),
                                                     lab.address(secondary), sample)
                unconfirmed.extend(missing)
                served = len(names) - len(unconfirmed)
                done_csv.writerow([round(time.monotonic() - t0, 3), served, transfers, failures])
                done_file.flush()
                events_file.flush()
                bar.update(task, completed=served)
                if not unconfirmed:
                    done_at = time.monotonic() - t0
                    return True
            if not lab.alive(secondary):
                raise LabError(f"{secondary} exited during the cold start",
                               hint=f"its log: {lab.log(secondary)}")
            return False

        try:  # the deadline is not a failure: the cell records how far the secondary got
            wait_until(all_served, deadline - (time.monotonic() - t0 - started),
                       f"{secondary} to serve every zone", interval=0.2)
        except WaitTimeout:
            pass
        # the lines written since the last look (a fast cold start ends between two looks)
        read_log(time.monotonic() - t0)
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


# --- the port range: calibrated to this machine, the seed's, or given ------------------------

def choose_port_range(run: Run, server: str, transport: str,
                      zone_refs: list[ZoneRef], primary: str | None = None) -> str | None:
    """The port range the cells of this transport get on the secondary (see the docstring)."""
    params = run.params
    setting = str(params.get("port_range") or "").strip()
    key = f"{server},{transport}"
    if setting != "auto":
        chosen = SEED_PORT_RANGE if setting == "seed" else (setting or None)
        if chosen and port_range_size(chosen) is None:
            raise LabError(f"PORT_RANGE={setting!r} is not a port range",
                           hint='PORT_RANGE=auto, seed, or "LOW HIGH"')
        run.writer.merge("port_range_choice",
                         {key: {"rule": setting or "kernel", "port_range": chosen}})
        return chosen
    # 0: the run's own zone count, the same cold start as the cells (5,000 zones went at
    # 833/s on a 2-core VM where 30,000 averaged 363/s)
    count = min(int(params["calibrate_zones"] or len(zone_refs)), len(zone_refs))
    cell_id = f"phase=calibrate,secondary={server},transport={transport}"
    cell_dir = run.cell_dir(cell_id)
    if run.finished(cell_id) is None:
        # the seed's range: far more ports than calibration zones, so nothing limits the rate
        run_cold_start_cell(run, cell_id, zone_refs[:count], server, "default",
                            {"phase": "calibrate"}, transport, SEED_PORT_RANGE, primary)
    rate = transfer_rate(cell_dir, window_s=float(params["failure_at_s"]))
    # a calibration over in a few seconds is better timed by its log lines than by 1 Hz samples
    coarse = int(rate["monitor_samples"] or 0) < MIN_RATE_SAMPLES
    connections = (rate["transfers_per_s"] if coarse else None) or rate["connections_per_s"] \
        or rate["transfers_per_s"]
    if not connections:
        raise LabError(f"the calibration cell {cell_id} measured no transfer rate",
                       hint=f"see {cell_dir}")
    chosen = auto_port_range(float(connections), float(params["failure_at_s"]))
    choice = {"rule": "auto", "calibration_cell": cell_id, "calibration_zones": count,
              **rate, "rate_used_per_s": connections, "failure_at_s": params["failure_at_s"],
              "time_wait_s": TIME_WAIT_S,
              "seed_port_range": SEED_PORT_RANGE, "port_range": chosen,
              "ports": port_range_size(chosen)}
    (cell_dir / "calibration.json").write_text(json.dumps(choice, indent=1))
    run.writer.merge("port_range_choice", {key: choice})
    print(f"{transport}: the secondary opened {connections:,.0f} connections/s; port range "
          f"{chosen} ({port_range_size(chosen):,} ports, the seed's {SEED_PORT_RANGE} has "
          f"{port_range_size(SEED_PORT_RANGE):,})", file=sys.stderr)
    return chosen


def cold_start(run: Run) -> None:
    """xfr-30k-zones: per transport a calibration (PORT_RANGE=auto), then one cold-start cell
    per sysctl profile, transport and repetition, repetition by repetition: a repetition's
    TCP and TLS cold starts of a profile run back to back, so comparing them compares two
    runs minutes apart, not the first and the last half of the run (run 2712 ran every TCP
    cell first, its TLS ones ~20 min later). SERVERS=bind@9.18,bind@9.20 does all of that per
    version, each version both ends (cells `...,server=<version>`, judged per version)."""
    params = run.params
    versions = [str(v) for v in params.get("servers") or []]
    pairs = [(v, v) for v in versions] or [(str(params["secondary"]), None)]
    transports = list(params["transports"])
    for server, primary in pairs:
        pair = ends(run, server, primary)
        for transport in transports:
            check_transport(transport, pair.primary_kind, server)
    zone_refs = small_zone_refs(params["zones"], params["seed"])
    reps = int(params["repetitions"])
    run.plan(len(pairs) * len(transports) * (len(params["profiles"]) * reps
                                             + (params["port_range"] == "auto")),
             per_cell_s=min(params["deadline_s"], 30 + params["zones"] / 300))
    for server, primary in pairs:
        port_ranges = {transport: choose_port_range(run, server, transport, zone_refs, primary)
                       for transport in transports}
        extra = {"server": server} if versions else {}
        for rep in range(reps):
            for profile_name in params["profiles"]:
                for transport in transports:
                    cell_id = f"transport={transport},profile={profile_name}" + (
                        f",rep={rep}" if reps > 1 else "") + (
                        f",server={server}" if len(pairs) > 1 else "")
                    run_cold_start_cell(run, cell_id, zone_refs, server, profile_name,
                                        {"rep": rep, **extra}, transport,
                                        port_ranges[transport], primary)


def zone_sweep(run: Run) -> None:
    """xfr-zone-sweep: total time and time per zone against the number of zones, with the
    port range chosen as in xfr-30k-zones (calibrated on the largest count's zones)."""
    params = run.params
    check_secondaries(run, params["secondaries"])
    counts = list(params["counts"])
    controls = list(params["profiles"][1:])
    run.plan((len(counts) + len(controls) + (params["port_range"] == "auto"))
             * len(params["secondaries"]),
             per_cell_s=min(params["deadline_s"], 30 + sum(counts) / len(counts) / 300))
    ranges = {server: choose_port_range(run, server, "tcp",
                                        small_zone_refs(max(counts), params["seed"]))
              for server in params["secondaries"]}
    if params["port_range"] == "auto" and len(set(ranges.values())) > 1:
        # one range for every secondary: the slowest's
        slowest = min(ranges.values(), key=lambda r: port_range_size(r) or 0)
        ranges = dict.fromkeys(ranges, slowest)
    for count in counts:
        zone_refs = small_zone_refs(count, params["seed"])
        for server in params["secondaries"]:
            run_cold_start_cell(run, f"zones={count},secondary={server}", zone_refs, server,
                                params["profiles"][0], {"count": count}, "tcp", ranges[server])
    # the control (F3.sweep.nonlinear): the largest count again with each further profile
    # (wide-ports: a range its connections cannot fill), so the growth is shown to be the
    # ports' and not the zone count's
    largest = max(counts)
    for profile in controls:
        for server in params["secondaries"]:
            run_cold_start_cell(run, f"zones={largest},secondary={server},profile={profile}",
                                small_zone_refs(largest, params["seed"]), server, profile,
                                {"count": largest}, "tcp", ranges[server])
