"""F3 claims (zone transfers, seed 002) as tests over `xfr-*` runs.

Raw data read (docs/architecture.md, "Zone-transfer cells"), turned into figures by
`analysis.derived.cold_start`:
- xfr-30k-zones: cells with param `profile` = `default`, `wide-ports`, `tw-buckets*`; the
  secondary's `xfr_events.csv` (connect failures), `zones_done.csv` (zones served over time),
  `monitor/<secondary>.csv` (TIME_WAIT, TCP active opens) and its port range read back
  (meta.json, per cell and node).
- xfr-tld / xfr-smallest: one cell per secondary; figure `delays_s` (one time per
  repetition), `timing_source` (what the time was measured from) and `error_s`.
- xfr-zone-sweep: cells with param `zones` (and optionally `profile`), figure
  `total_time_s` and `port_range_size`.

An xfr-30k-zones run may hold several series: one per transport (TCP, TLS) and repetition
(cell params `transport`, `rep`), besides its calibration cells (`phase: calibrate`, never
judged). Each 30k claim is judged in every series (the default cell and the other profile's
cell of the same transport and repetition): reproduced when every series whose precondition
holds shows the effect, not reproduced when one does not (the measured text names it), not
applicable when no series meets the precondition.

The mechanism needs a precondition the seed's machine met and a slow one may not: TIME_WAIT
settles near (new connections/s) x 60 s, so the port range is exhausted only when that
product, capped by the zone count, reaches the range size. A run that cannot exhaust its
range says "not applicable" with the measured rate, never "not reproduced".

What the lab changed is in every verdict's conditions: the port range the default cells ran
with when it is not the seed's (read back from the cells, so runs that predate the record of
the choice are described correctly), with the rate it was sized from (meta.json
`port_range_choice`), and a zone count or TIME_WAIT cap other than the seed's. The seed's
exact condition (30,000 zones against 32768-60999) is judged on its own
(`F3.seed-range.exhaustion`, on the cells that ran with that range: the calibration cold
starts) and says "not applicable" with the measured peak and rate where it cannot exhaust.

Seed 002 states the failure, its mechanism and its time; it does not state that a wide range
or a TIME_WAIT cap avoids it, nor that a wide range is faster (it shows the cap only as a CPU
chart under "Tak určitě ...", and warns against it): those are lab checks (`LAB_CHECK`),
reported apart from the reproductions.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass
from fnmatch import fnmatchcase

import numpy as np

from analysis.claim import (
    CALIBRATION,
    DIRECTIONAL,
    LAB_CHECK,
    MACHINE,
    SETTING,
    TWO_SIDED,
    Judged,
    Verdict,
    claim,
    decide,
    fmt_s,
    not_applicable,
    require,
)
from analysis.derived import require_quiet
from analysis.rundata import Cell, NotApplicable, Run, combined_cause
from analysis.stats import mean_interval, median_interval, ratio_of_means_interval
from dnslab.errors import LabError
from dnslab.sysctl import load_profile
from experiments.f3_xfr.derived import (
    SEED_PORT_RANGE,
    SEED_PORTS,
    TLD_SPREAD_BAND,
    TLD_TIMER_ROOM,
    ColdStart,
    cold_start,
    connection_rate,
    connections_per_zone,
    finite_delays,
    is_finite,
    log_timed_transfers,
    port_range_read_back,
    time_ports_used,
    tw_at,
)
from experiments.f3_xfr.port_range import PORT_RANGE_KEY, SEED_FAILURE_S
from experiments.f3_xfr.port_range import SEED_STATED_PORTS as SEED_RANGE
from experiments.f3_xfr.port_range import TW_BUCKETS_KEY as TW_KEY

SEED_RATE = SEED_RANGE / SEED_FAILURE_S  # ~743 new connections/s on the seed's machine
SEED_ZONES = 30_000
SEED_TW_BUCKETS = 1000
# the straight line must rise by this share of the mean time across the counts below the
# range: a flat (or falling) line gives no time per zone, and any count would look superlinear
MIN_RISE = 0.05
SHRINK_HINT = "a smaller port range on the secondary (ip_local_port_range) or more zones"
SOURCE_30K = "seed 002, the 30k-zone cold start: log line at ~38 s and the port arithmetic"


@dataclass
class Series:
    """The cold-start cells of one transport and repetition (the whole run when it has
    neither)."""

    label: str
    cells: list[Cell]

    def cell(self, profile: str) -> Cell:
        found = [c for c in self.cells if fnmatchcase(str(c.params.get("profile")), profile)]
        if not found:
            raise NotApplicable(f"no cell with profile={profile}"
                                + (f" in {self.label}" if self.label else ""), cause=SETTING)
        if len(found) > 1:
            raise LabError(f"{len(found)} cells with profile={profile}"
                           + (f" in {self.label}" if self.label else ""),
                           hint="one cell per profile, transport and repetition")
        return found[0]


def series(run: Run) -> list[Series]:
    """The run's cold-start cells grouped by transport and repetition (calibration cells
    left out)."""
    groups: dict[tuple[str, str], list[Cell]] = {}
    for cell in run.cells:
        if cell.params.get("phase") == "calibrate":
            continue
        key = (str(cell.params.get("transport", "")), str(cell.params.get("rep", "")))
        groups.setdefault(key, []).append(cell)
    several_reps = len({rep for _, rep in groups}) > 1
    out = []
    for (transport, rep), cells in sorted(groups.items()):
        parts = ([transport] if transport else []) + ([f"rep {rep}"] if several_reps else [])
        out.append(Series(" ".join(parts), cells))
    return out


def _span(values: list[float], fmt: str = "{:,.0f}") -> str:
    """'a' or 'a-b' (the smallest and largest of the values, formatted)."""
    low, high = fmt.format(min(values)), fmt.format(max(values))
    return low if low == high else f"{low}-{high}"


def profile_sets_range(run: Run, profile: str) -> bool:
    """Whether a profile sets ip_local_port_range itself (wide-ports: its own range, not one
    the lab scaled): meta.json's record of the profile, else the profile file."""
    entry = (run.meta.get("profiles") or {}).get(profile)
    if entry is not None:
        return PORT_RANGE_KEY in (entry.get("sysctls") or {})
    try:
        return PORT_RANGE_KEY in load_profile(profile).sysctls
    except LabError:
        return False


def range_condition(run: Run, cells: list[Cell], sized: bool = False) -> str:
    """What the lab changed in the port range of the judged cells, from the range read back
    on each cell's secondary (the seed's 32768-60999 is no change, nor a range the profile
    sets itself: empty). `sized`: said as what it was sized for (the seconds the run sized
    the range to run out at, meta.json `port_range_choice` or the run's `failure_at_s`), for
    a claim whose figure that sizing sets."""
    sizes, rates = [], []
    for cell in cells:
        if profile_sets_range(run, str(cell.params.get("profile", "default"))):
            continue
        read_back = port_range_read_back(run, cell)
        ports = (int(cell.figure("port_range_size")) if read_back is None
                 else int(read_back.split()[1]) - int(read_back.split()[0]) + 1)
        if ports != SEED_PORTS:
            sizes.append(ports)
            rate = connection_rate(run, cell)
            rates += [rate] if rate is not None else []
    if not sizes:
        return ""
    at = sized_at(run, cells)
    if sized and at is not None:
        return (f"range sized to run out at {at:g} s ("
                + (f"{_span(rates)} conn/s; " if rates else "")
                + f"seed: {SEED_RANGE:,} at ~{SEED_RATE:,.0f}/s)")
    ports = (_span(sizes) if min(sizes) == max(sizes) or min(sizes) < 10_000
             else f"{min(sizes) / 1000:.1f}k-{max(sizes) / 1000:.1f}k")  # numbers rounded
    return (f"range scaled to {ports} ports"
            + (f" for {_span(rates)} conn/s" if rates else "")
            + f" (seed: {SEED_RANGE:,} at ~{SEED_RATE:,.0f}/s)")


