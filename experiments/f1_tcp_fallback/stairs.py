"""Load protocols of finding F1 (stair, burst, function test) and their pass criteria.

The seed rated an authoritative server by its *stair* capacity: the highest rate, stepped up
every minute, with no continuing DNS errors and a request->response time (TAT) under 1 s; then
held that rate for a *burst* (10 min) and a *soak* (48 h). This module drives a load generator
through a caller-supplied `run(argv) -> stdout` callable
(`experiments.generators.dnsload.DnsloadRunner` in the client node) and judges every step;
`stair_recorder` (beside this module) writes `stair.csv`.

A generator is anything with `command(rate, duration, warmup)` and `parse(stdout)`
(`LoadGenerator`); `experiments.generators.dnsload.DnsloadGenerator` drives `build/bin/dnsload` (UDP
first, TCP retry on TC=1, as a mobile core's MME). A dnsperf-based driver only needs those two
methods: dnsperf prints totals only, so its `parse` would map "Queries sent/completed/lost"
and the latency lines onto a `StepMeasure` (no TCP fallback, and no warm-up exclusion).

Definitions used throughout:
- errors: failed queries other than timeouts (error rcodes, network errors, and queries the
  generator could not send because its outstanding limit was full);
- error rate: (errors + timeouts) / offered, over the step without its first `warmup_s`;
- TAT: latency of answered queries, UDP send to final answer, TCP retry included; the pass
  criterion uses `Criteria.tat_stat` ("max" by default, as the seed; "p99" is available);
- tcp_share: TCP queries / (UDP + TCP queries), the share of queries the server sees on TCP.
"""

from __future__ import annotations

import itertools
import math
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, TypeVar

from dnslab.errors import LabError
from experiments.generators.dnsload import StepMeasure

T = TypeVar("T")

Runner = Callable[[list[str]], str]

CSV_COLUMNS = [
    "step", "offered_qps", "answered_qps", "udp", "tcp", "truncated", "timeouts", "errors",
    "p50_ms", "p90_ms", "p99_ms", "max_ms", "tcp_share", "passed",
    # beyond the fixed columns: what the step aimed at and why it failed
    "target_qps", "error_rate", "reasons",
]


SEED_MAX_TAT_MS = 1000.0  # the seed's limit: every request answered within 1 s
# below this share of the target rate the step did not really run at its rate (the claims
# read such a step as the generator's, not the server's)
MIN_OFFERED_SHARE = 0.95


@dataclass(frozen=True)
class Criteria:
    """Pass criteria for one step (defaults: the seed's F1 protocol)."""

    max_error_rate: float = 0.001
    max_tat_ms: float = SEED_MAX_TAT_MS
    tat_stat: Literal["max", "p99"] = "max"
    warmup_s: float = 5.0
    min_offered_ratio: float = MIN_OFFERED_SHARE
    error_rcodes: tuple[str, ...] = ("SERVFAIL", "REFUSED", "FORMERR", "NOTIMP")


@dataclass
class StepResult:
    """One judged step."""

    step: int
    target_qps: float
    measure: StepMeasure
    errors: int
    error_rate: float
    tcp_share: float
    passed: bool
    reasons: list[str] = field(default_factory=list)
    raw: str = ""  # the generator's stdout, to keep as raw tool output

    def row(self) -> dict[str, object]:
        m = self.measure
        return {
            "step": self.step, "offered_qps": round(m.offered_qps, 1),
            "answered_qps": round(m.answered_qps, 1), "udp": m.sent, "tcp": m.tcp,
            "truncated": m.truncated, "timeouts": m.timeouts, "errors": self.errors,
            "p50_ms": m.p50_ms, "p90_ms": m.p90_ms, "p99_ms": m.p99_ms, "max_ms": m.max_ms,
            "tcp_share": round(self.tcp_share, 4), "passed": self.passed,
            "target_qps": self.target_qps, "error_rate": round(self.error_rate, 6),
            "reasons": "; ".join(self.reasons),
        }


