"""Altered data for F4 (resolver cache): the warm passes answer as the cold ones, every warm
or cold -q as the smallest, the cold passes as quick as the warm ones, for
`analysis.altered`'s check that a claim cannot pass without its effect.
"""

from __future__ import annotations

from analysis.altered import Alteration, edit_figures
from analysis.rundata import Cell, Run


def dnsperf_passes(run: Run, cache: str) -> list[Cell]:
    """The resolver's dnsperf passes of one cache state (resperf ramps have no -q)."""
    return [c for c in run.cells_where(cache=cache) if "outstanding" in c.params]


def warm_like_cold(run: Run) -> int:
    """The warm pass answers as the cold one at every -q."""
    changed = 0
    for warm in dnsperf_passes(run, "warm"):
        cold = run.cells_where(cache="cold", outstanding=warm.params["outstanding"])
        if cold:
            same = {k: cold[0].figures[k] for k in ("qps", "qps_trials") if k in cold[0].figures}
            changed += edit_figures(warm, lambda f, same=same: f.update(same))
    return changed


def flat_in_q(run: Run, cache: str) -> int:
    """Every -q of a cache state answers as its smallest -q."""
    passes = sorted(dnsperf_passes(run, cache), key=lambda c: int(c.params["outstanding"]))
    if len(passes) < 2:
        return 0
    same = {k: passes[0].figures[k] for k in ("qps", "qps_trials") if k in passes[0].figures}
    return sum(edit_figures(c, lambda f: f.update(same)) for c in passes[1:])


def warm_flat_in_q(run: Run) -> int:
    """Every warm -q answers as the smallest -q."""
    return flat_in_q(run, "warm")


def cold_flat_in_q(run: Run) -> int:
    """Every cold -q answers as the smallest -q: more outstanding queries do nothing."""
    return flat_in_q(run, "cold")


def cold_latency_like_warm(run: Run) -> int:
    """The cold passes wait no longer than the warm ones: no wide area to resolve through."""
    changed = 0
    for cold in dnsperf_passes(run, "cold"):
        warm = run.cells_where(cache="warm", outstanding=cold.params["outstanding"])
        if warm and "avg_latency_ms" in warm[0].figures:
            ms = warm[0].figures["avg_latency_ms"]
            changed += edit_figures(cold, lambda f, ms=ms: f.update(avg_latency_ms=ms))
    return changed


ALTERATIONS: dict[str, tuple[Alteration, ...]] = {
    "F4.warm-over-cold": (warm_like_cold,),
    "F4.warm-scales-with-q": (warm_flat_in_q,),
    "F4.cold-q-effect": (cold_flat_in_q,),
    "F4.cold-latency": (cold_latency_like_warm,),
}