def sized_at(run: Run, cells: list[Cell]) -> float | None:
    """The seconds the run sized the default cells' port range to run out at (PORT_RANGE=auto:
    connections/s x FAILURE_AT_S, the seed's 38 s), from meta.json's `port_range_choice` for
    the cells' secondaries, else the run's `failure_at_s`; None when the run says neither."""
    choices = run.meta.get("port_range_choice") or {}
    found = {float(choices[key]["failure_at_s"]) for cell in cells
             if (key := f"{cell.params.get('secondary', '')},"
                        f"{cell.params.get('transport', 'tcp')}") in choices
             and choices[key].get("failure_at_s") is not None}
    if found:
        return max(found)
    value = run.params.get("failure_at_s")
    return float(value) if value is not None else None


def zones_condition(cells: list[Cell]) -> str:
    zones = sorted({int(c.figure("zones", optional=True) or c.params.get("zones") or 0)
                    for c in cells})
    if not zones or zones == [SEED_ZONES]:
        return ""
    return f"{_span([float(z) for z in zones])} zones (seed: {SEED_ZONES:,})"


def lab_conditions(run: Run, verdict: Verdict, cells: list[Cell], sized: bool = False) -> None:
    """The conditions the lab changed for these cells, into the verdict."""
    for text in (range_condition(run, cells, sized), zones_condition(cells)):
        verdict.condition(text)


def judge(run: Run, verdict: Verdict, check: Callable[[Series], str],
          phrase: Callable[[], str] | None = None, profile: str = "default",
          sized: bool = False) -> None:
    """Run `check` on every series (it returns what it measured, raises AssertionError for
    an absent effect or NotApplicable for an unmet precondition) and combine: see the module
    docstring. `phrase` gives the verdict's short phrase from what the checks saw; the
    conditions come from the series' cells of `profile`."""
    everything = series(run)
    lab_conditions(run, verdict, [c for one in everything for c in one.cells
                                  if fnmatchcase(str(c.params.get("profile")), profile)],
                   sized)
    measured, failed, unmet, causes = [], [], [], []
    for one in everything:
        prefix = f"{one.label}: " if one.label else ""
        try:
            measured.append(prefix + check(one))
        except NotApplicable as exc:
            unmet.append(prefix + str(exc))
            causes.append(exc)
        except AssertionError as exc:
            measured.append(prefix + (verdict.measured or str(exc)))
            failed.append(prefix + str(exc))
        verdict.measured = None
    if not measured:
        raise NotApplicable("; ".join(unmet) or "no cold-start cells in this run",
                            cause=combined_cause(causes))
    verdict.measured = "; ".join(measured)
    verdict.basis = (f"each of {len(measured)} series (transport and repetition) judged on "
                     "its own" if len(measured) > 1 else None)
    if phrase is not None:
        verdict.phrase = phrase()
    if unmet:
        verdict.note("not judged: " + "; ".join(unmet))
    assert not failed, "; ".join(failed)


def _exhaustible(cs: ColdStart) -> None:
    require(cs.exhaustion_predicted,
            f"at most {cs.attempts_per_tw:,.0f} connection attempts in any 60 s (peak "
            f"{cs.open_rate_per_s:,.0f}/s; {cs.zones:,} zones) < {cs.ports:,} ports",
            SHRINK_HINT, cause=SETTING)


def _did_the_work(cs: ColdStart, default: ColdStart, profile: str) -> None:
    """Precondition of a 'fix': it made at least as many connection attempts within 60 s as
    the default's range has ports, so it could have failed the same way."""
    require(cs.attempts_per_tw >= default.ports,
            f"{profile} made at most {cs.attempts_per_tw:,.0f} connection attempts in any "
            f"60 s, fewer than the default's {default.ports:,} ports: it could not fail",
            "the same zone count and load as the default profile", cause=SETTING)


def _default(run: Run, one: Series) -> tuple[Cell, ColdStart]:
    cell = one.cell("default")
    return cell, cold_start(run, cell)


def _default_failed(run: Run, one: Series) -> ColdStart:
    """Precondition of the 'fixes': the default profile must have shown the failures."""
    _, cs = _default(run, one)
    require(cs.connect_failures > 0,
            f"the default profile had no connect failures ({cs.predicted_tw_peak:,.0f} "
            f"TIME_WAIT predicted for {cs.ports:,} ports): nothing to fix", SHRINK_HINT,
            cause=SETTING)
    return cs


@claim(
    "F3.default.tw-ceiling",
    title="Profile default: TIME_WAIT climbs to the ephemeral port-range size and plateaus",
    published="closed transfer connections sit 60 s in TIME_WAIT and fill the 28,231-port "
              "range (32768-60999)",
    source=SOURCE_30K, effect=TWO_SIDED,
    tolerance="peak TIME_WAIT between {low:.0%} and {high:.0%} of the port range",
    precondition="exhaustion predicted: the most connection attempts (opened + refused) in "
                 "any 60 s, capped at the zone count, >= the port range read back",
    fails_when="TIME_WAIT stays below {low:.0%} of the range although exhaustion was "
               "predicted, or exceeds it by more than {high:.0%} (the range is not the ceiling)",
    limits={"low": 0.90, "high": 1.05},
)
def test_default_tw_ceiling(run: Run, verdict: Verdict, low: float, high: float) -> None:
    ratios: list[float] = []

    def check(one: Series) -> str:
        _, cs = _default(run, one)
        _exhaustible(cs)
        ratio = cs.tw_peak / cs.ports
        ratios.append(ratio * 100)
        verdict.measured = f"peak TIME_WAIT {cs.tw_peak:,.0f} = {ratio:.0%} of {cs.ports:,} ports"
        assert low <= ratio <= high, f"TIME_WAIT peak is {ratio:.0%} of the port range"
        return verdict.measured or ""

    judge(run, verdict, check,
          lambda: f"TIME_WAIT peak {_span(ratios)} % of range" if ratios else "")


