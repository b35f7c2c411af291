"""F3 synthetic runs: a tiny simulation of a cold-start secondary (transfers open one TCP
connection each, closed connections stay `tw_lifetime` seconds in TIME_WAIT, a connect fails
when every ephemeral port is in TIME_WAIT, `tcp_max_tw_buckets` drops TIME_WAIT sockets beyond
the cap), shrunk to 150 zones and 100 ports, and the single-transfer and sweep cells.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from analysis.synthetic import MONITOR_COLUMNS, CellData, write_run

XFR_TOPOLOGY = {"name": "xfr", "file": "xfr.clab.yml",
                "nodes": {"pri": {"role": "primary", "server": "bind", "address": "198.18.0.11"},
                          "sec": {"role": "secondary", "server": "bind",
                                  "address": "198.18.0.12"}}}


def write_xfr_run(root: Path, experiment: str, cells: list[CellData], **kwargs: Any) -> Path:
    """A run of an xfr experiment, with the xfr lab's primary and secondary."""
    kwargs.setdefault("topology", XFR_TOPOLOGY)
    return write_run(root, experiment, cells, **kwargs)


def simulate_xfr(zones: int, ports: int, tw_cap: int | None, rate: float, deadline: float,
                 retry_s: float, seed: int, tw_lifetime: float = 60.0) -> dict[str, Any]:
    """Per-transfer simulation at 0.05 s steps; returns events, monitor rows, zones_done rows."""
    rng = np.random.default_rng(seed)
    dt = 0.05
    pending = list(range(zones))
    retry_at: dict[int, float] = {}
    tw: list[float] = []  # expiry times of sockets in TIME_WAIT
    events: list[list[Any]] = []
    opens = served = 0
    credit = 0.0
    mon_rows: list[list[Any]] = []
    done_rows: list[list[Any]] = []
    t = 0.0
    finished_at: float | None = None
    next_sample = 0.0
    while t <= deadline + 1e-9:
        tw = [e for e in tw if e > t]
        credit += rate * dt * float(rng.uniform(0.8, 1.2))
        ready = [z for z in pending if retry_at.get(z, 0.0) <= t]
        while credit >= 1.0 and ready:
            credit -= 1.0
            zone = ready.pop(0)
            if len(tw) >= ports:
                events.append([round(t, 2), "connect_failed", f"z{zone}."])
                retry_at[zone] = t + retry_s
                continue
            opens += 1
            pending.remove(zone)
            served += 1
            events.append([round(t, 2), "transfer_ok", f"z{zone}."])
            if tw_cap is None or len(tw) < tw_cap:
                tw.append(t + tw_lifetime)
            if served == zones and finished_at is None:
                finished_at = round(t, 2)
        credit = min(credit, 2.0)
        if t >= next_sample - 1e-9:
            sec = int(round(next_sample))
            estab = 2 if pending else 0
            mon_rows.append([sec, 5.0, 52000 + served * 12, 0, 0, 1000 + opens, 3, 0, 0,
                             opens // 40, estab, len(tw), 0, len(tw) + estab + 4])
            done_rows.append([sec, served])
            next_sample += 1.0
        if finished_at is not None and t > finished_at + 2:
            break
        t += dt
    return {"events": events, "monitor": mon_rows, "done": done_rows}


def port_sysctls(ports: int, tw_buckets: int = 262144) -> dict[str, str]:
    return {"net.ipv4.ip_local_port_range": f"{60999 - ports + 1} 60999",
            "net.ipv4.tcp_max_tw_buckets": str(tw_buckets)}


def xfr_cell(profile: str, ports: int, *, tw_cap: int | None = None, seed: int = 1,
             sim_ports: int | None = None, tw_lifetime: float = 60.0, zones: int = 150,
             rate: float = 10.0, extra: dict[str, Any] | None = None) -> CellData:
    """A cold-start cell; `sim_ports` (default `ports`) is the range the simulated kernel
    really had, `ports` the range read back (they differ only to fake a broken lab)."""
    sim = simulate_xfr(zones=zones, ports=sim_ports or ports, tw_cap=tw_cap, rate=rate,
                       deadline=40.0, retry_s=15.0, seed=seed, tw_lifetime=tw_lifetime)
    return CellData(
        params={"profile": profile, **(extra or {})},
        figures={"zones": zones, "port_range_size": ports},
        csv={"monitor/sec.csv": (MONITOR_COLUMNS, sim["monitor"]),
             "zones_done.csv": (["t", "zones_served"], sim["done"]),
             "xfr_events.csv": (["t", "event", "zone"], sim["events"])},
        sysctls={"sec": port_sysctls(ports, tw_cap or 262144), "pri": port_sysctls(28231)})


def xfr_30k(root: Path, cells: list[CellData], **kwargs: Any) -> Path:
    # the default's 100 ports at ~10 transfers/s run out at ~10 s: the range "sized" for it
    return write_xfr_run(root, "xfr-30k-zones", cells,
                     params={"zones": 150, "deadline_s": 40, "secondary": "bind",
                             "failure_at_s": 10.0}, **kwargs)


STANDARD_30K = [("default", 100, None, 1), ("wide-ports", 300, None, 2),
                ("tw-buckets-50", 100, 50, 3)]


def standard_30k_cells() -> list[CellData]:
    return [xfr_cell(p, ports, tw_cap=cap, seed=seed) for p, ports, cap, seed in STANDARD_30K]


REPETITION_COLUMNS = ["rep", "delay_s", "error_s", "log_span_s", "log_resolution_s",
                      "log_secs"]


def timed_cells(delays_by_secondary: dict[str, list[float]], *, error_s: float = 0.03,
                records: int = 140000, timing_source: str | None = "transfer-log",
                log_spans: dict[str, list[float | None]] | None = None,
                log_resolution_s: float | None = 0.001, bytes_: int | None = None,
                messages: int | None = None,
                other_load: list[float] | None = None) -> list[CellData]:
    """One cell per secondary with its repetitions' times (`delays_s`) and, unless
    `log_resolution_s` is None, a `repetitions.csv` whose AXFRs the secondary's log timed:
    `log_spans` (default: the delays themselves) at that log clock (1 s: the daemon's own
    duration in `log_secs`, as Knot's log has whole seconds). `other_load`: what processes
    outside the lab used each second (% of a core: monitor/cores.csv `other_pct`)."""
    cells = []
    for secondary, delays in delays_by_secondary.items():
        figures: dict[str, Any] = {"records": records, "repetitions": len(delays),
                                   "delays_s": delays, "error_s": error_s}
        if timing_source:
            figures["timing_source"] = timing_source
        if bytes_ is not None:
            figures.update({"bytes": bytes_, "messages": messages})
        files = {}
        if log_resolution_s is not None:
            spans = (log_spans or {}).get(secondary, list(delays))
            fine = log_resolution_s <= 0.01
            files["repetitions.csv"] = (REPETITION_COLUMNS, [
                [i, d, error_s, span if fine else (0.0 if span is not None else None),
                 log_resolution_s, None if fine else span]
                for i, (d, span) in enumerate(zip(delays, spans, strict=True))])
        if other_load is not None:
            files["monitor/cores.csv"] = (["t", "cpu0", "cpu1", "other_pct"], [
                [i + 1.0, 50.0, 50.0, load] for i, load in enumerate(other_load)])
        # as xfr_single's cells: the secondary's kind and its node
        cells.append(CellData({"secondary": secondary, "secondary_node": f"sec-{secondary}"},
                              figures, csv=files))
    return cells


def sweep_cells(totals: dict[int, float | None], ports: int = 100,
                deadline_s: float = 600.0, *, failures: int | None = None,
                tw_peak: float | None = None,
                control: float | None | bool = False) -> list[CellData]:
    """xfr-zone-sweep cells of profile default, one per zone count; the largest count's
    `connect_failures` (default: 25 when it is above the range, else 0) and TIME_WAIT peak
    (default: the range when above it, else its count); `control`: the wide-ports cell at the
    largest count with that total time (None: stalled; False: no control cell)."""
    largest = max(totals)

    def cell(profile: str, zones: int, total: float | None, range_: int) -> CellData:
        above = zones > range_
        fails = failures if failures is not None and zones == largest else (
            25 if above and profile == "default" else 0)
        peak = tw_peak if tw_peak is not None and zones == largest else float(
            min(zones, range_))
        return CellData({"profile": profile, "zones": zones},
                        {"zones": zones, "port_range_size": range_, "total_time_s": total,
                         "deadline_s": deadline_s, "connect_failures": fails,
                         "tw_peak": peak})

    cells = [cell("default", z, t, ports) for z, t in totals.items()]
    if control is not False:
        cells.append(cell("wide-ports", largest, None if control is None else float(control),
                          63453))
    return cells


def fluid_cell(params: dict[str, Any], ports: int, rate: float, zones: int, *,
               tw_lifetime: float = 60.0, conns_per_zone: float = 1.0,
               duration_s: int = 120, first_failure_s: float | None = None) -> CellData:
    """A cold start at the seed's scale without simulating each transfer: per second `rate`
    transfer attempts, each opening `conns_per_zone` connections (XoT may reuse one), closed
    connections held `tw_lifetime` s in TIME_WAIT, attempts failing once every port is held.
    Writes the 1 Hz monitor, zones served and the connect failures (not each transfer_ok);
    as a real monitor, its first sample is taken at the start (t=0, nothing opened yet) and
    each later one at the end of a second's work. `first_failure_s`: the secondary's log
    shows its first connect failure then (none logged before it; one alone there when it
    comes before the ports ran out), as real runs' first failures came a few seconds off
    the port arithmetic's time."""
    closed: list[float] = []  # connections closed per second, for TIME_WAIT
    served = opens = 0.0
    events: list[list[Any]] = []
    mon_rows: list[list[Any]] = [[0, 5.0, 52000, 0, 0, 1000, 3, 0, 0, 0, 2, 0, 0, 6]]
    done_rows: list[list[Any]] = [[0, 0]]
    for sec in range(duration_s + 1):
        held = sum(closed[-int(tw_lifetime):]) if tw_lifetime >= 1 else 0.0
        attempts = min(rate, zones - served)
        room = max(ports - held, 0.0) / conns_per_zone
        ok = min(attempts, room)
        events += [[sec + i / max(attempts - ok, 1), "connect_failed", f"z{i}."]
                   for i in range(int(attempts - ok))]
        served += ok
        opens += ok * conns_per_zone
        closed.append(ok * conns_per_zone)
        tw = min(sum(closed[-int(tw_lifetime):]) if tw_lifetime >= 1 else 0.0, ports)
        mon_rows.append([sec + 1, 5.0, 52000, 0, 0, int(1000 + opens), 3, 0, 0, 0, 2, int(tw),
                         0, int(tw) + 6])
        done_rows.append([sec + 1, int(served)])
        if served >= zones:
            break
    if first_failure_s is not None:
        events = [e for e in events if e[0] >= first_failure_s]
        if not events or events[0][0] > first_failure_s:
            events.insert(0, [first_failure_s, "connect_failed", "z-early."])
    return CellData(
        params={"profile": "default", **params},
        figures={"zones": zones, "port_range_size": ports},
        csv={"monitor/sec.csv": (MONITOR_COLUMNS, mon_rows),
             "zones_done.csv": (["t", "zones_served"], done_rows),
             "xfr_events.csv": (["t", "event", "zone"], events or [[0, "transfer_ok", "z0."]])},
        sysctls={"sec": port_sysctls(ports), "pri": port_sysctls(28232)})


def seed_calibration_cell(rate: float, zones: int = 30000, *, transport: str = "tcp",
                          tw_lifetime: float = 60.0) -> CellData:
    """A calibration cold start with the seed's 32768-60999 (28,232 ports)."""
    return fluid_cell({"phase": "calibrate", "transport": transport}, 28232, rate, zones,
                      tw_lifetime=tw_lifetime)


# --- runs at the full scale's shape, for the figure layout tests -----------------------------

FULL_30K_RANGES = {"default": 100, "wide-ports": 300, "tw-buckets-1000": 100}


def full_scale_30k_run(root: Path) -> Path:
    """xfr-30k-zones at its full scale's shape: 3 profiles x 2 transports x 3 repetitions,
    plus a calibration per transport. `port_range_set` is what the run chose for profiles
    without their own range: wide-ports sets its own, so its cells ran with another range."""
    cells: list[CellData] = []
    for t, transport in enumerate(("tcp", "tls")):
        cells.append(xfr_cell("default", 28232, seed=90 + t, extra={
            "phase": "calibrate", "transport": transport}))
        for p, (profile, ports) in enumerate(FULL_30K_RANGES.items()):
            for rep in range(3):
                cells.append(xfr_cell(
                    profile, ports, seed=t * 100 + p * 10 + rep,
                    tw_cap=50 if profile.startswith("tw-") else None,
                    extra={"transport": transport, "rep": rep, "port_range_set": "60900 60999"}))
    return xfr_30k(root, cells)


TLD_REPETITIONS = [26.5, 26.6, 26.4, 26.5, 26.55, 26.45, 26.5, 26.6, 26.4, 26.5]


def sweep_run(root: Path, totals: dict[str, dict[int, float | None]], *, ports: int = 17000,
              deadline_s: float = 600.0, rate: float = 400.0) -> Path:
    """An xfr-zone-sweep run with the cells the procedure writes: per secondary kind a
    calibration cold start (the seed's range, 30,000 zones at `rate`), then one cell per
    zone count with the procedure's parameters (kinds and nodes at both ends, transport,
    count, the range the run chose) and its `total_time_s` (None: not done by the
    deadline)."""
    cells: list[CellData] = []
    chosen = f"{60999 - ports + 1} 60999"
    for secondary in totals:
        ends = {"primary": "bind", "primary_node": "pri", "secondary": secondary,
                "secondary_node": f"sec-{secondary}"}
        calibration = fluid_cell({"phase": "calibrate", **ends, "transport": "tcp"}, 28232,
                                 rate, 30000, duration_s=30)
        cells.append(calibration)
    for count in sorted({c for by_count in totals.values() for c in by_count}):
        for secondary, by_count in totals.items():
            if count not in by_count:
                continue
            params = {"profile": "default", "primary": "bind", "primary_node": "pri",
                      "secondary": secondary, "secondary_node": f"sec-{secondary}",
                      "zones": count, "transport": "tcp", "count": count,
                      "port_range_set": chosen}
            total = by_count[count]
            cells.append(CellData(params, {
                "zones": count, "port_range_size": ports, "total_time_s": total,
                "deadline_s": deadline_s, "zones_served": count if total is not None
                else count // 2,
                # past the range some connects fail (the figure the procedure records)
                "connect_failures": (count - ports) // 10 if count > ports else 0},
                sysctls={f"sec-{secondary}": port_sysctls(ports)}))
    return write_xfr_run(root, "xfr-zone-sweep", cells, params={
        "counts": sorted({c for by_count in totals.values() for c in by_count}),
        "secondaries": list(totals), "profiles": ["default"], "deadline_s": deadline_s,
        "port_range": "auto"})


def full_scale_sweep_run(root: Path) -> Path:
    """xfr-zone-sweep at its full scale's counts (1,000 to 100,000 zones) for BIND and Knot:
    linear while the range (17,000 ports) holds, slower per zone past it, 100,000 not done
    by the 600 s deadline."""
    bind = {1000: 2.6, 2000: 5.1, 5000: 12.4, 10000: 25.3, 20000: 78.0, 30000: 160.0,
            50000: 352.0, 100000: None}
    knot = {count: (None if total is None else total * 0.8) for count, total in bind.items()}
    return sweep_run(root, {"bind": bind, "knot": knot})


def full_scale_runs() -> list[tuple[str, Callable[[Path], Path]]]:
    """The package's runs at their full scale's shape, for the figure layout tests."""
    return [
        ("xfr-30k-zones: 3 profiles x 2 transports x 3 repetitions, calibrations",
         full_scale_30k_run),
        ("xfr-tld: 10 repetitions, 3 secondaries", lambda root: write_xfr_run(
            root, "xfr-tld", timed_cells({"bind": TLD_REPETITIONS,
                                          "knot": [t - 6 for t in TLD_REPETITIONS],
                                          "nsd": [t + 3 for t in TLD_REPETITIONS]}))),
        ("xfr-smallest: 3 secondaries", lambda root: write_xfr_run(
            root, "xfr-smallest", timed_cells({"knot": [0.012, 0.011, 0.013],
                                               "bind": [0.02, 0.018, 0.021],
                                               "nsd": [0.015, 0.014, 0.016]}))),
        ("xfr-zone-sweep: 1,000-100,000 zones, SECONDARIES=bind,knot", full_scale_sweep_run),
    ]


def seed_like_runs() -> dict[str, Callable[[Path], Path]]:
    """{experiment: a run where every claim it names holds}: the altered-data test removes
    each claim's effect from it and expects nothing reproduced. Built as the claim cases'
    'present' runs (cases.py beside this module); xfr-30k-zones with TCP and TLS cold starts
    and a calibration at the seed's range, so XoT and the seed's range are judged too."""
    from experiments.f3_xfr import cases

    def xfr_30k_with_tls(root: Path) -> Path:
        good = [cases.std("default"), cases.std("wide-ports"), cases.std("tw-buckets-50")]
        tls = [fluid_cell({"profile": "wide-ports", "transport": t, "rep": 0,
                           "primary": "bind", "secondary": "bind"}, 63453, rate, 3000,
                          conns_per_zone=conns)
               for t, rate, conns in (("tcp", 400, 1.0), ("tls", 500, 0.01))]
        return xfr_30k(root, [*good, *tls, seed_calibration_cell(750)])

    return {"xfr-30k-zones": xfr_30k_with_tls,
            "xfr-tld": cases.tld(cases.STEADY, records=14_000_001, bytes_=691_400_000,
                                 messages=47_650),
            "xfr-smallest": cases.smallest([0.012, 0.018, 0.015], error_s=0.01),
            "xfr-zone-sweep": cases.sweep({50: 5.0, 100: 10.0, 200: 80.0, 400: None})}


def like_1766(root: Path) -> Path:
    """A run shaped like the full `xfr-30k-zones` run 20261125T174657Z-1766 as NOTES.md gives
    it: calibrations at 437 (TCP) and 506 (TLS) connections/s with the seed's range, the
    default's range sized to run out at 38 s (16,598 and 19,239 ports), three repetitions of
    default / wide-ports / tw-buckets-1000 (cap 588 / 681) over TCP and TLS, 30,000 zones; BIND
    to BIND over TLS opening one connection per zone, in 0.92-1.04x TCP's time. The cold
    starts are the fluid model of `fluid_cell` (not each transfer), so the failure counts and
    times are the model's. Its rate is constant, where the real calibrations slowed after
    their first 38 s: they are modelled at the rates that give their TIME_WAIT peaks with the
    seed's range (20,298 and 23,083 of 28,232: 340 and 385 connections/s)."""
    cells = [seed_calibration_cell(340), seed_calibration_cell(385, transport="tls")]
    ports = {"tcp": 16598, "tls": 19239}
    rates = {"tcp": (437.0, 430.0, 445.0), "tls": (475.0, 430.0, 428.0)}
    caps = {"tcp": "588", "tls": "681"}
    for transport in ("tcp", "tls"):
        for rep in range(3):
            rate = rates[transport][rep]
            ends = {"transport": transport, "rep": rep, "primary": "bind", "secondary": "bind"}
            cells.append(fluid_cell({**ends, "profile": "default"}, ports[transport], rate,
                                    30000, duration_s=400))
            cells.append(fluid_cell({**ends, "profile": "wide-ports"}, 63453, rate, 30000))
            capped = fluid_cell({**ends, "profile": "tw-buckets-1000"}, ports[transport],
                                rate, 30000, tw_lifetime=1.4)
            capped.sysctls["sec"]["net.ipv4.tcp_max_tw_buckets"] = caps[transport]
            cells.append(capped)
    return write_xfr_run(root, "xfr-30k-zones", cells,
                         params={"zones": 30000, "deadline_s": 600, "secondary": "bind",
                                 "failure_at_s": 38.0, "transports": ["tcp", "tls"]},
                         run_id="20261125T174657Z-1766")


def like_30k(root: Path, run_id: str, *, calibration: dict[str, float],
             ports: dict[str, int], failures: dict[str, list[tuple[float, float]]],
             times: dict[str, list[float]], back_to_back: bool,
             zones: int = 30000) -> Path:
    """A full `xfr-30k-zones` run of the fluid model, shaped by what a NOTES.md entry gives:
    the calibrations' connections/s with the seed's range (`calibration`, per transport),
    the default's range sized from them (`ports`), per repetition the default's first
    failure and its ratio to the time the range was used up (`failures`: (s, ratio); the
    rate is the range over first / ratio), the wide-ports cold starts' times (`times`: the
    rate is zones / time), tw-buckets-1000 with the cap scaled to the range; 3 profiles x
    TCP/TLS x the repetitions. `back_to_back`: a repetition's TCP and TLS cold starts one
    after the other (the procedure's order since b68e668), else every TCP cell first (run
    2712's order)."""
    cells = {t: [] for t in ("tcp", "tls")}
    calibrations = [seed_calibration_cell(rate, zones, transport=t)
                    for t, rate in calibration.items()]
    for transport in ("tcp", "tls"):
        for rep, ((first, ratio), wide_s) in enumerate(zip(failures[transport],
                                                            times[transport], strict=True)):
            ends = {"transport": transport, "rep": rep, "primary": "bind", "secondary": "bind"}
            rate = ports[transport] / (first / ratio)
            default = fluid_cell({**ends, "profile": "default"}, ports[transport], rate, zones,
                                 duration_s=200, first_failure_s=first)
            wide = fluid_cell({**ends, "profile": "wide-ports"}, 63453, zones / wide_s, zones)
            capped = fluid_cell({**ends, "profile": "tw-buckets-1000"}, ports[transport],
                                rate, zones, tw_lifetime=1.4)
            capped.sysctls["sec"]["net.ipv4.tcp_max_tw_buckets"] = str(
                round(1000 * ports[transport] / 28231))
            cells[transport].append([default, wide, capped])
    ordered: list[CellData] = list(calibrations)
    if back_to_back:
        for rep in range(len(cells["tcp"])):
            for profile in range(3):
                ordered += [cells["tcp"][rep][profile], cells["tls"][rep][profile]]
    else:
        ordered += [c for t in ("tcp", "tls") for rep in cells[t] for c in rep]
    return write_xfr_run(root, "xfr-30k-zones", ordered,
                         params={"zones": zones, "deadline_s": 600, "secondary": "bind",
                                 "failure_at_s": 38.0, "transports": ["tcp", "tls"]},
                         run_id=run_id)


def like_2712(root: Path) -> Path:
    """Run 20261126T152323Z-2712 (NOTES.md, 2026-11-26 afternoon, quiet): calibrations 628
    (TCP) and 620 (TLS) connections/s, ranges 23,860 and 23,556 ports, ports ran out 39-53
    s after start ("reproduced": each series within the band, the ratios chosen so), XoT
    55.3 / 50.2 / 53.0 s against TCP's 43.3 / 51.1 / 53.1 s with every TCP cold start
    first (no pairs)."""
    return like_30k(root, "20261126T152323Z-2712", calibration={"tcp": 628, "tls": 620},
                    ports={"tcp": 23860, "tls": 23556},
                    failures={"tcp": [(39.0, 1.00), (47.0, 1.10), (53.0, 1.20)],
                              "tls": [(41.0, 1.03), (44.0, 1.08), (50.0, 1.15)]},
                    times={"tcp": [43.3, 51.1, 53.1], "tls": [55.3, 50.2, 53.0]},
                    back_to_back=False)


def like_8f88(root: Path) -> Path:
    """Run 20261126T171827Z-8f88 (NOTES.md: quiet, calibrations 555-634 connections/s,
    ports ran out at 36-48 s, XoT 64.0 / 66.9 / 50.3 s against TCP's 51.1 / 52.6 / 42.3 s back
    to back: every pair 1.19-1.27x)."""
    return like_30k(root, "20261126T171827Z-8f88", calibration={"tcp": 634, "tls": 555},
                    ports={"tcp": 24092, "tls": 21090},
                    failures={"tcp": [(36.0, 0.95), (40.0, 1.00), (48.0, 1.12)],
                              "tls": [(38.0, 0.98), (42.0, 1.05), (45.0, 1.10)]},
                    times={"tcp": [51.1, 52.6, 42.3], "tls": [64.0, 66.9, 50.3]},
                    back_to_back=True)


def like_47d8(root: Path) -> Path:
    """Run 47d8 (issue 41: README's first command on a fresh VM, quiet): ports ran out 27-57
    s after start ("not reproduced": one series outside the band, here the 57 s one at 1.35x
    the port arithmetic), XoT 1.01x TCP's mean time per zone. The issue gives no per-pair
    times: they are chosen with 8f88's spread between pairs (ratios 1.06, 0.97, 1.00), the
    calibrations and ranges as 8f88's."""
    return like_30k(root, "20261127T090000Z-47d8", calibration={"tcp": 634, "tls": 555},
                    ports={"tcp": 24092, "tls": 21090},
                    failures={"tcp": [(27.0, 0.95), (41.0, 1.05), (45.0, 1.10)],
                              "tls": [(38.0, 1.00), (50.0, 1.18), (57.0, 1.35)]},
                    times={"tcp": [50.0, 52.0, 48.0], "tls": [53.0, 50.4, 48.0]},
                    back_to_back=True)


def like_9931(root: Path) -> Path:
    """A run shaped like the full `xfr-smallest` run 20261125T221010Z-9931: BIND, Knot and NSD,
    10 repetitions each, 0.209-0.219 s from process start to the first SOA answer (NSD's first
    0.075 s), error bar +-0.007 s; the AXFR alone 0.000 s by each secondary's log."""
    starts = {s: [0.209, 0.212, 0.215, 0.219, 0.21, 0.211, 0.213, 0.21, 0.214, 0.216]
              for s in ("bind", "knot", "nsd")}
    starts["nsd"][0] = 0.075
    return write_xfr_run(root, "xfr-smallest", timed_cells(
        starts, error_s=0.007, records=2, timing_source="start-to-soa",
        log_spans={s: [0.0] * 10 for s in starts}), run_id="20261125T221010Z-9931")


def like_2c96(root: Path) -> Path:
    """A run shaped like the full `xfr-tld` run 20261125T221025Z-2c96: BIND 9.18, 14 M records,
    446.6 MB in 36,360 messages, 10 AXFRs timed by the secondary's log (ms), 25.0 s first and
    20.8-23.6 s after, mean 22.4 s, relative standard deviation 5.4 %."""
    return write_xfr_run(root, "xfr-tld", timed_cells(
        {"bind": [25.0, 23.6, 22.6, 22.1, 21.7, 22.3, 20.8, 21.5, 22.6, 21.4]}, error_s=0.001,
        records=14_000_001, bytes_=446_600_000, messages=36_360),
        run_id="20261125T221025Z-2c96")
