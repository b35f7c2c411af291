"""Claims: a published figure, the band of the effect, its precondition, bound to one pytest test.

Each finding's package has a `claims.py` (`experiments/<finding>/claims.py`) that writes each
published claim as a test function:

    @claim(
        "F1.capacity-drop",
        title="Untuned capacity halves with the new records",
        published="stair capacity 24,000 -> 12,000 qps (ratio 0.50)",
        source="seed 000, results table: capacity row, old vs new records, untuned",
        effect=TWO_SIDED,
        tolerance="capacity(after)/capacity(before) = {ratio} +-{band}",
        precondition="the stair's step is at most {max_step:.0%} of the before capacity",
        fails_when="the ratio is outside the band: no drop, a drop too small, or a collapse",
        limits={"ratio": 0.50, "band": 0.15, "max_step": 0.05},
    )
    def test_capacity_drop(run, verdict, ratio, band, max_step):
        ...
        require(step <= max_step * before, f"step {step:,} qps = {step / before:.0%} of "
                f"{before:,} qps", "STAIR_STEP=<5 % of the capacity>", cause=SETTING)
        verdict.measured = "3,000 -> 2,000 qps (ratio 0.67)"
        assert abs(measured - ratio) <= band, f"capacity ratio {measured:.2f}"

The claim's finding is the package it is written in (its id, `F1.`, says the same and is
checked); which experiments a claim judges is said by the experiment files, whose `claims:`
list names it (as their `plots:` list names their plots).

Every claim states what a speaker needs to judge it:
- `published`: the figure, `source`: the seed and where in it;
- `effect`: TWO_SIDED when the seed gives a number (a band around it: too big an effect fails
  as well as too small), DIRECTIONAL when the seed gives a trend (a threshold in its direction);
- `tolerance`: the band or threshold, with the numbers of `limits` filled in;
- `precondition`: what the run must show before the effect can be judged; unmet, the verdict
  is "not applicable" with the measured figure and what to change (`require`), never a
  softened pass;
- `fails_when`: what measured outcome makes the verdict "not reproduced".
`kind=CALIBRATION` marks a check of the lab itself (the query mix gives the TCP share it was
built for, a model behaves as designed, the kernel enforces a limit), `kind=LAB_CHECK` a check
of a setting the seed does not state as a finding (a wide port range has no failures): both
are reported in a section of their own, never counted as reproductions (a consumer counts
`kind == REPRODUCTION` only).

Every verdict also carries one line for a slide (`analysis.verdicts` builds it): the status
word, the claim's short measured phrase (`verdict.phrase`, numbers rounded, its figure with the
interval first) and the conditions the lab changed against the seed (`verdict.condition(...)`:
a port range scaled to this machine's rate, fewer cores, loads scaled to a capacity), e.g.
"Reproduced: ports ran out 47 s after start; range scaled to 17,005 ports for 447 conn/s (seed:
28,231 at ~743/s)". Where the line is too long the conditions give way first (to their
essential clause, then whole), never the figure and its interval.

A figure over repetitions (or trials) is judged with its interval, never its point alone:
the claim builds a `Judged` (the figure's `analysis.stats.Interval` and its band's edges) and
calls `decide(verdict, ...)`, which records the interval in the verdict and is the same rule
for every claim: the whole interval inside the band = reproduced, the whole interval outside
it = not reproduced, an interval that straddles an edge = "inconclusive" (`Inconclusive`,
with the interval and the repetitions that would decide it, `stats.repetitions_to_decide`),
so a rerun that moves the figure a little cannot flip the verdict between reproduced and not
reproduced. A claim's phrase shows the interval (`Judged.text()`: "1.07x [0.87, 1.37]").
A rank test that decides by its p-value maps "cannot tell" to `Inconclusive` likewise. Each
verdict says what it rests on (`verdict.basis`): the interval's method and repetitions, each
repetition judged on its own, or "one measurement" (a claim with a single figure per
measurement, which has no interval to give).

An unmet precondition says what would judge it (`cause`, required at every raise): MACHINE
(cores, hosts, a NIC: nothing in the lab changes it) or SETTING (a parameter, a calibration, a
busy machine, a cell the run did not have), so the report, `make runs` and the book can count
judged / not applicable (machine) / not applicable (setting) per finding.

`limits` become test arguments (a one-case `pytest.mark.parametrize`), so the numbers the test
uses are exactly the numbers printed. The outcome is read by `analysis.verdicts`: pass =
reproduced, AssertionError = not reproduced, `Inconclusive` = inconclusive, `NotApplicable`
(`require`, `not_applicable`) = not applicable with its cause, `LabError` = a data error.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn

import pytest

from analysis.rundata import MACHINE, SETTING, NotApplicable
from analysis.stats import Interval, repetitions_to_decide
from dnslab import cpus, findings
from dnslab.errors import LabError

__all__ = ["MACHINE", "SETTING", "NotApplicable"]  # the claims import them from here

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not_reproduced"
INCONCLUSIVE = "inconclusive"
NOT_APPLICABLE = "not_applicable"
INCOMPLETE = "incomplete"
ERROR = "error"
STATUSES = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE, NOT_APPLICABLE, INCOMPLETE, ERROR)
JUDGED = (REPRODUCED, NOT_REPRODUCED, INCONCLUSIVE)
STATUS_MEANING = {
    REPRODUCED: "the run met the precondition and the measured effect lies in the band (its "
                "whole interval over the repetitions, where it has one)",
    NOT_REPRODUCED: "the run met the precondition and the effect is absent, reversed or "
                    "outside the band (its whole interval, where it has one; the measured "
                    "value says which)",
    INCONCLUSIVE: "the run met the precondition but the figure's interval over its "
                  "repetitions straddles the band's edge (or its rank test cannot tell): "
                  "the interval and the repetitions that would decide it are given",
    NOT_APPLICABLE: "the run cannot judge the claim: a precondition is unmet (with the "
                    "measured figure, what to change and whether that is the machine or a "
                    "setting) or the run has no such cell",
    INCOMPLETE: "the run was interrupted; the claim could not be judged on partial data",
    ERROR: "the run's data are missing or malformed (one line says which file)",
}

TWO_SIDED = "two-sided"
DIRECTIONAL = "directional"
REPRODUCTION = "reproduction"
CALIBRATION = "calibration"
LAB_CHECK = "lab_check"
KINDS = (REPRODUCTION, CALIBRATION, LAB_CHECK)

# the cases a claim's tests build (each finding's `cases.py`, CLAIM_CASES): the effect present
# (reproduced), absent or reversed (not reproduced), its interval straddling the band's edge
# (inconclusive), its precondition unmet (not applicable: UNMET_MACHINE / UNMET_SETTING say
# which cause the verdict must give, UNMET only that it gives one)
PRESENT, ABSENT, REVERSED, STRADDLES, UNMET = "present", "absent", "reversed", "straddles", "unmet"
UNMET_MACHINE, UNMET_SETTING = "unmet-machine", "unmet-setting"
CASE_STATUS = {PRESENT: REPRODUCED, ABSENT: NOT_REPRODUCED, REVERSED: NOT_REPRODUCED,
               STRADDLES: INCONCLUSIVE, UNMET: NOT_APPLICABLE, UNMET_MACHINE: NOT_APPLICABLE,
               UNMET_SETTING: NOT_APPLICABLE}
CASE_CAUSE = {UNMET_MACHINE: MACHINE, UNMET_SETTING: SETTING}
UNMET_CASES = (UNMET, UNMET_MACHINE, UNMET_SETTING)
ONE_MEASUREMENT = "one measurement (no repetitions to give it an interval)"



def finding_titles() -> dict[str, str]:
    """{finding id: its title and seed}, from the finding packages."""
    return {f.id: f"{f.title} (seed {f.seed})" for f in findings.all_findings()}


@dataclass(frozen=True)
class Claim:
    id: str
    finding: str
    title: str
    published: str
    source: str
    effect: str
    tolerance: str
    precondition: str
    fails_when: str
    kind: str = REPRODUCTION
    limits: dict[str, Any] = field(default_factory=dict)
    note: str = ""
    interval: bool = False  # its figure is judged with an interval (`decide`) or a rank test


REGISTRY: dict[str, Claim] = {}


def _package_finding(module: str) -> str | None:
    """The id of the finding package a module belongs to (None outside one)."""
    for found in findings.all_findings():
        if module == found.package or module.startswith(found.package + "."):
            return found.id
    return None


def claim(claim_id: str, *, title: str, published: str, source: str,
          effect: str, tolerance: str, precondition: str, fails_when: str,
          kind: str = REPRODUCTION, limits: dict[str, Any] | None = None,
          note: str = "", interval: bool = False) -> Callable[[Callable[..., None]], Any]:
    """Register a claim test; see the module docstring. `interval`: the claim judges a
    figure over repetitions with its interval (`decide`) or a test that can say
    "inconclusive", so its cases need one whose interval straddles the band's edge."""
    finding = claim_id.split(".", 1)[0]
    if finding not in {f.id for f in findings.all_findings()}:
        raise ValueError(f"{claim_id}: unknown finding {finding!r}")
    if effect not in (TWO_SIDED, DIRECTIONAL):
        raise ValueError(f"{claim_id}: effect must be {TWO_SIDED!r} or {DIRECTIONAL!r}")
    if kind not in KINDS:
        raise ValueError(f"{claim_id}: kind must be one of {', '.join(KINDS)}")
    limits = dict(limits or {})
    spec = Claim(id=claim_id, finding=finding, title=title, published=published,
                 source=source, effect=effect, tolerance=tolerance.format(**limits),
                 precondition=precondition.format(**limits),
                 fails_when=fails_when.format(**limits), kind=kind, limits=limits, note=note,
                 interval=interval)

    def decorate(func: Callable[..., None]) -> Any:
        home = _package_finding(func.__module__)
        if home is not None and home != finding:
            raise ValueError(f"claim {claim_id} is written in {func.__module__}, the package "
                             f"of {home}: a claim lives in its own finding's package")
        existing = REGISTRY.get(claim_id)
        if existing is not None and existing != spec:
            raise ValueError(f"claim id {claim_id!r} registered twice")
        REGISTRY[claim_id] = spec
        func.__claim__ = spec  # type: ignore[attr-defined]
        if limits:
            names = list(limits)
            func = pytest.mark.parametrize(names, [tuple(limits[n] for n in names)],
                                           ids=[claim_id])(func)
        return func

    return decorate