@claim(
    "F3.default.connect-failures",
    title="Profile default: connect failures occur, starting while TIME_WAIT is at the ceiling",
    published="at 30k zones the secondary logs 'failed to connect: address not available' "
              "once the 28,231 ports are all in TIME_WAIT",
    source=SOURCE_30K, effect=DIRECTIONAL,
    tolerance="connect failures >= {min_failures}; TIME_WAIT at the first failure (the "
              "1 Hz sample within 1 s after it: TIME_WAIT only grows in a cold start's first "
              "60 s) >= {at_ceiling:.0%} of the port range",
    precondition="exhaustion predicted (as F3.default.tw-ceiling)",
    fails_when="no connect failure although exhaustion was predicted, or failures that start "
               "before TIME_WAIT reaches the ceiling (another cause)",
    limits={"min_failures": 1, "at_ceiling": 0.90},
)
def test_default_connect_failures(run: Run, verdict: Verdict, min_failures: int,
                                  at_ceiling: float) -> None:
    failures: list[float] = []
    shares: list[float] = []

    def check(one: Series) -> str:
        cell, cs = _default(run, one)
        _exhaustible(cs)
        failures.append(cs.connect_failures)
        if cs.connect_failures < min_failures or cs.first_connect_failure_s is None:
            verdict.measured = f"{cs.connect_failures} connect failures"
            raise AssertionError("no connect failures with the default port range")
        tw = tw_at(run, cell, cs.first_connect_failure_s)
        shares.append(100 * tw / cs.ports)
        verdict.measured = (f"{cs.connect_failures:,} connect failures, first at "
                            f"{cs.first_connect_failure_s:.1f} s with TIME_WAIT {tw:,.0f} = "
                            f"{tw / cs.ports:.0%} of {cs.ports:,} ports")
        assert tw >= at_ceiling * cs.ports, "failures started before TIME_WAIT reached the ceiling"
        return verdict.measured or ""

    def phrase() -> str:
        if not failures:
            return ""
        text = f"{_span(failures)} connect failures"
        return text + (f" at TIME_WAIT {_span(shares)} %" if shares else "")

    judge(run, verdict, check, phrase)


@claim(
    "F3.default.failure-time",
    title="Profile default: the first failure comes when connections opened = port-range size "
          "(a mechanism check where the range was sized to run out at the seed's 38 s)",
    published="first 'address not available' ~38 s after start with a 28,231-port range "
              "(~740 new connections/s)",
    source=SOURCE_30K, effect=TWO_SIDED,
    tolerance="first failure within {low:.0%}-{high:.0%} of the time the secondary had "
              "opened as many TCP connections as the range has ports (+-{slack_s} s sampling): "
              "the mean of that ratio over every series, its whole 95 % t interval in the band "
              "(an interval across an edge: inconclusive)",
    precondition="exhaustion predicted (as F3.default.tw-ceiling), and the ports took long "
                 "enough to run out for the band to be wider than the 1 Hz monitor's "
                 "+-{slack_s} s (predicted time x (1 - {low}) >= {slack_s} s)",
    fails_when="no failure in a series, or the first failure's mean ratio much earlier or "
               "later than the port arithmetic says (its whole interval outside the band)",
    limits={"low": 0.80, "high": 1.25, "slack_s": 1.0},
    note="Where the lab sized the default's range to run out at 38 s (PORT_RANGE=auto: the "
         "calibration's connections/s x 38), a first failure near 38 s partly restates that "
         "design: what this checks is the mechanism (the failure comes when the connections "
         "opened reach the range), and the verdict's line says so. Only the seed's own range "
         "(PORT_RANGE=seed) times the failure independently.",
    interval=True,
)
def test_default_failure_time(run: Run, verdict: Verdict, low: float, high: float,
                              slack_s: float) -> None:
    """Judged on the first failure's time over the time the range was used up, averaged over
    every series (transport and repetition) with its t interval: the three full runs of
    2026-11-26 read 39-53 s, 36-48 s and 27-57 s, and a rule that failed on any one series
    outside the band gave reproduced, reproduced, not reproduced for the same mechanism. A
    series with no failure at all, or whose ports were never used up, still fails on its own
    (the effect is absent there, whatever the others show)."""
    firsts: list[float] = []
    ratios: list[float] = []
    predictions: list[float] = []
    scaled = bool(range_condition(run, [c for one in series(run) for c in one.cells
                                        if c.params.get("profile") == "default"]))

    def check(one: Series) -> str:
        cell, cs = _default(run, one)
        _exhaustible(cs)
        first = cs.first_connect_failure_s
        predicted = time_ports_used(run, cell, cs.ports)
        verdict.measured = (f"first failure {fmt_s(first)}, {cs.ports:,} connections opened at "
                            f"{fmt_s(predicted)}")
        require(predicted is None or predicted * (1 - low) >= slack_s,
                f"the ports ran out {fmt_s(predicted)} after start: within the 1 Hz "
                f"monitor's +-{slack_s:.0f} s the band cannot tell a failure then from one "
                "at the start", "a range the secondary uses up in >= 5 s (FAILURE_AT_S)",
                cause=SETTING)
        assert first is not None, "no connect failure"
        assert predicted is not None, "the secondary never opened as many connections as ports"
        firsts.append(first)
        ratios.append(first / predicted)
        predictions.append(predicted)
        return (verdict.measured or "") + f" ({first / predicted:.2f}x)"

    judge(run, verdict, check, lambda: (f"ran out at {_span(firsts)} s" if firsts
                                         else "no failure"), sized=True)
    # the monitor's +-1 s, in the ratio's units at the series' mean time to use up the range
    slack = slack_s / statistics.fmean(predictions)
    figure = Judged("first failure / ports used up", mean_interval(ratios).of("cold starts"),
                    low=low - slack, high=high + slack, unit="x")
    span = f"{_span(firsts)} s"
    verdict.phrase = (f"mechanism check: first failure at {figure.value()} the time ports "
                      f"ran out ({span})" if scaled else
                      f"ports ran out at {figure.value()} the port arithmetic's time ({span})")
    decide(verdict, figure)


def seed_range_cells(run: Run) -> list[Cell]:
    """Cells whose secondary ran the default profile with the seed's exact port range
    (32768-60999 read back): the calibration cold starts of PORT_RANGE=auto, every default
    cell of PORT_RANGE=seed."""
    return [c for c in run.cells if c.params.get("profile", "default") == "default"
            and port_range_read_back(run, c) == SEED_PORT_RANGE]


def _cold_start_label(cell: Cell) -> str:
    """A cold start named as a speaker reads it ("tcp calibration", "tls rep 1"), not by
    every parameter its run varied (versions, nodes, options)."""
    p = cell.params
    return " ".join([str(p.get("transport", "tcp")),
                     *(["calibration"] if p.get("phase") == "calibrate" else []),
                     *([f"rep {p['rep']}"] if "rep" in p else [])])


