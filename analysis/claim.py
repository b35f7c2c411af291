"""Claims: a published figure, its source and the tolerance we accept, bound to one pytest test.

A claim module under `analysis/claims/` writes each finding as a test function:

    @claim(
        "F3.default.tw-ceiling", finding="F3", experiments=("xfr-30k-zones",),
        title="TIME_WAIT plateaus at the ephemeral port-range ceiling (profile default)",
        published="TIME_WAIT fills the 28,231-port range (32768-60999)",
        tolerance="peak TIME_WAIT between {low:.0%} and {high:.0%} of port_range_size",
        limits={"low": 0.90, "high": 1.05},
    )
    def test_tw_ceiling(run, verdict, low, high):
        ...
        verdict.measured = "peak 1,010 = 101 % of 1,000 ports"
        assert low <= ratio <= high, "TIME_WAIT stayed below the ceiling"

`limits` become test arguments (a one-case `pytest.mark.parametrize`), so the numbers the test
uses are exactly the numbers printed in the tolerance text. The outcome is read by
`analysis.runner`: pass = reproduced, AssertionError = not reproduced, `NotApplicable` (or a
pytest skip) = not applicable, `LabError` = a data error.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

import pytest

from analysis.rundata import NotApplicable

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not_reproduced"
NOT_APPLICABLE = "not_applicable"
INCOMPLETE = "incomplete"
ERROR = "error"
STATUSES = (REPRODUCED, NOT_REPRODUCED, NOT_APPLICABLE, INCOMPLETE, ERROR)

FINDINGS = {
    "F1": "Mobile core: oversized 3GPP NAPTR answers force TCP fallback (seed 000)",
    "F2": "dnsdist listener and socket tuning (seed 001)",
    "F3": "Zone transfer performance (seed 002)",
    "F4": "Caching resolver under dnsperf (seed 003)",
    "F5": "Tuning Linux for DNS over TCP (seed 004)",
}


@dataclass(frozen=True)
class Claim:
    id: str
    finding: str
    title: str
    published: str
    tolerance: str
    experiments: tuple[str, ...]
    limits: dict[str, Any] = field(default_factory=dict)
    note: str = ""

    def covers(self, experiment: str) -> bool:
        """Experiment names match exactly, as fnmatch patterns, or with a `-<variant>` suffix."""
        return any(fnmatchcase(experiment, p) or fnmatchcase(experiment, p + "-*")
                   for p in self.experiments)


REGISTRY: dict[str, Claim] = {}


def claim(claim_id: str, *, finding: str, title: str, published: str, tolerance: str,
          experiments: tuple[str, ...], limits: dict[str, Any] | None = None,
          note: str = "") -> Callable[[Callable[..., None]], Any]:
    """Register a claim test; see the module docstring."""
    if finding not in FINDINGS:
        raise ValueError(f"unknown finding {finding!r}")
    limits = dict(limits or {})
    spec = Claim(id=claim_id, finding=finding, title=title, published=published,
                 tolerance=tolerance.format(**limits), experiments=tuple(experiments),
                 limits=limits, note=note)

    def decorate(func: Callable[..., None]) -> Any:
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
    """Handed to each claim test as the `verdict` fixture: what it measured, in words."""

    claim: Claim
    measured: str | None = None
    notes: list[str] = field(default_factory=list)

    def note(self, text: str) -> None:
        self.notes.append(text)


def not_applicable(reason: str) -> None:
    """Stop a claim test: the run has no data the claim is about (never silent: it is reported)."""
    raise NotApplicable(reason)


def fmt_s(value: float | None) -> str:
    return "not reached" if value is None else f"{value:.1f} s"
