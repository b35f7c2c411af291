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
                f"{before:,} qps", "STAIR_STEP=<5 % of the capacity>")
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
word, the claim's short measured phrase (`verdict.phrase`, numbers rounded) and the conditions
the lab changed against the seed (`verdict.condition(...)`: a port range scaled to this
machine's rate, fewer cores, loads scaled to a capacity), e.g. "Reproduced: ports ran out 47 s
after start; range scaled to 17,005 ports for 447 conn/s (seed: 28,231 at ~743/s)".

`limits` become test arguments (a one-case `pytest.mark.parametrize`), so the numbers the test
uses are exactly the numbers printed. The outcome is read by `analysis.verdicts`: pass =
reproduced, AssertionError = not reproduced, `NotApplicable` (`require`, `not_applicable`, or a
pytest skip) = not applicable, `LabError` = a data error.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn

import pytest

from analysis.rundata import NotApplicable
from dnslab import cpus, findings
from dnslab.errors import LabError

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not_reproduced"
NOT_APPLICABLE = "not_applicable"
INCOMPLETE = "incomplete"
ERROR = "error"
STATUSES = (REPRODUCED, NOT_REPRODUCED, NOT_APPLICABLE, INCOMPLETE, ERROR)
STATUS_MEANING = {
    REPRODUCED: "the run met the precondition and the measured effect lies in the band",
    NOT_REPRODUCED: "the run met the precondition and the effect is absent, reversed or "
                    "outside the band (the measured value says which)",
    NOT_APPLICABLE: "the run cannot judge the claim: a precondition is unmet (with the "
                    "measured figure and what to change) or the run has no such cell",
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
# (reproduced), absent or reversed (not reproduced), its precondition unmet (not applicable)
PRESENT, ABSENT, REVERSED, UNMET = "present", "absent", "reversed", "unmet"
CASE_STATUS = {PRESENT: REPRODUCED, ABSENT: NOT_REPRODUCED, REVERSED: NOT_REPRODUCED,
               UNMET: NOT_APPLICABLE}



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
          note: str = "") -> Callable[[Callable[..., None]], Any]:
    """Register a claim test; see the module docstring."""
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
                 fails_when=fails_when.format(**limits), kind=kind, limits=limits, note=note)

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
    `conditions`: what the lab changed against the seed, each a few words)."""

    claim: Claim
    measured: str | None = None
    notes: list[str] = field(default_factory=list)
    phrase: str | None = None
    conditions: list[str] = field(default_factory=list)

    def note(self, text: str) -> None:
        self.notes.append(text)

    def condition(self, text: str) -> None:
        """A condition the lab changed against the seed (said once, in the verdict's line)."""
        if text and text not in self.conditions:
            self.conditions.append(text)


def not_applicable(reason: str) -> NoReturn:
    """Stop a claim test: the run has no data the claim is about (never silent: it is reported)."""
    raise NotApplicable(reason)


def require(met: bool, measured: str, remedy: str) -> None:
    """A precondition: unmet, the claim is "not applicable" with the measured figure and what
    to change (more cores, a faster machine, a parameter) - never a softened pass."""
    if not met:
        raise NotApplicable(f"precondition unmet: {measured} (to judge it: {remedy})")


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