@claim(
    "F3.seed-range.exhaustion",
    title="The seed's exact condition: the default 28,231-port range runs out",
    published="30,000 zones, ip_local_port_range 32768-60999: 'failed to connect: address "
              "not available' ~38 s after start (~743 new connections/s)",
    source=SOURCE_30K, effect=DIRECTIONAL,
    tolerance="connect failures >= 1, starting with TIME_WAIT >= {at_ceiling:.0%} of the "
              "seed's range (the 1 Hz sample within 1 s after the first)",
    precondition="a default cell that ran with the seed's range read back (the calibration "
                 "cold starts, or PORT_RANGE=seed), and exhaustion predicted there: the most "
                 "connection attempts in any 60 s, capped at the zone count, >= the range",
    fails_when="no connect failure although the machine opened connections fast enough to "
               "fill the seed's range, or failures before TIME_WAIT reached it",
    limits={"at_ceiling": 0.90},
)
def test_seed_range_exhaustion(run: Run, verdict: Verdict, at_ceiling: float) -> None:
    """The seed's own numbers (28,231 ports, 30,000 zones, a machine doing ~743 connections/s)
    judged where the lab ran them. A slower machine settles TIME_WAIT near rate x 60 s below
    the range: not applicable, with the peak and the rate (e.g. "peak TIME_WAIT 20,120 of
    28,232 ports at 447 conn/s"), which is why the default cells run a scaled range."""
    cells = seed_range_cells(run)
    if not cells:
        not_applicable(f"no default cell ran with the seed's range {SEED_PORT_RANGE}",
                       cause=SETTING)
    verdict.condition(zones_condition(cells))
    judged, unmet, failed = [], [], []
    peaks: list[float] = []
    ports: list[float] = []
    rates: list[float] = []
    for cell in cells:
        cs = cold_start(run, cell)
        peaks.append(cs.tw_peak)
        ports.append(cs.ports)
        rates.append(connection_rate(run, cell) or cs.open_rate_per_s)
        label = f"{_cold_start_label(cell)}: "
        if not cs.exhaustion_predicted:
            unmet.append(label + f"peak TIME_WAIT {cs.tw_peak:,.0f} of {cs.ports:,} ports at "
                         f"{rates[-1]:,.0f} conn/s, {cs.connect_failures:,} connect failures")
            continue
        first = cs.first_connect_failure_s
        tw = tw_at(run, cell, first) if first is not None else 0.0
        judged.append(label + f"{cs.connect_failures:,} connect failures"
                      + (f", first at {first:.1f} s with TIME_WAIT {tw:,.0f}"
                         if first is not None else ""))
        if first is None or tw < at_ceiling * cs.ports:
            failed.append(label + ("no connect failure" if first is None else
                                   f"failures from TIME_WAIT {tw:,.0f}"))
    verdict.phrase = (f"peak TIME_WAIT {_span(peaks)} of {_span(ports)} ports at "
                      f"{_span(rates)} conn/s")
    require(bool(judged), "; ".join(unmet) + " (the machine cannot fill the seed's range)",
            "a machine that opens ~743 connections/s, or the scaled range of the default "
            "cells (F3.default.*)", cause=MACHINE)
    verdict.measured = "; ".join(judged + unmet)
    if unmet:
        verdict.note("not judged: " + "; ".join(unmet))
    assert not failed, "; ".join(failed)


@claim(
    "F3.wide-ports.no-failures", kind=LAB_CHECK,
    title="Lab check: profile wide-ports has no connect failures",
    published="not stated by the seed (it names the 28,231-port range as the cause); the lab "
              "checks that a range wider than the connections of 60 s removes the failures",
    source="seed 002, the port arithmetic (the lab's check of it)", effect=DIRECTIONAL,
    tolerance="connect failures <= {max_failures}",
    precondition="the default profile had connect failures in the same run, and wide-ports "
                 "made as many connection attempts within 60 s as the default has ports",
    fails_when="the wide range still fails connects",
    limits={"max_failures": 0},
)
def test_wide_ports_no_failures(run: Run, verdict: Verdict, max_failures: int) -> None:
    failures: list[float] = []
    ports: list[float] = []

    def check(one: Series) -> str:
        default = _default_failed(run, one)
        cs = cold_start(run, one.cell("wide-ports"))
        _did_the_work(cs, default, "wide-ports")
        failures.append(cs.connect_failures)
        ports.append(cs.ports)
        verdict.measured = f"{cs.connect_failures} connect failures, port range {cs.ports:,}"
        assert cs.connect_failures <= max_failures, (
            f"{cs.connect_failures} connect failures with the wide port range")
        return verdict.measured or ""

    judge(run, verdict, check, lambda: f"{_span(failures)} connect failures with "
          f"{_span(ports)} ports" if failures else "")


@claim(
    "F3.wide-ports.faster", kind=LAB_CHECK,
    title="Lab check: profile wide-ports serves all zones sooner than default",
    published="not stated by the seed (its conclusion: many zones => many TCP connections => "
              "much tuning); the lab checks that the exhausted default is the slower one",
    source="seed 002, conclusion (the lab's check of it)", effect=DIRECTIONAL,
    tolerance="wide-ports total time < default total time x {max_ratio} (default not "
              "finishing counts as slower)",
    precondition="the default profile had connect failures in the same run",
    fails_when="wide-ports is as slow as default or slower, or does not finish",
    limits={"max_ratio": 1.0},
)
def test_wide_ports_faster(run: Run, verdict: Verdict, max_ratio: float) -> None:
    times: dict[str, list[float]] = {"wide-ports": [], "default": []}

    def check(one: Series) -> str:
        default = _default_failed(run, one)
        wide = cold_start(run, one.cell("wide-ports"))
        for name, cs in (("wide-ports", wide), ("default", default)):
            times[name] += [cs.total_time_s] if cs.total_time_s is not None else []
        verdict.measured = (f"wide-ports {fmt_s(wide.total_time_s)}, "
                            f"default {fmt_s(default.total_time_s)}")
        assert wide.total_time_s is not None, (
            "wide-ports did not serve all zones before the deadline")
        if default.total_time_s is not None:
            assert wide.total_time_s < default.total_time_s * max_ratio, (
                "wide-ports was not faster")
        return verdict.measured or ""

    def phrase() -> str:
        shown = {k: f"{_span(v)} s" if v else "stalled" for k, v in times.items()}
        return f"wide-ports {shown['wide-ports']}, default {shown['default']}"

    judge(run, verdict, check, phrase)


DANGER = ("tcp_max_tw_buckets destroys TIME_WAIT protection: beyond the cap the kernel drops "
          "closed connections' TIME_WAIT state ('time wait bucket table overflow'), so late "
          "segments of an old connection can corrupt a new one on the same port pair. The seed "
          "documents it as dangerous; never use it in production - widen "
          "ip_local_port_range instead.")


@claim(
    "F3.tw-buckets.no-failures", kind=LAB_CHECK,
    title="Lab check: profile tw-buckets has no connect failures (a dangerous 'fix')",
    published="not stated as a result by the seed: it shows tcp_max_tw_buckets=1000 only as a "
              "CPU chart under 'Tak určitě ...' and warns never to lower it; the lab checks "
              "that the kernel's cap frees the ports",
    source="seed 002, the tcp_max_tw_buckets slides (the lab's check of them)",
    effect=DIRECTIONAL,
    tolerance="connect failures <= {max_failures}",
    precondition="the default profile had connect failures in the same run; this profile "
                 "differs only by a cap that took (read back as requested, below the same "
                 "port range) and made as many attempts within 60 s as there are ports",
    fails_when="connects still fail with the TIME_WAIT cap",
    limits={"max_failures": 0},
    note=DANGER,
)
def test_tw_buckets_no_failures(run: Run, verdict: Verdict, max_failures: int) -> None:
    caps: list[float] = []
    seen: list[float] = []

    def check(one: Series) -> str:
        default = _default_failed(run, one)
        cell = one.cell("tw-buckets*")
        cs = cold_start(run, cell)
        _did_the_work(cs, default, "tw-buckets")
        limit = _cap_that_took(run, cell)
        require(limit < cs.ports and cs.ports == default.ports,
                f"tcp_max_tw_buckets={limit:,} with {cs.ports:,} ports (default: "
                f"{default.ports:,}): not the cap alone that differs",
                "the default's port range and a cap below it", cause=SETTING)
        verdict.measured = f"{cs.connect_failures} connect failures"
        caps.append(limit)
        seen.append(cs.connect_failures)
        assert cs.connect_failures <= max_failures, (
            f"{cs.connect_failures} connect failures despite the TIME_WAIT cap")
        return verdict.measured or ""

    try:
        judge(run, verdict, check, lambda: PHRASES[verdict.claim.id](caps, seen),
              profile="tw-buckets*")
    finally:
        cap_condition(verdict, caps)


