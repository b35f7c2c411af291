"""Repeated single-zone cold starts for F3 (seed 002): one AXFR into a cold secondary, timed.

`tld` (experiment `xfr-tld`): a TLD-size zone (the size of .ch), each repetition timed from
the secondary's own transfer log (`transfer-log`); `smallest` (`xfr-smallest`): an SOA + NS
zone, daemon start to the first authoritative SOA on the host clock (`start-to-soa`), with
its error bar. The primary and secondary are chosen as in `xfr.py` in this package
(PRIMARY=, SECONDARIES=), and placed on disjoint cores (`transfer_placement`); files per
cell in docs/architecture.md (`repetitions.csv`).
"""

from __future__ import annotations

import csv
import time
from typing import Any

import zones
from dnslab import cpus, probe
from dnslab.errors import LabError
from dnslab.experiment import Cell, Run
from dnslab.lab import Lab
from dnslab.render import ZoneRef
from dnslab.servers import driver, kind_param
from dnslab.wait import WaitTimeout, wait_until
from experiments.f3_xfr.derived import transfer_log_error, transfer_log_time
from experiments.f3_xfr.xfr import Ends, check_secondaries, ends, wait_primary_serves

# the experiment's parameters that shape the TLD zone (zones/tld.py), records to aaaa_share
TLD_ZONE_PARAMS = ("records", "signed", "nsec3_optout", "ds_share", "glue_share", "aaaa_share")


def _first_authoritative_soa(lab: Lab, client: str, secondary: str, zone: str, poll_s: float,
                             timeout_s: float) -> tuple[float | None, float | None]:
    """When (host monotonic clock) the secondary first answered the zone's SOA with AA (asked
    from the `client` node), and that query's round trip; (None, None) when not within
    `timeout_s`."""

    def answered() -> tuple[float, float] | None:
        sent = time.monotonic()
        answer = probe.try_query_in(lab.netns(client), lab.address(secondary), zone, "SOA",
                                    timeout=0.2)
        if answer and answer.rcode == "NOERROR" and answer.authoritative:
            return time.monotonic(), time.monotonic() - sent
        if not lab.alive(secondary):
            raise LabError(f"{secondary} exited during the transfer",
                           hint=f"its log: {lab.log(secondary)}")
        return None

    try:
        return wait_until(answered, timeout_s, f"{zone} SOA from {secondary}", interval=poll_s)
    except WaitTimeout:
        return None, None


def repeated_cold_start(cell: Cell, pair: Ends, zone: str, repetitions: int, poll_s: float,
                        timeout_s: float) -> list[dict[str, Any]]:
    """Start the secondary of `pair` cold `repetitions` times; time start -> first
    authoritative SOA (asked from the pair's client).

    Both instants are read on the host's monotonic clock: the error of one measurement is at
    most one poll interval plus one query round trip, both recorded with it.
    """
    lab = cell.lab
    assert lab is not None
    rows = []
    secondary = pair.secondary
    node_dir = lab.node_dir(secondary)
    server_driver = driver(pair.secondary_kind)
    with open(cell.path / "repetitions.csv", "w", newline="") as handle:
        writer = None
        for rep in range(repetitions):
            lab.stop(secondary)
            server_driver.wipe_state(node_dir)
            log_start = lab.log(secondary).stat().st_size if lab.log(secondary).exists() else 0
            start = time.monotonic()
            lab.start(secondary)
            answered, rtt = _first_authoritative_soa(lab, pair.client, secondary, zone, poll_s,
                                                     timeout_s - (time.monotonic() - start))
            with open(lab.log(secondary), errors="replace") as log:
                log.seek(log_start)
                log_text = log.read()
            stats = server_driver.transfer_stats(log_text)
            row = {"rep": rep, "delay_s": round(answered - start, 4) if answered else None,
                   "error_s": round(poll_s + (rtt or 0), 4),
                   **server_driver.transfer_span(zone.rstrip("."), log_text),
                   "log_secs": stats.get("secs"),
                   "messages": stats.get("messages"), "records": stats.get("records"),
                   "bytes": stats.get("bytes")}
            rows.append(row)
            if writer is None:
                writer = csv.DictWriter(handle, fieldnames=list(row))
                writer.writeheader()
            writer.writerow(row)
            handle.flush()
    return rows


