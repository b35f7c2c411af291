"""F4's emulated internet calibrated in the run to the seed's cold pass (seed 003).

The seed's upstream was the real internet; the lab's is emulated, and its delays are the
lab's choice. Before every other cell `resolver-cache` measures one cold pass
(`phase=calibration,round=<r>`, a fresh lab each, at the seed's first -q) and adjusts the
emulated internet until that pass looks like the seed's:
- its average latency inside `calibration_latency_ms` (the seed's three cold passes:
  230-407 ms): the round trips of a cold name (root, TLD, second level: `SCALED_TIERS`) are
  scaled together, by how far the healthy names' part of the average is from the part the
  target leaves them (the failing tail's part is taken as it was measured);
- its slowest answer inside `calibration_slowest_s` (the seed's passes: 4.77-4.96 s, its
  SERVFAILs just under dnsperf's 5 s) with at most `calibration_lost_pct` % of the queries
  lost (the seed: 0.09-0.43 %): the broken tier's delay (`BROKEN_TIER`: a resolver retries
  its SERVFAIL several times, so its names fail after a few of its round trips) is searched,
  doubled, then by bisection: slower while the slowest SERVFAIL comes too early, faster once
  the failing names pass dnsperf's timeout (SERVFAIL answers down to under half the most a
  round gave: lost instead). The lost share is judged, not searched: the dead tier's names
  are lost whatever the broken tier does.
This module is the search (pure: figures in, link shapes out); the procedure runs the passes.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any

# a cold name's round trips: scaled together to set the cold pass's average latency
SCALED_TIERS = ("root", "tld", "sld")
# the tier whose delay sets when the failing names fail
BROKEN_TIER = "sld-broken"
# one round's change of the scale at most (a first pass far off does not overshoot)
MAX_STEP = 4.0


@dataclass(frozen=True)
class Targets:
    """What a calibrated cold pass shows (the experiment's `calibration_*` parameters)."""

    latency_ms: tuple[float, float]
    slowest_s: tuple[float, float]
    lost_pct: float

    @classmethod
    def of(cls, params: dict[str, Any]) -> Targets:
        low, high = (float(v) for v in params["calibration_latency_ms"])
        slow_low, slow_high = (float(v) for v in params["calibration_slowest_s"])
        return cls((low, high), (slow_low, slow_high), float(params["calibration_lost_pct"]))

    @property
    def latency_mid_ms(self) -> float:
        return math.sqrt(self.latency_ms[0] * self.latency_ms[1])


def met(figures: dict[str, Any], targets: Targets) -> dict[str, bool]:
    """Which targets one calibration pass met: `latency` (its average), `slowest` (its
    slowest answer) and `lost` (its lost share)."""
    latency = float(figures["avg_latency_ms"])
    slowest = float(figures.get("max_latency_ms") or 0) / 1000
    sent = float(figures.get("sent") or 0)
    lost_pct = 100 * float(figures.get("lost") or 0) / sent if sent else 100.0
    return {"latency": targets.latency_ms[0] <= latency <= targets.latency_ms[1],
            "slowest": targets.slowest_s[0] <= slowest <= targets.slowest_s[1],
            "lost": lost_pct <= targets.lost_pct}


@dataclass
class WanSearch:
    """Where the search stands: the scale of the cold name's round trips, the broken tier's
    delay, and the delays known to make its names fail too early (`broken_low`) or too late
    (`broken_high`)."""

    base: dict[str, dict[str, float]]
    scale: float = 1.0
    broken_ms: float = 0.0
    broken_low: float = 0.0
    broken_high: float | None = None
    # the most SERVFAIL answers a pass gave so far: the failing names all answering
    most_servfail: int = 0

    @classmethod
    def start(cls, wan: dict[str, dict[str, Any]]) -> WanSearch:
        base = {node: {k: float(v) for k, v in shape.items()} for node, shape in wan.items()}
        return cls(base, broken_ms=base.get(BROKEN_TIER, {}).get("delay_ms", 0.0))

    def wan(self) -> dict[str, dict[str, float]]:
        """The link shapes of this step: the scaled tiers' delay and jitter times the scale,
        the broken tier's delay this step's."""
        shapes = copy.deepcopy(self.base)
        for tier in SCALED_TIERS:
            for key in ("delay_ms", "jitter_ms"):
                if key in shapes.get(tier, {}):
                    shapes[tier][key] = round(shapes[tier][key] * self.scale, 1)
        if BROKEN_TIER in shapes:
            shapes[BROKEN_TIER]["delay_ms"] = round(self.broken_ms, 1)
        return shapes

    def step(self, figures: dict[str, Any], targets: Targets) -> dict[str, bool]:
        """Take one pass's figures (measured with `wan()`), move to the next shapes; returns
        what the pass met."""
        done = met(figures, targets)
        if not done["latency"]:
            self.scale *= _scale_step(figures, targets)
        servfail = int(figures.get("rcode_SERVFAIL") or 0)
        self.most_servfail = max(self.most_servfail, servfail)
        if servfail == 0 or servfail < self.most_servfail / 2:
            # the failing names went past dnsperf's timeout (lost, not SERVFAIL): sooner. None
            # at all is that too (a first round with three broken addresses at 250 ms lost all
            # of them, and doubling the delay from there only lost them again)
            self.broken_high = self.broken_ms
        elif failing_slowest_s(figures) < targets.slowest_s[0]:
            self.broken_low = self.broken_ms
        else:
            return done
        self.broken_ms = ((self.broken_low + self.broken_high) / 2 if self.broken_high
                          is not None else max(2 * self.broken_ms, 50.0))
        return done


def failing_slowest_s(figures: dict[str, Any]) -> float:
    """When the failing names failed at the latest: the slowest SERVFAIL answer (the slow
    tier's names can answer later and set the pass's slowest answer, whatever the broken
    tier does: a SCALE=ci search saw 1.7-1.9 s at every broken delay), else the pass's."""
    slowest = figures.get("servfail_max_ms")
    return float(slowest if slowest is not None else figures.get("max_latency_ms") or 0) / 1000


def _scale_step(figures: dict[str, Any], targets: Targets) -> float:
    """By how much the scaled tiers' delays move: the healthy names' part of the average to
    what the target leaves them beside the tail's part (as measured)."""
    average = float(figures["avg_latency_ms"])
    healthy_ms = figures.get("healthy_mean_ms")
    completed = float(figures.get("completed") or 0)
    if healthy_ms and completed:
        weight = float(figures.get("healthy_answers") or 0) / completed
        healthy_part = float(healthy_ms) * weight
        tail_part = average - healthy_part
        wanted = targets.latency_mid_ms - tail_part
        ratio = wanted / healthy_part if healthy_part > 0 and wanted > 0 else 1 / MAX_STEP
    else:
        ratio = targets.latency_mid_ms / average if average > 0 else MAX_STEP
    return min(MAX_STEP, max(1 / MAX_STEP, ratio))


def best_round(rounds: list[tuple[dict[str, Any], dict[str, bool]]],
               targets: Targets) -> int:
    """The index of the round that met most targets, the nearest average latency among
    them: its shapes are the run's when no round met them all."""
    def key(item: tuple[int, tuple[dict[str, Any], dict[str, bool]]]) -> tuple[int, float]:
        _, (figures, done) = item
        off = abs(math.log(max(float(figures["avg_latency_ms"]), 1e-3)
                           / targets.latency_mid_ms))
        return (-sum(done.values()), off)

    return min(enumerate(rounds), key=key)[0]