@claim(
    "F3.tw-buckets.tw-capped", kind=CALIBRATION,
    title="Lab check: with tcp_max_tw_buckets set, TIME_WAIT never exceeds it",
    published="with tcp_max_tw_buckets=1000 closed connections no longer stay in TIME_WAIT",
    source="seed 002, the tcp_max_tw_buckets experiment", effect=DIRECTIONAL,
    tolerance="peak TIME_WAIT <= tcp_max_tw_buckets (read back) x {slack:.2f}",
    precondition="tcp_max_tw_buckets read back on the secondary",
    fails_when="the value read back differs from the one requested, or TIME_WAIT exceeds it",
    limits={"slack": 1.05},
    note=DANGER,
)
def test_tw_buckets_capped(run: Run, verdict: Verdict, slack: float) -> None:
    caps: list[float] = []
    seen: list[float] = []

    def check(one: Series) -> str:
        cell = one.cell("tw-buckets*")
        node = run.node_with_role("secondary", cell)
        value = cell.sysctl(node, TW_KEY)
        require(value is not None, "tcp_max_tw_buckets not read back on the secondary",
                "a run whose meta.json records the sysctls read back", cause=SETTING)
        asked = run.sysctls_requested_for(cell.id).get(node, {}).get(TW_KEY)
        limit = int(str(value))
        caps.append(limit)
        peak = cold_start(run, cell).tw_peak
        seen.append(peak)
        verdict.measured = (f"peak TIME_WAIT {peak:,.0f} with tcp_max_tw_buckets={limit:,}"
                            + (f" (requested {asked})" if asked not in (None, str(value)) else ""))
        assert asked is None or str(asked) == str(value), "the requested cap did not take"
        assert peak <= limit * slack, "TIME_WAIT went above the bucket limit"
        return verdict.measured or ""

    try:
        judge(run, verdict, check, lambda: PHRASES[verdict.claim.id](caps, seen),
              profile="tw-buckets*")
    finally:
        cap_condition(verdict, caps)


PHRASES: dict[str, Callable[[list[float], list[float]], str]] = {
    "F3.tw-buckets.no-failures":
        lambda caps, seen: f"{_span(seen)} failures" if seen else "",
    "F3.tw-buckets.tw-capped":
        lambda caps, seen: f"TW peak {_span(seen)}" if seen else "",
}


def cap_condition(verdict: Verdict, caps: list[float]) -> None:
    """A TIME_WAIT cap other than the seed's 1000 (scaled with a narrower range)."""
    if caps and set(caps) != {SEED_TW_BUCKETS}:
        verdict.condition(f"tw cap {_span(caps)} (seed: {SEED_TW_BUCKETS:,})")


def _cap_that_took(run: Run, cell: Cell) -> int:
    node = run.node_with_role("secondary", cell)
    value = cell.sysctl(node, TW_KEY)
    asked = run.sysctls_requested_for(cell.id).get(node, {}).get(TW_KEY)
    require(value is not None and (asked is None or str(asked) == str(value)),
            f"tcp_max_tw_buckets read back {value}, requested {asked}",
            "a kernel that takes the cap in the secondary's namespace", cause=MACHINE)
    return int(str(value))


def transport_pairs(run: Run) -> list[tuple[Cell, Cell]]:
    """(TCP cell, TLS cell) of the same profile and repetition, from the first profile that
    has both: wide-ports (no port exhaustion: the time is the transport's), else default."""
    cells = [c for c in run.cells if c.params.get("phase") != "calibrate"]
    for profile in ("wide-ports", "default"):
        pairs = []
        for tcp in (c for c in cells if c.params.get("profile") == profile
                    and c.params.get("transport") == "tcp"):
            tls = [c for c in cells if c.params.get("profile") == profile
                   and c.params.get("transport") == "tls"
                   and str(c.params.get("rep")) == str(tcp.params.get("rep"))]
            if tls:
                pairs.append((tcp, tls[0]))
        if pairs:
            return pairs
    return []


def back_to_back(run: Run, pairs: list[tuple[Cell, Cell]]) -> bool:
    """Whether each pair's two cold starts ran one right after the other (the run's cells in
    the order they started, calibrations aside): then a repetition's TCP and TLS times share
    the machine's state and are compared as pairs. Run 2712 ran every TCP cell first and the
    TLS ones ~20 minutes later: unpaired."""
    order = [c.id for c in run.cells if c.params.get("phase") != "calibrate"]
    return len(pairs) > 1 and all(abs(order.index(a.id) - order.index(b.id)) == 1
                                  for a, b in pairs)


@claim(
    "F3.xot.not-slower",
    title="XFR over TLS is not slower than over TCP",
    published="'XFR přes TLS může být rychlé ... náhodou' (XoT can be fast ... by chance), "
              "after the chart of mean transfer time TCP vs XoT; the conclusion asks whether "
              "connection reuse would help",
    source="seed 002, 'Průměrný čas přenosu: TCP vs. XoT' and the conclusion",
    effect=DIRECTIONAL,
    tolerance="for the same zones and profile, XoT's mean time per zone over the run's "
              "repetitions (each cold start's time to serve them all / zones) <= "
              "{max_time_ratio}x TCP's (10 % for the spread of a mean of cold starts), its whole "
              "95 % Fieller interval below that edge (paired where each repetition's TCP and "
              "TLS cold starts ran back to back; an interval across it: inconclusive); "
              "connection reuse is reported beside it (TCP connections opened per zone), not "
              "judged: the seed asks about it, it does not state it",
    precondition="TCP and TLS cold starts of the same profile and repetitions (wide-ports, "
                 "else default), every TLS one with all zones served",
    fails_when="XoT's mean time per zone is more than {max_time_ratio}x TCP's (its whole "
               "interval above), or XoT does not serve every zone",
    limits={"max_time_ratio": 1.10},
    interval=True,
)
def test_xot_not_slower(run: Run, verdict: Verdict, max_time_ratio: float) -> None:
    """The seed's XoT remark as its chart shows it: mean transfer time, TCP vs XoT. The old
    rule also required XoT to open <= 50 % of TCP's connections per zone, a condition the
    seed does not state (it asks about reuse in its conclusion): XoT made 20 % faster than
    TCP without reuse stayed "not reproduced". Reuse is now an observation in the text.

    The means are over the repetitions, as the seed's chart is a mean: in run 2712 a
    repetition's TCP and TLS cold starts ran ~20 minutes apart (every TCP cell first; the
    procedure now runs them back to back), so pairing them by number compared two unpaired
    samples, and one fast TCP cold start (43.3 s against 51.1 and 53.1 s) read as "XoT
    1.28x" where the means were 1.07x. Three full runs then read 1.07x, 1.24x and 1.01x
    against the 1.10x edge: the ratio of means is judged with its Fieller interval, paired
    when the pairs ran back to back (their covariance taken in), so a run whose three
    repetitions cannot tell 1.07x from 1.10x says "inconclusive" with what would."""
    pairs = transport_pairs(run)
    require(bool(pairs), "no TCP and TLS cold starts of the same profile and repetition",
            "TRANSPORTS=tcp,tls", cause=SETTING)
    lab_conditions(run, verdict, [c for pair in pairs for c in pair])
    parts, failed, reuse = [], [], []
    per_zone_s: dict[str, list[float]] = {"tcp": [], "tls": []}
    finished: list[tuple[float, float]] = []  # (TLS, TCP) time per zone of each finished pair
    for tcp, tls in pairs:
        per_zone = {name: connections_per_zone(run, c) for name, c in (("tcp", tcp), ("tls", tls))}
        starts = {name: cold_start(run, c) for name, c in (("tcp", tcp), ("tls", tls))}
        times = {name: cs.total_time_s for name, cs in starts.items()}
        mean = {name: (t / starts[name].zones if t is not None else None)
                for name, t in times.items()}
        ends = f"{tls.params.get('primary', '?')}->{tls.params.get('secondary', '?')}"
        share = per_zone["tls"] / per_zone["tcp"] if per_zone["tcp"] > 0 else float("inf")
        reuse.append(share * 100)
        parts.append(f"{ends} {tls.params.get('profile')}"
                     + (f" rep {tls.params['rep']}" if "rep" in tls.params else "")
                     + f": XoT {fmt_s(times['tls'])}, TCP {fmt_s(times['tcp'])} for "
                     f"{starts['tls'].zones:,} zones"
                     + (f" ({1000 * mean['tls']:.1f} vs {1000 * mean['tcp']:.1f} ms per zone)"
                        if mean["tls"] is not None and mean["tcp"] is not None else "")
                     + f"; reuse: {per_zone['tls']:.2f} vs {per_zone['tcp']:.2f} connections "
                     "per zone")
        for name in ("tcp", "tls"):
            if mean[name] is not None:
                per_zone_s[name].append(mean[name])
        if mean["tls"] is not None and mean["tcp"] is not None:
            finished.append((mean["tls"], mean["tcp"]))
        if mean["tls"] is None:
            failed.append(f"{ends}: XoT did not serve every zone")
    pairs_named = ", ".join(sorted({f"{t.params.get('primary', '?')}->"
                                    f"{t.params.get('secondary', '?')}" for _, t in pairs}))
    reps = f"{len(pairs)} repetition{'s' if len(pairs) != 1 else ''}"
    verdict.measured = "; ".join(parts)
    if not per_zone_s["tls"]:
        verdict.phrase = (f"XoT did not finish, {_span(reuse)} % of TCP's connections "
                          f"({pairs_named})")
    elif not per_zone_s["tcp"]:
        verdict.phrase = f"TCP did not finish, XoT did ({pairs_named}, {reps})"
    assert not failed, "; ".join(failed)
    if not per_zone_s["tcp"]:
        return  # XoT finished where TCP did not: not slower
    paired = back_to_back(run, pairs) and len(finished) == len(pairs)
    interval = (ratio_of_means_interval([a for a, _ in finished], [b for _, b in finished],
                                        paired=True) if paired else
                ratio_of_means_interval(per_zone_s["tls"], per_zone_s["tcp"]))
    figure = Judged("XoT/TCP mean time per zone", interval, high=max_time_ratio, unit="x")
    tls_mean = statistics.fmean(per_zone_s["tls"])
    tcp_mean = statistics.fmean(per_zone_s["tcp"])
    verdict.phrase = (f"XoT {figure.value()} TCP's mean time per zone over {reps} "
                      f"({1000 * tls_mean:.2f} vs {1000 * tcp_mean:.2f} ms), "
                      f"{_span(reuse)} % of its connections ({pairs_named})")
    decide(verdict, figure)