class LoadGenerator(Protocol):
    name: str

    def command(self, rate: float, duration: float, warmup: float) -> list[str]:
        """argv that offers `rate` qps for `duration` s and reports without the first `warmup` s."""
        ...

    def parse(self, stdout: str) -> StepMeasure: ...


def judge(step: int, target_qps: float, m: StepMeasure, criteria: Criteria,
          raw: str = "") -> StepResult:
    """Apply the pass criteria to one step's measurement."""
    errors = m.rcode_errors(criteria.error_rcodes) + m.net_errors + m.throttled
    offered = m.sent + m.throttled
    error_rate = (errors + m.timeouts) / offered if offered else 1.0
    queries = m.sent + m.tcp
    tcp_share = m.tcp / queries if queries else 0.0
    tat = m.max_ms if criteria.tat_stat == "max" else m.p99_ms
    reasons: list[str] = []
    if offered == 0 or m.answered == 0:
        reasons.append("nothing answered")
    if error_rate > criteria.max_error_rate:
        reasons.append(f"error rate {error_rate:.3%} > {criteria.max_error_rate:.3%}")
    if tat > criteria.max_tat_ms:
        reasons.append(f"{criteria.tat_stat} TAT {tat:.0f} ms > {criteria.max_tat_ms:.0f} ms")
    if m.offered_qps < criteria.min_offered_ratio * target_qps:
        reasons.append(f"offered {m.offered_qps:.0f} qps < {criteria.min_offered_ratio:.0%} "
                       f"of {target_qps:.0f}")
    return StepResult(step=step, target_qps=target_qps, measure=m, errors=errors,
                      error_rate=error_rate, tcp_share=tcp_share, passed=not reasons,
                      reasons=reasons, raw=raw)


def run_step(run: Runner, gen: LoadGenerator, step: int, rate: float, duration: float,
             criteria: Criteria, warmup: float | None = None) -> StepResult:
    """Offer `rate` qps for `duration` s through `run` and judge the result."""
    warm = criteria.warmup_s if warmup is None else warmup
    if warm >= duration:
        warm = 0.0
    stdout = run(gen.command(rate, duration, warm))
    return judge(step, rate, gen.parse(stdout), criteria, raw=stdout)


def stair_rates(start: float, stop: float, step: float) -> list[float]:
    """start, start+step, ... up to stop (inclusive)."""
    if step <= 0 or start <= 0 or stop < start:
        raise LabError("bad stair parameters", hint="need 0 < start <= stop and step > 0")
    n = int(math.floor((stop - start) / step + 1e-9)) + 1
    return [start + i * step for i in range(n)]


def steps(run: Runner, gen: LoadGenerator, rates: Sequence[float], step_duration: float,
          criteria: Criteria | None = None, stop_after_failures: int | None = None,
          on_step: Callable[[StepResult], None] | None = None,
          first_step: int = 1) -> list[StepResult]:
    """One judged step per rate, in order, numbered from `first_step`; ends early after
    `stop_after_failures` failing steps in a row (None: runs every rate)."""
    criteria = criteria or Criteria()
    results: list[StepResult] = []
    failing = 0
    for i, rate in enumerate(rates):
        res = run_step(run, gen, first_step + i, rate, step_duration, criteria)
        results.append(res)
        if on_step:
            on_step(res)
        failing = 0 if res.passed else failing + 1
        if stop_after_failures and failing >= stop_after_failures:
            break
    return results


def descend(run: Runner, gen: LoadGenerator, below: float, floor: float,
            step_duration: float, criteria: Criteria | None = None,
            on_step: Callable[[StepResult], None] | None = None,
            first_step: int = 1, factor: float = 0.8) -> list[StepResult]:
    """A server slower than the stair's first step: `factor` x `below`, then `factor` x that,
    ... (whole qps), until a step passes or the rate would fall under `floor`. The passing
    step and the failing one above it bound the knee for the fine pass (a factor near 1
    leaves it few steps to do)."""
    if not 0 < factor < 1:
        raise LabError(f"descent factor {factor} is not between 0 and 1",
                       hint="DESCENT_FACTOR=0.8 steps down by 20 % at a time")
    results: list[StepResult] = []
    for rate in descent_grid(below, factor, floor) if floor > 0 else []:
        results += steps(run, gen, [rate], step_duration, criteria, on_step=on_step,
                         first_step=first_step + len(results))
        if results[-1].passed:
            break
    return results