@dataclass
class Verdict:
    """Handed to each claim test as the `verdict` fixture: what it measured, in words
    (`measured`: every series and repetition; `phrase`: the few words of it a slide shows;
    `conditions`: what the lab changed against the seed, each a few words; `intervals`: each
    judged figure's interval and band, recorded by `decide`; `basis`: what the verdict rests
    on, e.g. "95 % t interval over 6 repetitions", "each of 6 repetitions on its own")."""

    claim: Claim
    measured: str | None = None
    notes: list[str] = field(default_factory=list)
    phrase: str | None = None
    conditions: list[str] = field(default_factory=list)
    intervals: list[dict[str, Any]] = field(default_factory=list)
    basis: str | None = None

    def note(self, text: str) -> None:
        self.notes.append(text)

    def condition(self, text: str) -> None:
        """A condition the lab changed against the seed (said once, in the verdict's line)."""
        if text and text not in self.conditions:
            self.conditions.append(text)


def not_applicable(reason: str, *, cause: str) -> NoReturn:
    """Stop a claim test: the run has no data the claim is about (never silent: it is
    reported), with what would give it: the MACHINE or a SETTING."""
    raise NotApplicable(reason, cause=cause)


def require(met: bool, measured: str, remedy: str, *, cause: str) -> None:
    """A precondition: unmet, the claim is "not applicable" with the measured figure, what
    to change (more cores, a faster machine, a parameter) and whether that is the MACHINE or
    a SETTING - never a softened pass."""
    if not met:
        raise NotApplicable(f"precondition unmet: {measured} (to judge it: {remedy})",
                            cause=cause, measured=True)