SEED_TLD = {"records": 14_000_000, "bytes": 691_000_000, "messages": 47_700}


def tld_size_condition(run: Run, verdict: Verdict) -> None:
    """The TLD zone's size when it is not the seed's .ch (records, bytes on the wire)."""
    records = sorted({int(c.figure("records", optional=True) or 0) for c in run.cells})
    if records and records[-1] and records[-1] < 0.9 * SEED_TLD["records"]:
        verdict.condition(f"{records[-1]:,} records (seed: 14 M)")
        return
    sizes = [float(c.figure("bytes", optional=True) or 0) for c in run.cells]
    if sizes and max(sizes) and abs(max(sizes) / SEED_TLD["bytes"] - 1) > 0.10:
        verdict.condition(f"{max(sizes) / 1e6:,.1f} MB (seed: 691 MB)")


@claim(
    "F3.tld.repeatable",
    title="TLD-size AXFR time is repeatable",
    published=".ch AXFR: 14 M records, 691 MB, ~26.5 s, +-0.6 % over 10 repetitions",
    source="seed 002, the .ch transfer table", effect=DIRECTIONAL,
    tolerance="every repetition within +-{max_dev:.1%} of the cells' mean transfer time (the "
              "seed's '+-0.6 %, 10 repetitions' read as the spread of its 10 times around "
              "their mean, the way a +- over a handful of runs is written; {room:.1%} points "
              "of room for the lab's own timer)",
    precondition=">= {min_reps} repetitions, each timed from the secondary's own transfer "
                 "log (start to end of the AXFR, not daemon start), with a timing error at "
                 "most {room:.1%} of the transfer time, on a quiet machine (processes outside "
                 "the lab <= 10 % of a core on average)",
    fails_when="a repetition failed or one lies more than {max_dev:.1%} from the mean",
    limits={"max_dev": TLD_SPREAD_BAND, "room": TLD_TIMER_ROOM, "min_reps": 10},
)
def test_tld_repeatable(run: Run, verdict: Verdict, max_dev: float, room: float,
                        min_reps: int) -> None:
    """The seed's +-0.6 % is a spread over 10 repetitions: fewer (CI runs 3) cannot show it,
    so they are not applicable with the count. Read as a standard deviation it would allow
    individual times ~1.5 % off; the old band (relative standard deviation <= 2 %, over 3x
    the seed's) passed a run whose times spread 1.9 %. The band is now the seed's figure
    plus the lab timer's room."""
    if not run.cells:
        not_applicable("no cells in this run", cause=SETTING)
    parts, worst = [], 0.0
    for cell in run.cells:
        delays = finite_delays(cell, required=True)
        reps = int(cell.figure("repetitions", optional=True) or len(delays))
        source = cell.figure("timing_source", optional=True) or "daemon start to SOA answer"
        require(source == "transfer-log",
                f"{cell.label}: times measured from {source} (include start-up)",
                "time each AXFR from the secondary's transfer log", cause=SETTING)
        require(reps >= min_reps, f"{cell.label}: {reps} repetition(s)",
                f"REPETITIONS>={min_reps}", cause=SETTING)
        assert len(delays) == reps, f"{cell.label}: {reps - len(delays)} repetition(s) failed"
        mean = statistics.fmean(delays)
        error = cell.figure("error_s", optional=True)
        require(error is not None and float(error) / mean <= room,
                f"{cell.label}: timing error {error} s on {mean:.2f} s",
                f"a timer finer than {room:.1%} of the transfer time", cause=SETTING)
        require_quiet(cell, f"its {len(delays)} transfers")
        dev = max(abs(d - mean) for d in delays) / mean
        rsd = statistics.stdev(delays) / mean
        worst = max(worst, dev)
        parts.append(f"{cell.label}: {mean:.2f} s, within +-{dev:.2%} of it (relative standard "
                     f"deviation {rsd:.2%}) over {len(delays)}")
        verdict.phrase = f"{mean:.1f} s, within +-{dev:.1%} over {len(delays)} AXFRs"
        verdict.basis = (f"the spread of {len(delays)} repetitions itself (every one against "
                         "their mean)")
    verdict.measured = "; ".join(parts)
    tld_size_condition(run, verdict)
    assert worst <= max_dev, f"a repetition {worst:.2%} from the mean"


