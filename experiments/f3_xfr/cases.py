"""F3's claim cases: runs where each claim's effect is present (reproduced), absent or
reversed (not reproduced), or its precondition unmet (not applicable), built with this
package's `fixtures.py`. `tests/unit/test_analysis_claims.py` collects `CLAIM_CASES` from every
finding package and judges each run with the project's own `evaluate`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from analysis import synthetic
from analysis.claim import (
    ABSENT,
    PRESENT,
    REVERSED,
    STRADDLES,
    UNMET,
    UNMET_MACHINE,
    UNMET_SETTING,
)
from experiments.f3_xfr import fixtures as f3_fx

# --- builders: root -> run folder ---------------------------------------------------------------

def xfr(*cells: synthetic.CellData) -> Callable[[Path], Path]:
    return lambda root: f3_fx.xfr_30k(root, list(cells))


def std(profile: str, **kw: Any) -> synthetic.CellData:
    ports, cap, seed = {p: (ports, cap, seed) for p, ports, cap, seed in f3_fx.STANDARD_30K}[
        profile]
    return f3_fx.xfr_cell(profile, kw.pop("ports", ports), tw_cap=kw.pop("tw_cap", cap),
                         seed=seed, **kw)


GOOD = xfr(std("default"), std("wide-ports"), std("tw-buckets-50"))
# a kernel that frees ports after 5 s: exhaustion predicted by the port arithmetic, absent
NO_TW = xfr(std("default", tw_lifetime=5.0), std("wide-ports"), std("tw-buckets-50"))
# ports read back 100, the kernel really had 200: TIME_WAIT climbs past the "ceiling"
OVER = xfr(std("default", sim_ports=200), std("wide-ports"), std("tw-buckets-50"))
# failures long before TIME_WAIT reaches the range: another cause than the ports
EARLY = xfr(std("default", sim_ports=40), std("wide-ports"), std("tw-buckets-50"))
# 1,000 ports for 150 zones: the range cannot be exhausted
WIDE = xfr(std("default", ports=1000), std("wide-ports", ports=2000),
           std("tw-buckets-50", ports=1000))


def cap_not_applied() -> synthetic.CellData:
    """tcp_max_tw_buckets=50 read back, but the kernel kept every TIME_WAIT socket."""
    cell = f3_fx.xfr_cell("tw-buckets-50", 100, seed=3)
    cell.sysctls["sec"]["net.ipv4.tcp_max_tw_buckets"] = "50"
    return cell


def tld(delays: list[float], **kw: Any) -> Callable[[Path], Path]:
    return lambda root: f3_fx.write_xfr_run(root, "xfr-tld",
                                            f3_fx.timed_cells({"bind": delays}, **kw))


def smallest(delays: list[float], **kw: Any) -> Callable[[Path], Path]:
    """An xfr-smallest run of one Knot secondary whose log timed each AXFR (`log_spans`,
    default the delays) unless `log_resolution_s=None`."""
    return lambda root: f3_fx.write_xfr_run(root, "xfr-smallest",
                                       f3_fx.timed_cells({"knot": delays}, **kw))


def line_at_largest(totals: dict[int, float | None], ports: int) -> float:
    """What a straight line through the finished counts within the range predicts for the
    largest count (the wide-ports control that stays on it)."""
    points = [(n, t) for n, t in totals.items() if n <= ports and t is not None]
    if len(points) < 2:
        return 1.0
    slope, start = np.polyfit([n for n, _ in points], [t for _, t in points], 1)
    return float(start + slope * max(totals))


def sweep(totals: dict[int, float | None], ports: int = 100, deadline_s: float = 600.0, *,
          control: float | None | bool | str = "line", **kw: Any) -> Callable[[Path], Path]:
    """An xfr-zone-sweep run; `control`: the wide-ports cell's time at the largest count
    ("line": on the straight line, None: stalled, False: none ran); `failures` / `tw_peak`:
    the largest count's (default: the ports ran out)."""
    wide = line_at_largest(totals, ports) if control == "line" else control
    return lambda root: f3_fx.write_xfr_run(root, "xfr-zone-sweep", f3_fx.sweep_cells(
        totals, ports, deadline_s, control=wide, **kw))  # type: ignore[arg-type]