class Inconclusive(Exception):
    """The figure's interval straddles its band's edge (or the claim's own test cannot tell):
    the message gives the interval and the repetitions that would decide it."""


INSIDE, OUTSIDE, ACROSS = "inside", "outside", "straddles"


def _unbounded(value: float) -> bool:
    return not math.isfinite(value)


@dataclass(frozen=True)
class Judged:
    """One judged figure: `what` it is, its interval over the repetitions, and its band
    [low, high] (None: open on that side; a DIRECTIONAL claim has one edge). `fmt` formats
    the figure and its bounds, `unit` follows the figure (e.g. fmt "{:.2f}", unit "x":
    "1.07x [0.87, 1.37]")."""

    what: str
    interval: Interval
    low: float | None = None
    high: float | None = None
    fmt: str = "{:.2f}"
    unit: str = ""

    def _num(self, value: float) -> str:
        return "unbounded" if _unbounded(value) else self.fmt.format(value)

    def bracket(self) -> str:
        """The interval as a slide shows it, "[0.87, 1.37]" ("" for a single repetition)."""
        if self.interval.single:
            return ""
        return f"[{self._num(self.interval.low)}, {self._num(self.interval.high)}]"

    def value(self) -> str:
        """The figure and its interval: "1.07x [0.87, 1.37]"."""
        bracket = self.bracket()
        return f"{self._num(self.interval.estimate)}{self.unit}" + (f" {bracket}" if bracket
                                                                     else "")

    def text(self) -> str:
        return f"{self.what} {self.value()}" if self.what else self.value()

    def band(self) -> str:
        if self.low is not None and self.high is not None:
            return f"{self._num(self.low)}-{self._num(self.high)}{self.unit}"
        if self.low is not None:
            return f">= {self._num(self.low)}{self.unit}"
        return f"<= {self._num(self.high if self.high is not None else math.inf)}{self.unit}"

    def outcome(self) -> str:
        """INSIDE the band, OUTSIDE it, or ACROSS an edge (a single repetition: its point)."""
        lo, hi = self.interval.low, self.interval.high
        if self.interval.single:
            lo = hi = self.interval.estimate
        below = self.low is not None and hi < self.low
        above = self.high is not None and lo > self.high
        if below or above:
            return OUTSIDE
        if (self.low is None or lo >= self.low) and (self.high is None or hi <= self.high):
            return INSIDE
        return ACROSS

    def edge(self) -> float:
        """The band's edge the interval straddles (the nearer one when both)."""
        edges = [e for e in (self.low, self.high) if e is not None
                 and self.interval.low <= e <= self.interval.high]
        if not edges:
            edges = [e for e in (self.low, self.high) if e is not None]
        return min(edges, key=lambda e: abs(e - self.interval.estimate))

    def to_dict(self) -> dict[str, Any]:
        out = {"what": self.what, **self.interval.to_dict(), "band_low": self.low,
               "band_high": self.high, "outcome": self.outcome(), "text": self.text(),
               "bracket": self.bracket(), "decide_n": None}
        if self.outcome() == ACROSS:
            out["decide_n"] = repetitions_to_decide(self.interval, self.edge())
        return out