@claim(
    "F3.tld.size", kind=CALIBRATION,
    title="Lab check: the lab's TLD transfer is the size of the seed's .ch",
    published=".ch AXFR: 14 M records, 691 MB in 47,700 DNS messages",
    source="seed 002, the .ch transfer table", effect=TWO_SIDED,
    tolerance="bytes on the wire and DNS messages per AXFR each within +-{band:.0%} of the "
              "seed's 691 MB and 47,700",
    precondition="a TLD zone of the seed's 14 M records (>= {min_share:.0%} of it) whose "
                 "AXFR the secondary's log sized (bytes, messages)",
    fails_when="the lab's zone carries far fewer or far more bytes or messages than .ch: "
               "its records are smaller or larger than the seed's, and the transfer time "
               "is not comparable",
    limits={"band": 0.10, "min_share": 0.90},
)
def test_tld_size(run: Run, verdict: Verdict, band: float, min_share: float) -> None:
    """The secondary's own log sizes the transfer. What to expect is modelled by zones/axfr.py
    (BIND 9.18's message split and compression): xfr-tld's signed zone ~700 MB in
    47,700-48,300 messages, the unsigned one ~445 MB in ~36,400 (run 2c96 measured 446.6 MB
    in 36,360)."""
    if not run.cells:
        not_applicable("no cells in this run", cause=SETTING)
    parts, off, phrases = [], [], []
    for cell in run.cells:
        records = int(cell.figure("records", optional=True) or 0)
        require(records >= min_share * SEED_TLD["records"],
                f"{cell.label}: {records:,} records (seed: 14 M)", "RECORDS=14000000",
                cause=SETTING)
        size, messages = cell.figure("bytes", optional=True), cell.figure("messages",
                                                                           optional=True)
        require(size is not None and messages is not None,
                f"{cell.label}: the AXFR's bytes and messages were not logged",
                "a secondary whose log sizes its transfers (BIND, Knot)", cause=SETTING)
        got = {"bytes": float(size), "messages": float(messages)}
        parts.append(f"{cell.label}: {records:,} records, {got['bytes'] / 1e6:,.1f} MB in "
                     f"{got['messages']:,.0f} messages")
        phrases.append(f"{got['bytes'] / 1e6:,.1f} MB in {got['messages']:,.0f} msgs")
        for key, value in got.items():
            if abs(value / SEED_TLD[key] - 1) > band:
                off.append(f"{cell.label}: {key} {value / SEED_TLD[key]:.0%} of the seed's")
    verdict.measured = "; ".join(parts)
    verdict.phrase = ", ".join(sorted(set(phrases))) + " (seed: 691 MB in 47,700)"
    assert not off, "; ".join(off)


# the seed's timestamps: zone loaded 2024-10-14T12:40:32Z (whole seconds), server started
# 12:40:32.646Z, so the true delay lies in -0.646..+0.354 s (it printed -0.354 s)
SEED_SMALLEST_BOUND_S = (-0.646, 0.354)


@claim(
    "F3.smallest.delay",
    title="Smallest zone (SOA + NS): the transfer takes ~0, below what the seed's clocks "
          "could resolve",
    published="delay 'tends to zero'; measured -0.354 s: loaded 12:40:32Z (whole seconds) "
              "minus started 12:40:32.646Z, so its delay lies in -0.646..+0.354 s",
    source="seed 002, the smallest-zone measurement and its 'Přesnost údajů' slide",
    effect=TWO_SIDED,
    tolerance="the AXFR's time by the secondary's own log (the lines that open and close it, "
              "or the daemon's own duration), median per cell, between -{errors}x its error "
              "(a transfer takes no negative time) and the seed's +{upper} s (what its "
              "timestamps could hide), the median's whole 95 % bootstrap interval",
    precondition="the secondary's log timed the AXFR in at least one repetition per cell, "
                 "with an error of at most {max_error_s} s",
    fails_when="the transfer visibly takes longer than the seed's clocks could hide (e.g. "
               "waits for a refresh timer instead of the NOTIFY), or comes out negative (two "
               "clocks: the seed's artefact)",
    limits={"errors": 3, "max_error_s": 0.1, "upper": SEED_SMALLEST_BOUND_S[1]},
    interval=True,
)
def test_smallest_delay(run: Run, verdict: Verdict, errors: int, max_error_s: float,
                        upper: float) -> None:
    """The seed's delay is (time the zone was loaded) - (time the server started), from the
    daemon's own log lines, one of them in whole seconds. The lab's host-clock delay (process
    start to the first authoritative SOA) holds the daemon's start-up, ~0.21 s, which the
    seed's "server start" line comes after: judged on it, a transfer of 0.000 s by the log
    failed. So the judged time is the AXFR's own, timed by the secondary's log (BIND's ms
    clock, or the daemon's "finished, 0.00 seconds" with +-0.01 s), and the process-start
    figure is reported beside it."""
    if not run.cells:
        not_applicable("no cells in this run", cause=SETTING)
    parts, figures, unmet = [], [], []
    for cell in run.cells:
        timed = log_timed_transfers(cell)
        delays = finite_delays(cell, required=True)
        started = (f"; {statistics.median(delays):+.3f} s from process start to the first "
                   "SOA answer" if delays else "")
        if not timed:
            unmet.append(f"{cell.label}: no repetition's AXFR timed by the secondary's log")
            continue
        error = max(e for _, e in timed)
        if error > max_error_s:
            unmet.append(f"{cell.label}: the log times the AXFR to +-{error:.3f} s")
            continue
        # a negative time beyond the error is the seed's two-clock artefact; above `upper`
        # the transfer took longer than the seed's clocks could hide
        figure = Judged(f"{cell.label}: AXFR", median_interval([t for t, _ in timed]),
                        low=-errors * error, high=upper, fmt="{:+.3f}", unit=" s")
        figures.append(figure)
        parts.append(f"{figure.text()} by its log (median, max "
                     f"{max(t for t, _ in timed):.3f}, error +-{error:.3f} s, n={len(timed)})"
                     + started)
    require(bool(parts), "; ".join(unmet), "a secondary whose log times its transfers (BIND "
            "with ms timestamps, Knot's or NSD's own duration)", cause=SETTING)
    verdict.measured = "; ".join(parts)
    medians = [f.interval.estimate for f in figures]
    lows, highs = [f.interval.low for f in figures], [f.interval.high for f in figures]
    verdict.phrase = (f"AXFR {_span(medians, '{:+.3f}')} s [{min(lows):+.3f}, "
                      f"{max(highs):+.3f}] by the secondaries' logs (seed: "
                      f"{SEED_SMALLEST_BOUND_S[0]}..+{upper} s)")
    if unmet:
        verdict.note("not judged: " + "; ".join(unmet))
    decide(verdict, *figures)