def descent_grid(above: float, factor: float, floor: float) -> Iterator[float]:
    """The descent's rates under `above`: `factor` x it, `factor` x that, ... in whole qps,
    none under `floor` (at least 1 qps). `descend` and `below` walk the same grid, so two
    stairs that descended from the same first rate share their rates."""
    rate = math.floor(above * factor)
    while rate >= max(floor, 1):
        yield float(rate)
        rate = math.floor(rate * factor)


def below(run: Runner, gen: LoadGenerator, passed: float, count: int, floor: float,
          step_duration: float, criteria: Criteria | None = None,
          on_step: Callable[[StepResult], None] | None = None,
          first_step: int = 1, factor: float = 0.8) -> list[StepResult]:
    """`count` more steps down the descent's grid from the rate where it `passed`
    (`factor` x it, then `factor` x that, whole qps as `descend` rounds, none under `floor`),
    each run whether or not the one before passed. Two stairs that descended from the same
    first rate share these rates, so the load a burst search later finds below either
    stair's capacity has measured steps of both around it."""
    rates = list(itertools.islice(descent_grid(passed, factor, floor), count))
    return steps(run, gen, rates, step_duration, criteria, on_step=on_step,
                 first_step=first_step) if rates else []


def geometric_rates(start: float, stop: float, factor: float) -> list[float]:
    """start, start*factor, ... up to stop (inclusive), rounded to whole qps: a coarse stair
    whose steps grow with the rate, for a ceiling nobody knows in advance."""
    if start <= 0 or stop < start or factor <= 1:
        raise LabError("bad geometric stair", hint="need 0 < start <= stop and factor > 1")
    rates = [float(round(start))]
    while rates[-1] * factor <= stop * (1 + 1e-9):
        rates.append(float(round(rates[-1] * factor)))
    return rates


def fine_rates(coarse: Sequence[StepResult], share: float) -> list[float]:
    """The fine pass around a coarse stair's knee: from the coarse capacity up to (not
    including) the first failing rate above it, in steps of at most `share` of the coarse
    capacity (whole qps). Empty when no step passed, none failed above the capacity, or
    `share` is 0."""
    cap = capacity(coarse)
    if cap is None or share <= 0:
        return []
    above = sorted(r.target_qps for r in coarse if not r.passed and r.target_qps > cap)
    if not above:
        return []
    step = max(1.0, math.floor(share * cap))
    n = int(math.ceil((above[0] - cap) / step))
    return [cap + i * step for i in range(1, n) if cap + i * step < above[0]]


def capacity(results: Sequence[StepResult]) -> float | None:
    """Highest target rate among passing steps (None when no step passed)."""
    passing = [r.target_qps for r in results if r.passed]
    return max(passing) if passing else None


def burst(run: Runner, gen: LoadGenerator, rate: float, duration: float,
          criteria: Criteria | None = None) -> StepResult:
    """Burst load: one rate (the stair capacity) held for duration s, same criteria."""
    return run_step(run, gen, 1, rate, duration, criteria or Criteria())