def decide_words(figure: Judged) -> str:
    """Why a figure is inconclusive, and what would decide it."""
    needed = repetitions_to_decide(figure.interval, figure.edge())
    more = (f"about {needed:,} {figure.interval.counted} would decide it at the spread seen"
            if needed is not None else
            "no practical number of repetitions decides it at the spread seen (the figure "
            "sits at the edge)" if math.isfinite(figure.interval.low)
            and math.isfinite(figure.interval.high) else
            "more repetitions, or a steadier machine, would bound it")
    return (f"{figure.text()} straddles the band's edge {figure._num(figure.edge())}"
            f"{figure.unit} ({figure.interval.describe()}): {more}")


def record_intervals(verdict: Verdict, *figures: Judged) -> None:
    """The figures' intervals into the verdict, and its basis: how they were made (kept as
    it was when no figure is given)."""
    verdict.intervals += [f.to_dict() for f in figures]
    bases = list(dict.fromkeys(f.interval.describe() for f in figures))
    verdict.basis = "; ".join(bases) if bases else verdict.basis


def decide(verdict: Verdict, *figures: Judged) -> None:
    """The one rule for figures with intervals: each figure's interval goes into the verdict;
    any figure whose whole interval lies outside its band fails the claim (AssertionError:
    not reproduced), else any whose interval straddles an edge makes it `Inconclusive`,
    else it holds. The verdict's basis says how the intervals were made."""
    record_intervals(verdict, *figures)
    outside = [f for f in figures if f.outcome() == OUTSIDE]
    if outside:
        raise AssertionError("; ".join(f"{f.text()} outside the band {f.band()}"
                                       for f in outside))
    across = [f for f in figures if f.outcome() == ACROSS]
    if across:
        raise Inconclusive("; ".join(decide_words(f) for f in across))


def decide_any(verdict: Verdict, *figures: Judged) -> None:
    """`decide` for a claim whose effect shows in either of its figures (F5's "qps lower or
    latency higher"): it holds when any figure's interval lies inside its band, fails when
    every one lies outside, and is `Inconclusive` otherwise."""
    record_intervals(verdict, *figures)
    outcomes = [f.outcome() for f in figures]
    if INSIDE in outcomes:
        return
    if all(o == OUTSIDE for o in outcomes):
        raise AssertionError("; ".join(f"{f.text()} outside the band {f.band()}"
                                       for f in figures))
    raise Inconclusive("; ".join(decide_words(f) for f in figures if f.outcome() == ACROSS))


def server_machine_cpus(meta: dict[str, Any]) -> int:
    """The CPUs of the machine the server under test ran on: across hosts its host's (what
    that host offered a process, meta.json `hosts.facts`), else the run's machine's."""
    host = (meta.get("placement") or {}).get("server_host")
    facts = ((meta.get("hosts") or {}).get("facts") or {}).get(host) if host else None
    if facts and facts.get("cpus"):
        return len(facts["cpus"])
    return int((meta.get("machine") or {}).get("cpus") or 0)


def cores_condition(meta: dict[str, Any], seed_cores: int, what: str) -> str:
    """"<what> on N of M cores (seed: K)" when the server under test had other than the
    seed's cores (meta.json `placement.server_cpus`, else the machine's; M: the machine the
    server ran on), else ""."""
    placement = meta.get("placement") or {}
    machine = server_machine_cpus(meta)
    try:
        cores = len(cpus.parse(placement["server_cpus"])) if placement.get("server_cpus") \
            else machine
    except (LabError, ValueError):
        cores = machine
    if not cores or cores == seed_cores:
        return ""
    counted = (f"{cores} of {machine} cores" if machine and machine != cores
               else f"{cores} core{'s' if cores > 1 else ''}")
    return f"{what} on {counted} (seed: {seed_cores})"


def fmt_s(value: float | None) -> str:
    return "not reached" if value is None else f"{value:.1f} s"