@claim(
    "F3.sweep.nonlinear",
    title="Cold-start time grows faster than the zone count once ports run out "
          "(profile default)",
    published="1k..100k zones: 'forget linear behaviour'; at 30k zones the secondary "
              "runs out of ports",
    source="seed 002, the zone-count sweep and conclusion", effect=DIRECTIONAL,
    tolerance="the largest count takes >= {min_spread}x the time a straight line (fixed "
              "start-up + time per zone) through the finished counts at or below the port "
              "range predicts for it (a count stalled at its deadline counts only when the "
              "deadline is >= {min_spread}x that prediction), while the wide-ports control "
              "at that count stays under {min_spread}x",
    precondition=">= {min_points} zone counts, the largest above the port range, >= 2 "
                 "finished counts at or below it whose time grows with the count; at the "
                 "largest count the ports ran out (connect failures, or TIME_WAIT >= "
                 "{at_range:.0%} of the range) and a wide-ports control ran the same count",
    fails_when="the largest count takes about what the straight line predicts (linear), or "
               "less, or the wide-ports control is as superlinear (not the ports)",
    limits={"min_spread": 1.3, "min_points": 3, "at_range": 0.90},
)
def test_sweep_nonlinear(run: Run, verdict: Verdict, min_spread: float, min_points: int,
                         at_range: float) -> None:
    """Judged per secondary against a line fitted where ports cannot run out. The old rule
    divided the marginal time between the two largest counts by that between the two
    smallest, `max(low, 1e-9)`: two small counts that took the same time (or the second
    less) made any sweep ~10^6x "superlinear", and a count that hit its deadline passed
    however short the deadline was. The second pass still passed a sweep whose time per zone
    grew with no port ever running out: the mechanism is now required (the ports ran out at
    the largest count) and so is its control (the same count with a wide range stays on the
    line)."""
    cells = run.cells_where(profile="default") or [
        c for c in run.cells if "profile" not in c.params]
    cells = [c for c in cells if "zones" in c.params and c.params.get("phase") != "calibrate"]
    counts = sorted({int(c.params["zones"]) for c in cells})
    require(len(counts) >= min_points, f"{len(counts)} zone count(s) with profile default",
            f"ZONES with >= {min_points} values", cause=SETTING)
    verdict.condition(range_condition(run, cells))
    if counts[-1] < 100_000:
        verdict.condition(f"counts {counts[0]:,}-{counts[-1]:,} (seed: 1,000-100,000)")
    by_secondary: dict[str, list[Cell]] = {}
    for cell in cells:
        by_secondary.setdefault(str(cell.params.get("secondary", "")), []).append(cell)
    parts, phrases, failed = [], [], []
    for secondary, group in sorted(by_secondary.items()):
        label = f"{secondary}: " if secondary else ""
        text, ratio, predicted = _sweep_ratio(run, group, min_spread)
        largest = max(group, key=lambda c: int(c.params["zones"]))
        text += "; " + _ports_ran_out(run, largest, at_range, label)
        control = [c for c in run.cells_where(profile="wide-ports")
                   if int(c.params.get("zones", -1)) == int(largest.params["zones"])
                   and str(c.params.get("secondary", "")) == secondary]
        require(bool(control), f"{label}no wide-ports control at {int(largest.params['zones']):,}"
                " zones: nothing shows the growth is the ports'",
                "the sweep's largest count again with wide ports (PROFILES=default,wide-ports)",
                cause=SETTING)
        value = control[0].figure("total_time_s", optional=True)
        wide = float(value) / predicted if value is not None and is_finite(value) \
            and predicted > 0 else float("inf")
        text += (f"; wide-ports control {fmt_s(float(value)) if value is not None else 'stalled'}"
                 f" ({wide:.2f}x the line)")
        parts.append(label + text)
        phrases.append((f"{secondary} " if secondary else "")
                       + f"{ratio:.1f}x linear, wide ports {wide:.1f}x")
        if ratio < min_spread:
            failed.append(f"{label}{ratio:.2f}x the linear time")
        if wide >= min_spread:
            failed.append(f"{label}the wide-ports control took {wide:.2f}x the linear time "
                          "too: not the ports")
    verdict.measured = "; ".join(parts)
    # short enough to stay whole beside the range condition on a 140-character line
    verdict.phrase = f"{counts[-1]:,} zones: {'; '.join(phrases)}"
    assert not failed, "time grows linearly with the zone count, or not by the ports: " \
        + "; ".join(failed)


def _ports_ran_out(run: Run, cell: Cell, at_range: float, label: str) -> str:
    """The port mechanism at a count: connect failures, or TIME_WAIT at the range (the
    cell's figures, else its raw files); not applicable when neither shows."""
    ports = int(cell.figure("port_range_size"))
    failures, peak = (cell.figure("connect_failures", optional=True),
                      cell.figure("tw_peak", optional=True))
    if failures is None or peak is None:
        try:
            cs = cold_start(run, cell)
        except LabError:
            not_applicable(f"{label}the connect failures and TIME_WAIT at "
                           f"{int(cell.params['zones']):,} zones were not recorded", cause=SETTING)
        failures, peak = cs.connect_failures, cs.tw_peak
    zones = int(cell.params["zones"])
    require(int(failures) > 0 or float(peak) >= at_range * ports,
            f"{label}at {zones:,} zones no connect failure and TIME_WAIT peaked at "
            f"{float(peak):,.0f} of {ports:,} ports: the ports never ran out",
            "a port range the largest count exhausts (PORT_RANGE=auto)", cause=SETTING)
    return (f"{int(failures):,} connect failures, TIME_WAIT peak {float(peak):,.0f} of "
            f"{ports:,} ports")


def _sweep_ratio(run: Run, cells: list[Cell], min_spread: float) -> tuple[str, float, float]:
    """(what was measured, the largest count's time over the line's prediction, the
    prediction) for the cells of one secondary; NotApplicable when the line or the largest
    count cannot be judged."""
    ports = max(int(c.figure("port_range_size")) for c in cells)
    total: dict[int, float | None] = {}
    deadline: dict[int, float | None] = {}
    for cell in cells:
        value = cell.figure("total_time_s")
        zones = int(cell.params["zones"])
        total[zones] = None if value is None or not is_finite(value) else float(value)
        limit = cell.figure("deadline_s", optional=True) or run.params.get("deadline_s")
        deadline[zones] = float(limit) if limit is not None else None
    counts = sorted(total)
    largest = counts[-1]
    require(largest > ports, f"largest count {largest:,} <= {ports:,} ports",
            "a zone count above the port range", cause=SETTING)
    linear = [n for n in counts if n <= ports and total[n] is not None]
    require(len(linear) >= 2, f"{len(linear)} finished count(s) at or below the {ports:,} "
            "ports", "two or more zone counts below the port range", cause=SETTING)
    slope, start_up = np.polyfit(linear, [float(total[n] or 0.0) for n in linear], 1)
    rise = slope * (linear[-1] - linear[0])
    times = [float(total[n] or 0.0) for n in linear]
    require(rise > MIN_RISE * float(np.mean(times)),
            f"the counts {', '.join(f'{n:,}' for n in linear)} took "
            f"{', '.join(f'{t:.1f} s' for t in times)}: no time per zone to "
            "extrapolate", "zone counts far enough apart to time", cause=SETTING)
    predicted = float(start_up + slope * largest)
    text = ", ".join(f"{n:,}: {'stalled' if total[n] is None else f'{total[n]:.1f} s'}"
                     for n in counts)
    measured = total[largest]
    if measured is None:
        limit = deadline[largest]
        require(limit is not None and limit >= min_spread * predicted,
                f"{largest:,} zones stalled at its {limit} s deadline, the line predicts "
                f"{predicted:.1f} s: too short a deadline to tell",
                f"a deadline >= {min_spread}x the linear time (DEADLINE_S)", cause=SETTING)
        assert limit is not None
        return (f"total time {text}; linear {predicted:.1f} s for {largest:,}, stalled past "
                f"{limit:.0f} s (>= {limit / predicted:.2f}x)"), limit / predicted, predicted
    ratio = measured / predicted if predicted > 0 else float("inf")
    return (f"total time {text}; linear {predicted:.1f} s for {largest:,} ({ratio:.2f}x)",
            ratio, predicted)