@dataclass
class HeldBurst:
    """The seed's burst at a stair capacity and, when it failed, the search below it: the
    full bursts in the order they ran (the stair capacity's first), the probe bursts, and
    every step as (kind, result) in run order."""

    bursts: list[StepResult] = field(default_factory=list)
    probes: list[StepResult] = field(default_factory=list)
    order: list[tuple[str, StepResult]] = field(default_factory=list)

    @property
    def held_qps(self) -> float | None:
        """The highest load that held a full burst (None: none did)."""
        held = [r.target_qps for r in self.bursts if r.passed]
        return max(held) if held else None

    def resolution(self) -> float | None:
        """How far above the held load the lowest failing load lies (probe or burst), as a
        share of the held load: the capacity lies in [held, held x (1 + this)). None when
        nothing held or nothing failed above it."""
        held = self.held_qps
        if held is None:
            return None
        above = [r.target_qps for _, r in self.order if not r.passed and r.target_qps > held]
        return (min(above) - held) / held if above else None

    def steps(self) -> list[dict[str, object]]:
        """Every full burst and probe in the order they ran, as the cell's `burst_search`
        figure keeps them."""
        return [{"kind": kind, "qps": r.target_qps, "seconds": r.measure.seconds,
                 "passed": r.passed, "max_ms": r.measure.max_ms, "p99_ms": r.measure.p99_ms,
                 "error_rate": round(r.error_rate, 6), "reasons": "; ".join(r.reasons)}
                for kind, r in self.order]


def held_burst(run: Runner, gen: LoadGenerator, capacity_qps: float, burst_s: float,
               probe_s: float, steps: int, criteria: Criteria | None = None, *,
               factor: float = 0.8, resolution: float = 0.05, floor: float = 1.0,
               before_step: Callable[[str], None] | None = None,
               on_step: Callable[[str, StepResult], None] | None = None) -> HeldBurst:
    """The seed's burst (`burst_s` at the stair capacity) and, when it fails, the search
    below it for the load that holds it (the seed did so by hand: its tuned stair reached
    19,000 qps, the burst failed there and held at 18,000). Up to `steps` candidate loads:
    down by `factor` from the lowest failed load until a full burst holds (not under
    `floor`), then bisection between the highest load that held and the lowest that failed,
    until they are within `resolution` of the held load (at least 1 qps). Each candidate is
    first offered for a probe burst of `probe_s`: a probe that fails ends the candidate (a
    load that fails in `probe_s` fails the longer burst by the same rule); one that holds is
    held for the full burst, which decides it (a probe no longer than the stair's step only
    repeats a step the stair passed). `before_step(kind)` / `on_step(kind, result)` run around
    every step, kind "burst" or "probe" (the recorders' counters and rows)."""
    if not 0 < factor < 1:
        raise LabError(f"descent factor {factor} is not between 0 and 1",
                       hint="DESCENT_FACTOR=0.8 steps down by 20 % at a time")
    crit = criteria or Criteria()
    found = HeldBurst()

    def offer(kind: str, rate: float, seconds: float) -> StepResult:
        if before_step:
            before_step(kind)
        done = found.bursts if kind == "burst" else found.probes
        res = run_step(run, gen, len(done) + 1, rate, seconds, crit)
        done.append(res)
        found.order.append((kind, res))
        if on_step:
            on_step(kind, res)
        return res

    failed = capacity_qps
    if offer("burst", capacity_qps, burst_s).passed:
        return found
    for _ in range(steps):
        held = found.held_qps
        if held is None:
            rate = float(math.floor(failed * factor))
            if rate < max(floor, 1.0):
                break
        else:
            if failed - held <= max(1.0, resolution * held):
                break
            rate = float(math.floor((held + failed) / 2))
            if rate <= held:
                break
        if probe_s > 0 and not offer("probe", rate, probe_s).passed:
            failed = rate
            continue
        if not offer("burst", rate, burst_s).passed:
            failed = rate
    return found


def function(run: Runner, gen: LoadGenerator, rate: float, duration: float,
             changes: Callable[[], T], criteria: Criteria | None = None
             ) -> tuple[StepResult, T]:
    """Function test: `rate` held for `duration` s while `changes()` runs alongside it (the
    seed: records added and deleted on the primary, primary -> secondary sync checked).
    Returns the load step, judged as usual, and whatever `changes` returned."""
    box: dict[str, object] = {}

    def load_thread() -> None:
        try:
            box["step"] = run_step(run, gen, 1, rate, duration, criteria or Criteria())
        except BaseException as exc:  # handed to the caller below
            box["error"] = exc

    thread = threading.Thread(target=load_thread, name="function-load", daemon=True)
    thread.start()
    try:
        outcome = changes()
    finally:
        thread.join()
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["step"], outcome  # type: ignore[return-value]