def _summarise(rows: list[dict[str, Any]], records: int, timing: str) -> dict[str, Any]:
    """The cell's figures: one time per repetition (`delays_s`) measured as `timing` says
    (`transfer-log`: the secondary's own account of the AXFR; `start-to-soa`: daemon start to
    the first authoritative SOA answer on the host clock), the raw alternatives beside."""
    start_to_soa = [r["delay_s"] for r in rows if r["delay_s"] is not None]
    from_log = [transfer_log_time(r) for r in rows]
    delays = ([t for t in from_log if t is not None] if timing == "transfer-log"
              else start_to_soa)
    last = rows[-1] if rows else {}
    return {"repetitions": len(rows), "completed": len(delays), "delays_s": delays,
            "timing_source": timing, "start_to_soa_s": start_to_soa,
            "xfr_log_span_s": [r["log_span_s"] for r in rows],
            "xfr_log_secs": [r["log_secs"] for r in rows],
            "error_s": max((r["error_s"] for r in rows), default=None)
            if timing == "start-to-soa" else max(
                (transfer_log_error(r) for r in rows), default=None),
            "messages": last.get("messages"), "bytes": last.get("bytes"), "records": records}


def transfer_placement(run: Run, pair: Ends) -> dict[str, str]:
    """The primary and the secondary on disjoint cores (the seed's were separate hosts): the
    secondary on the last core, the primary and the client on the others, unless
    PRIMARY_CPUS= / SECONDARY_CPUS= say otherwise or SHARE_CORES=1 lets them share. Recorded
    in meta.json `placement`; {} (no cpu-set) when the experiment has no such parameters."""
    params = run.params
    if "secondary_cpus" not in params:
        return {}
    chosen = cpus.place(str(params.get("secondary_cpus") or ""),
                        str(params.get("primary_cpus") or ""),
                        bool(params.get("share_cores", False)))
    run.writer.record_run_placement({"primary_cpus": chosen.server,
                                     "secondary_cpus": chosen.generator,
                                     "shared": chosen.shared, "host_cpus": chosen.cores})
    return {pair.primary: chosen.server, pair.client: chosen.server,
            pair.secondary: chosen.generator}


def _single_zone_cells(run: Run, zone_ref: ZoneRef, records: int, load_timeout: float,
                       timing: str) -> None:
    params = run.params
    run.plan(len(params["secondaries"]), per_cell_s=30 + params["repetitions"] * (
        5 + records / 100_000))
    check_secondaries(run, params["secondaries"])
    for server in params["secondaries"]:
        pair = ends(run, server)
        secondary = pair.secondary
        if run.finished(f"secondary={server}") is not None:
            continue
        # the zone is also the lab's health zone: the primary answers it once loaded
        data = pair.lab_data([zone_ref], {"notify": "no"},
                             dict(kind_param(params, server) or {}),
                             health_timeout_s=load_timeout,
                             cpu_sets=transfer_placement(run, pair))
        with run.cell(f"secondary={server}", {**pair.params(), "records": records,
                                              "zone": zone_ref.name}) as cell:
            lab = cell.up(data, hold=pair.held)
            loaded = wait_primary_serves(cell, pair, [zone_ref.name], load_timeout)
            cell.figures["primary_load_s"] = round(
                lab.healthy_s.get(pair.primary, 0.0) + loaded, 3)
            cell.monitor([secondary, pair.primary])
            rows = repeated_cold_start(cell, pair, zone_ref.name, params["repetitions"],
                                       params["poll_s"], params["timeout_s"])
            cell.figures.update(_summarise(rows, records, timing))
            lab.stop(secondary)


def tld(run: Run) -> None:
    """xfr-tld: AXFR of a TLD-scale zone into a cold secondary, repeated."""
    params = run.params
    zone_set = zones.ensure("tld", {key: params[key] for key in TLD_ZONE_PARAMS},
                            seed=params["seed"])
    zone = zone_set.zones[0]
    _single_zone_cells(run, ZoneRef(zone.fqdn, zone.path), zone_set.manifest["totals"]["records"],
                       params["timeout_s"], "transfer-log")


def smallest(run: Run) -> None:
    """xfr-smallest: SOA + NS, the transfer delay on one clock with its error bar."""
    from dnslab.render import _environment

    out = run.path / "zone"
    out.mkdir()
    path = out / "smallest.test.zone"
    path.write_text(_environment().get_template("zones/smallest.zone.j2").render(
        origin="smallest.test", serial=1))
    _single_zone_cells(run, ZoneRef("smallest.test.", path), 2, 30, "start-to-soa")