STEADY = [26.5, 26.6, 26.4, 26.5, 26.55, 26.45, 26.5, 26.6, 26.4, 26.5]  # the seed's 10
# relative standard deviation 1.9 %, one repetition 2.8 % off the mean
SPREAD_1_9 = [25.95, 27.05, 26.5, 25.85, 27.25, 26.4, 26.95, 26.05, 26.85, 26.15]


def sweep_deadline(totals: dict[int, float | None], deadline_s: float,
                   ports: int = 100) -> Callable[[Path], Path]:
    return sweep(totals, ports, deadline_s)


def seed_range(*cells: synthetic.CellData) -> Callable[[Path], Path]:
    """An xfr-30k-zones run at the seed's scale: its calibration cells and a scaled default."""
    default = f3_fx.fluid_cell({"transport": "tcp"}, 17000, 450, 30000)
    return lambda root: f3_fx.xfr_30k(root, [*cells, default])


def xot(tls_conns: float = 0.01, tls_rate: float = 500.0, tls: bool = True,
        tcp_rates: tuple[float, ...] = (400.0,), tls_rates: tuple[float, ...] = (),
        zones: int = 3000, tcp_first: bool = False) -> Callable[[Path], Path]:
    """wide-ports cold starts of `zones` over TCP (one connection per zone) and TLS, one pair
    per repetition: TCP at `tcp_rates`, TLS at `tls_rates` (else `tls_rate` in each), each
    repetition's pair back to back (the procedure's order), or every TCP cold start first
    (`tcp_first`: run 2712's order, whose pairs are no pairs)."""
    tcp_cells, tls_cells = [], []
    for rep, tcp_rate in enumerate(tcp_rates):
        ends = {"profile": "wide-ports", "rep": rep, "primary": "bind", "secondary": "bind"}
        tcp_cells.append(f3_fx.fluid_cell({**ends, "transport": "tcp"}, 63453, tcp_rate, zones))
        if tls:
            tls_cells.append(f3_fx.fluid_cell({**ends, "transport": "tls"}, 63453,
                                              tls_rates[rep] if tls_rates else tls_rate, zones,
                                              conns_per_zone=tls_conns))
    cells = (tcp_cells + tls_cells if tcp_first else
             [c for pair in zip(tcp_cells, tls_cells or [None] * len(tcp_cells), strict=True)
              for c in pair if c is not None])
    return lambda root: f3_fx.xfr_30k(root, cells)


def failure_spread(sim_ports: tuple[int, ...]) -> Callable[[Path], Path]:
    """Default cold starts over TCP, one per repetition, whose 100 ports read back ran out
    when the kernel's real range (`sim_ports`, >= 100) was full: the first failure at about
    sim_ports / 100 of the port arithmetic's time, a different one in each repetition."""
    return xfr(*[f3_fx.xfr_cell("default", 100, sim_ports=sim, seed=1,
                                extra={"transport": "tcp", "rep": rep})
                 for rep, sim in enumerate(sim_ports)])


CLAIM_CASES: list[tuple[str, str, Callable[[Path], Path]]] = [
    ("F3.default.tw-ceiling", PRESENT, GOOD),
    ("F3.default.tw-ceiling", ABSENT, NO_TW),
    ("F3.default.tw-ceiling", REVERSED, OVER),
    ("F3.default.tw-ceiling", UNMET, WIDE),
    ("F3.default.connect-failures", PRESENT, GOOD),
    ("F3.default.connect-failures", ABSENT, NO_TW),
    ("F3.default.connect-failures", REVERSED, EARLY),
    ("F3.default.connect-failures", UNMET, WIDE),
    ("F3.default.failure-time", PRESENT, GOOD),
    ("F3.default.failure-time", ABSENT, NO_TW),
    ("F3.default.failure-time", REVERSED, EARLY),
    ("F3.default.failure-time", UNMET_SETTING, WIDE),
    # three repetitions that ran out at 1.0x, 1.25x and 1.45x the port arithmetic's time
    # (spread like runs 2712 / 8f88 / 47d8's 27-57 s): their mean's t interval cannot tell
    # whether the first failure comes when the ports are used up
    ("F3.default.failure-time", STRADDLES, failure_spread((100, 125, 145))),
    # ... three that agree: the interval lies in the band
    ("F3.default.failure-time", PRESENT, failure_spread((100, 102, 104))),
    # passed by accident before: 50 ports used up in ~3 s, where the 1 Hz monitor's +-1 s
    # makes the band 0-5 s: a failure at the start passes (CI's 250 ports ran out in 0.6 s)
    ("F3.default.failure-time", UNMET, xfr(std("default", ports=50, rate=15.0),
                                           std("wide-ports"), std("tw-buckets-50"))),
    ("F3.wide-ports.no-failures", PRESENT, GOOD),
    ("F3.wide-ports.no-failures", ABSENT, xfr(std("default"), std("wide-ports", ports=100),
                                              std("tw-buckets-50"))),
    ("F3.wide-ports.no-failures", UNMET, NO_TW),
    ("F3.wide-ports.faster", PRESENT, GOOD),
    ("F3.wide-ports.faster", ABSENT, xfr(std("default", tw_lifetime=20.0),
                                         std("wide-ports", rate=3.0), std("tw-buckets-50"))),
    ("F3.wide-ports.faster", UNMET, NO_TW),
    ("F3.tw-buckets.no-failures", PRESENT, GOOD),
    ("F3.tw-buckets.no-failures", ABSENT, xfr(std("default"), std("wide-ports"),
                                              cap_not_applied())),
    ("F3.tw-buckets.no-failures", UNMET, NO_TW),
    ("F3.tw-buckets.tw-capped", PRESENT, GOOD),
    ("F3.tw-buckets.tw-capped", ABSENT, xfr(std("default"), std("wide-ports"),
                                            cap_not_applied())),
    # the seed's exact condition: 28,232 ports, 30,000 zones
    ("F3.seed-range.exhaustion", PRESENT, seed_range(f3_fx.seed_calibration_cell(750))),
    ("F3.seed-range.exhaustion", ABSENT, seed_range(f3_fx.seed_calibration_cell(
        750, tw_lifetime=5.0))),
    # a machine that opens 447 connections/s cannot fill 28,232 ports in 60 s
    ("F3.seed-range.exhaustion", UNMET_MACHINE, seed_range(f3_fx.seed_calibration_cell(447))),
    ("F3.seed-range.exhaustion", UNMET_SETTING, GOOD),  # no cell ran the seed's range
    # XoT vs TCP: mean time per zone (reuse only reported)
    ("F3.xot.not-slower", PRESENT, xot()),
    ("F3.xot.not-slower", PRESENT, xot(tls_conns=1.0, tls_rate=400)),  # as fast, no reuse
    # passed by accident before ("not reproduced"): XoT 20 % faster than TCP, but without
    # the connection reuse the old rule added to the seed's statement
    ("F3.xot.not-slower", PRESENT, xot(tls_conns=1.0, tls_rate=500)),
    # failed by accident before (run 2712's shape): repetitions paired by number, one fast
    # TCP cold start (43 s against 51 and 53 s) read as "XoT 1.28x"; the means are 1.07x,
    # then "reproduced" on its point, where 3 unpaired cold starts a side cannot tell 1.07x
    # from the 1.10x edge (its Fieller interval 0.87-1.37x): the next run read 1.24x
    ("F3.xot.not-slower", STRADDLES, xot(tls_conns=1.0, tcp_rates=(693, 587, 565),
                                         tls_rates=(542, 598, 566), zones=30000,
                                         tcp_first=True)),
    # XoT slower in the mean although one repetition pair reads 0.98x: 1.21x, but its pairs
    # spread 0.98-1.38x, so the interval reaches below the edge
    ("F3.xot.not-slower", STRADDLES, xot(tls_conns=1.0, tcp_rates=(400, 400, 400),
                                         tls_rates=(410, 300, 290))),
    # run 8f88's shape (back to back, every pair 1.19-1.27x): slower, its interval above 1.10x
    ("F3.xot.not-slower", ABSENT, xot(tls_conns=1.0, zones=30000,
                                      tcp_rates=(30000 / 51.1, 30000 / 52.6, 30000 / 42.3),
                                      tls_rates=(30000 / 64.0, 30000 / 66.9, 30000 / 50.3))),
    # three repetitions of XoT ~1.3x slower, each pair alike
    ("F3.xot.not-slower", ABSENT, xot(tls_conns=1.0, tcp_rates=(400, 410, 390),
                                      tls_rates=(300, 310, 290))),
    ("F3.xot.not-slower", REVERSED, xot(tls_rate=200)),  # twice TCP's time
    ("F3.xot.not-slower", ABSENT, xot(tls_rate=340)),  # 1.18x TCP's time
    ("F3.xot.not-slower", UNMET_SETTING, xot(tls=False)),
    # F3, other experiments
    ("F3.tld.repeatable", PRESENT, tld(STEADY)),
    ("F3.tld.repeatable", ABSENT, tld([*STEADY[:9], 29.0])),
    ("F3.tld.repeatable", REVERSED, tld([20.0, 33.0] * 5)),  # every AXFR +-25 % off
    ("F3.tld.repeatable", UNMET, tld(STEADY, timing_source=None)),
    ("F3.tld.repeatable", UNMET, tld(STEADY[:2])),
    # passed by accident before: 3 steady repetitions (CI) are not the seed's 10
    ("F3.tld.repeatable", UNMET, tld(STEADY[:3])),
    # passed by accident before (relative standard deviation <= 2 %): times spread 1.9 %,
    # repetitions up to 2.8 % from the mean, against the seed's +-0.6 %
    ("F3.tld.repeatable", ABSENT, tld(SPREAD_1_9)),
    # run de8a (2026-11-26): 53-87 s while test suites used ~0.8 of a core beside it: the
    # machine, not the transfer, spread them; quiet, the same steady times still hold
    ("F3.tld.repeatable", UNMET, tld([62.7, 78.9, 86.7, 72.4, 58.2, 59.7, 56.1, 57.7, 53.1,
                                      55.3], other_load=[81.0, 85.0, 64.0] * 20)),
    ("F3.tld.repeatable", PRESENT, tld(STEADY, other_load=[2.0, 9.0, 4.0] * 20)),
    # the seed's .ch: 14 M records, 691 MB in 47,700 messages; the lab's 446.6 MB / 36,360
    ("F3.tld.size", PRESENT, tld(STEADY, records=14_000_001, bytes_=691_400_000,
                                 messages=47_650)),
    ("F3.tld.size", ABSENT, tld(STEADY, records=14_000_001, bytes_=446_600_000,
                                messages=36_360)),
    ("F3.tld.size", REVERSED, tld(STEADY, records=14_000_001, bytes_=900_000_000,
                                  messages=60_000)),
    ("F3.tld.size", UNMET, tld(STEADY, bytes_=4_466_000, messages=364)),  # 140,000 records
    ("F3.tld.size", UNMET, tld(STEADY, records=14_000_001)),  # sizes not logged
    ("F3.smallest.delay", PRESENT, smallest([0.02, 0.001, 0.01])),
    # its median +0.010 s was "reproduced", but one AXFR took -0.030 s by a log with +-0.001 s:
    # the median's interval reaches below the -3x-error edge
    ("F3.smallest.delay", STRADDLES, smallest([0.02, -0.03, 0.01])),
    ("F3.smallest.delay", ABSENT, smallest([3.0, 2.9, 3.2])),
    ("F3.smallest.delay", UNMET, smallest([0.02, 0.01], log_resolution_s=None)),
    # passed by accident before (|median| <= 0.5 s): the seed's clock artefact and a delay
    # 45x the lab's +-0.01 s error bar
    ("F3.smallest.delay", REVERSED, smallest([-0.354, -0.35, -0.36], error_s=0.01)),
    ("F3.smallest.delay", ABSENT, smallest([0.45, 0.44, 0.46], error_s=0.01)),
    ("F3.smallest.delay", PRESENT, smallest([0.012, 0.018, 0.015], error_s=0.01)),
    # failed by accident before: 0.21 s from process start is the daemon's start-up; the
    # AXFR itself took 0.000-0.001 s by the secondary's log
    ("F3.smallest.delay", PRESENT, smallest([0.21, 0.22, 0.21], error_s=0.007,
                                            log_spans={"knot": [0.0, 0.001, 0.0]})),
    ("F3.sweep.nonlinear", PRESENT, sweep({50: 5.0, 100: 10.0, 200: 80.0, 400: None})),
    # passed by accident before (~10^6x): the two smallest counts tie or the second is faster
    ("F3.sweep.nonlinear", UNMET, sweep({50: 10.0, 100: 10.0, 200: 20.0, 400: 40.0})),
    ("F3.sweep.nonlinear", UNMET, sweep({50: 10.0, 100: 9.0, 200: 20.0, 400: 40.0})),
    # ... and with a third count below the range the tie no longer hides a linear sweep
    ("F3.sweep.nonlinear", ABSENT, sweep({50: 10.0, 100: 10.0, 200: 20.0, 400: 40.0},
                                         ports=250)),
    # passed by accident before: stalled at a 30 s deadline where the line predicts 40 s
    ("F3.sweep.nonlinear", UNMET, sweep_deadline({50: 5.0, 100: 10.0, 200: 20.0, 400: None},
                                                 30.0)),
    ("F3.sweep.nonlinear", PRESENT, sweep_deadline({50: 5.0, 100: 10.0, 200: 20.0,
                                                    400: None}, 120.0)),
    # passed by accident before: time per zone grows with no port ever running out
    ("F3.sweep.nonlinear", UNMET, sweep({50: 5.0, 100: 10.0, 200: 80.0, 400: None},
                                        failures=0, tw_peak=40.0)),
    # TIME_WAIT at the range without a failure is the mechanism too
    ("F3.sweep.nonlinear", PRESENT, sweep({50: 5.0, 100: 10.0, 200: 80.0, 400: None},
                                          failures=0, tw_peak=100.0)),
    ("F3.sweep.nonlinear", UNMET, sweep({50: 5.0, 100: 10.0, 200: 80.0, 400: None},
                                        control=False)),  # no wide-ports control
    # the wide-ports control as superlinear (or stalled): not the ports
    ("F3.sweep.nonlinear", ABSENT, sweep({50: 5.0, 100: 10.0, 200: 80.0, 400: None},
                                         control=100.0)),
    ("F3.sweep.nonlinear", ABSENT, sweep({50: 5.0, 100: 10.0, 200: 80.0, 400: None},
                                         control=None)),
    ("F3.sweep.nonlinear", ABSENT, sweep({50: 5.0, 100: 10.0, 200: 20.0, 400: 40.0})),
    # a fixed start-up cost: time per zone falls 0.6 -> 0.16 s, the margin is constant
    ("F3.sweep.nonlinear", REVERSED, sweep({50: 30.0, 100: 35.0, 200: 45.0, 400: 65.0})),
    ("F3.sweep.nonlinear", UNMET, sweep({20: 2.0, 40: 4.0, 80: 8.0})),
    ("F3.sweep.nonlinear", UNMET, sweep({50: 5.0, 400: None})),
]
