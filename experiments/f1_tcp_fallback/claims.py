"""F1 claims (mobile core, oversized NAPTR answers force TCP fallback, seed 000).

Data read from `tcp-fallback` runs (`fallback.py` in this package), one cell per
(server, records, tuning): params `server` (the claims judge `bind916`, the BIND that still
sends the seed's full answers, else `bind`, else the only server), `records` = `before` |
`after` (the IPv6 records) and `tuning` = `untuned` | `tuned`. The raw `stair.csv` (one row
per load step: `target_qps`, `passed`, `max_ms`, `p99_ms`, `tcp_share`, `listen_overflows`,
`client_syn_retrans`, `req_q_full_drops`, ...) gives the capacity
(`analysis.derived.stair`); the load generator's own ceiling for the same mix, measured in the
same run on the same CPUs, is the stair capacity of the `server=ceiling` cell with the same
records (or a `generator_ceiling_qps` figure). `tcp-fallback-cache` runs: one cell per lookup
distribution with figures `cache_size`, `onset_records` and `max_amplification` (a
simulation: a calibration check).
"""

from __future__ import annotations

from analysis.claim import (
    CALIBRATION,
    DIRECTIONAL,
    TWO_SIDED,
    Verdict,
    claim,
    not_applicable,
    require,
)
from analysis.derived import GENERATOR_BOUND_SHARE, Stair, require_below_ceiling, stair
from analysis.rundata import Cell, Run
from dnslab.errors import LabError
from experiments.f1_tcp_fallback.stairs import MIN_OFFERED_SHARE as MIN_OFFERED

SOURCE_TABLE = "seed 000, stair results table (BIND 9.9.4: old records / new untuned / tuned)"


def _cells(run: Run, *pairs: tuple[str, str]) -> list[Cell]:
    """The cells (records, tuning) of one server, the same for every pair: the first of the
    run's SEED_SERVERS (experiment data; a run from before it existed: its SERVERS) that has
    them all, else the only server of the run."""
    # `server=ceiling` cells are the load generator against a canned responder, not a server
    servers = sorted({str(c.params.get("server")) for c in run.cells
                      if "records" in c.params and c.params.get("server") != "ceiling"})
    judged = [str(s) for s in run.params.get("seed_servers") or run.params.get("servers") or []]
    ordered = [s for s in judged if s in servers] + (
        servers if len(servers) == 1 and servers[0] not in judged else [])
    for server in ordered:
        found = [run.cells_where(server=server, records=r, tuning=t) for r, t in pairs]
        if all(found):
            return [f[0] for f in found]
    wanted = ", ".join(f"records={r}/tuning={t}" for r, t in pairs)
    not_applicable(f"no server with cells {wanted} (servers: {', '.join(servers) or 'none'})")


SEED_STEP_QPS, SEED_STEP_S = 1000, 60  # the seed's stair: +1,000 qps every minute


def stair_condition(run: Run, verdict: Verdict) -> None:
    """The stair when it is not the seed's +1,000 qps per minute (SCALE=ci's are seconds)."""
    step, seconds = run.params.get("stair_step"), run.params.get("step_s")
    if step is None or seconds is None:
        return
    if (float(step), float(seconds)) != (SEED_STEP_QPS, SEED_STEP_S):
        verdict.condition(f"stair +{float(step):,.0f} qps per {float(seconds):,.0f} s "
                          f"(seed: +{SEED_STEP_QPS:,}/min)")


def _cell(run: Run, records: str, tuning: str) -> Cell:
    return _cells(run, (records, tuning))[0]


def _label(cell: Cell) -> str:
    return f"{cell.params.get('server')} {cell.params.get('records')}/{cell.params.get('tuning')}"


def _judged_stair(run: Run, cell: Cell, max_step: float) -> tuple[Stair, float]:
    """The stair of a cell whose capacity can be judged: a step passed, the step is fine
    enough, the stair did not end on its top step, the generator was not the limit."""
    label = _label(cell)
    st = stair(cell)
    cap = st.capacity
    require(cap is not None, f"{label}: no stair step passed", "a lower STAIR_START")
    assert cap is not None
    step = st.step or cap
    require(step <= max_step * cap,
            f"{label}: step {step:,.0f} qps = {step / cap:.0%} of capacity {cap:,.0f} "
            "(the ratio is quantised)", f"STAIR_STEP <= {max_step:.0%} of the capacity")
    require(cap < st.top_rate, f"{label}: passed every step up to {st.top_rate:,.0f} qps "
            "(capacity is only a lower bound)", "a higher STAIR_STOP")
    failed = st.first_failure_above(cap)
    if failed is not None and "offered_qps" in failed.index:
        offered, target = float(failed["offered_qps"]), float(failed["target_qps"])
        require(offered >= MIN_OFFERED * target,
                f"{label}: the generator offered {offered:,.0f} of {target:,.0f} qps at the "
                "first failing step (it fell behind, not the server)",
                "the load generator on cores of its own")
    require_below_ceiling(run, cell, cap, f"{label}: capacity",
                          "the load generator on more or faster cores")
    return st, cap


@claim(
    "F1.tcp-share", kind=CALIBRATION,
    title="Lab check: the server gets as many TCP retries as the query mix predicts",
    published="23 % of all queries over TCP at 15,767 qps (truncated answers ~ TCP requests)",
    source="seed 000, rndc stats deltas at the peak", effect=TWO_SIDED,
    tolerance="TCP share at the capacity step = truncating/(1+truncating) of the mix "
              "+-{points:.0%} points (records=after, untuned)",
    precondition="the mix's truncating share is recorded in the run's parameters",
    fails_when="the server truncates more or fewer answers than the zone model says",
    limits={"points": 0.03},
)
def test_tcp_share(run: Run, verdict: Verdict, points: float) -> None:
    cell = _cell(run, "after", "untuned")
    truncating = run.params.get("truncating")
    require(truncating is not None, "no 'truncating' parameter in the run",
            "a tcp-fallback run (its mix parameter)")
    predicted = float(truncating) / (1 + float(truncating))
    st = stair(cell)
    row = st.at(st.capacity) if st.capacity is not None else st.rows.iloc[0]
    assert row is not None
    share = float(row["tcp_share"])
    if share != share:  # NaN: the step recorded no TCP share
        raise LabError(f"{cell.run.label}/{cell.rel('stair.csv')}: no tcp_share at "
                       f"{float(row['target_qps']):,.0f} qps",
                       hint="the procedure must record every step's TCP share")
    verdict.measured = (f"{share:.1%} of queries over TCP, the mix predicts {predicted:.1%} "
                        f"({cell.params.get('server')})")
    assert abs(share - predicted) <= points, f"TCP share {share:.1%}"


@claim(
    "F1.capacity-drop",
    title="Untuned capacity halves with the new records",
    published="stair capacity 24,000 -> 12,000 qps (ratio 0.50), BIND 9.9.4",
    source=SOURCE_TABLE, effect=TWO_SIDED,
    tolerance="capacity(after)/capacity(before), both untuned, = {ratio:.2f} +-{band:.2f}",
    precondition="both stairs judged: a step passed, steps <= {max_step:.0%} of the "
                 "capacity, the stair did not end on its top step, its first failing step "
                 "was offered >= 95 % of its rate, capacity below {bound:.0%} of the "
                 "generator's ceiling measured in the run",
    fails_when="the ratio is above {ratio:.2f}+{band:.2f} (little or no drop) or below "
               "{ratio:.2f}-{band:.2f} (a collapse the seed did not see)",
    limits={"ratio": 0.50, "band": 0.15, "max_step": 0.05, "bound": GENERATOR_BOUND_SHARE},
)
def test_capacity_drop(run: Run, verdict: Verdict, ratio: float, band: float,
                       max_step: float, bound: float) -> None:
    stair_condition(run, verdict)
    before, after = _cells(run, ("before", "untuned"), ("after", "untuned"))
    _, old = _judged_stair(run, before, max_step)
    _, new = _judged_stair(run, after, max_step)
    measured = new / old
    verdict.measured = (f"{before.params.get('server')}: {old:,.0f} -> {new:,.0f} qps "
                        f"(ratio {measured:.2f})")
    verdict.phrase = f"capacity {old:,.0f} -> {new:,.0f} qps ({measured:.2f}x)"
    assert abs(measured - ratio) <= band, f"capacity ratio {measured:.2f}"


@claim(
    "F1.tuning-helps",
    title="Tuning raises the capacity with the new records, by about half",
    published="new records: 12,000 qps untuned -> 18,000 qps tuned (1.5x), each capacity "
              "held for the 10-minute burst",
    source=SOURCE_TABLE + "; load protocol: stair, then burst", effect=TWO_SIDED,
    tolerance="capacity(after, tuned)/capacity(after, untuned) between {low}x and {high}x",
    precondition="both stairs judged (as F1.capacity-drop) and both capacities held their "
                 "burst (the seed's criteria: no continuing errors, TAT < 1 s, for 10 min)",
    fails_when="tuning gives less than {low}x (no help) or more than {high}x (the untuned "
               "server failed for a reason the seed's did not, e.g. a tiny listen queue)",
    limits={"low": 1.2, "high": 2.0, "max_step": 0.05},
)
def test_tuning_helps(run: Run, verdict: Verdict, low: float, high: float,
                      max_step: float) -> None:
    """The seed's capacity is the stair's highest clean step *and* that load held for a
    10-minute burst (its load protocol: stair, burst, function test, soak; 12,000 and 18,000
    qps both held). A stair capacity whose burst failed is not the seed's capacity - in the
    BIND 9.16 full run both compared capacities failed their 600 s burst - so the ratio of
    two such numbers is not the seed's 1.5x: not applicable, with the burst's figures. A
    run without bursts (SCALE=ci) has no seed capacity either."""
    stair_condition(run, verdict)
    cells = _cells(run, ("after", "untuned"), ("after", "tuned"))
    _, untuned = _judged_stair(run, cells[0], max_step)
    _, tuned = _judged_stair(run, cells[1], max_step)
    for cell in cells:
        held = cell.figure("burst_passed", optional=True)
        require(held is not None, f"{_label(cell)}: no burst at its capacity",
                "BURST_S=600 (the seed's burst)")
        worst = cell.figure("burst_max_ms", optional=True)
        require(bool(held), f"{_label(cell)}: the {float(cell.figure('burst_qps')):,.0f} qps "
                "burst failed" + (f" (worst TAT {float(worst):,.0f} ms)" if worst else "")
                + ": the capacity by the seed's criteria is lower",
                "a stair whose capacity holds the burst (longer steps, STEP_S)")
    ratio = tuned / untuned
    verdict.measured = (f"{cells[0].params.get('server')}: {untuned:,.0f} -> {tuned:,.0f} qps "
                        f"({ratio:.2f}x), both held the burst")
    verdict.phrase = f"tuning {untuned:,.0f} -> {tuned:,.0f} qps ({ratio:.1f}x), bursts held"
    assert low <= ratio <= high, f"tuning changed the capacity {ratio:.2f}x"


@claim(
    "F1.latency-grows",
    title="Worst latency near capacity grows sharply with the new records",
    published="worst TAT at 14k qps 832 -> 3,241 ms; at 12k 419 -> 815 ms (untuned)",
    source="seed 000, worst-latency table before/after the IPv6 records", effect=DIRECTIONAL,
    tolerance="at the highest rate both untuned stairs ran where the before stair passed, "
              "worst TAT(after) >= {min_ratio}x worst TAT(before), whatever its mechanism "
              "(a SYN retried after 1 s and 2 s counts: it is the seed's)",
    precondition="the after stair reached its knee (a step failed, and the compared rate is "
                 "at least {near:.0%} of its capacity: the seed compared rates around and "
                 "above it); listen-queue overflows and drops recorded per step",
    fails_when="the worst TAT grows less than {min_ratio}x or shrinks",
    limits={"min_ratio": 1.5, "near": 0.9},
)
def test_latency_grows(run: Run, verdict: Verdict, min_ratio: float, near: float) -> None:
    """The seed's worst latencies after the new records, 815 ms at 12k qps and 3,241 ms at
    14k, are a SYN retried after 1 s (+ the answer) and after 1 s + 2 s (+ the answer): the
    seed's clients waited on a dropped SYN, so the SYN retry is the seed's own mechanism of
    the growth. The old rule made a compared step with a retried SYN "not applicable" and so
    excluded the effect it judged; now the growth is judged whatever its cause, and the
    measured text names the SYN drops and retries at the compared step."""
    stair_condition(run, verdict)
    cells = _cells(run, ("before", "untuned"), ("after", "untuned"))
    before, after = stair(cells[0]), stair(cells[1])
    common = [r for r in before.rates() if r in after.rates()
              and bool(before.at(r)["passed"])]  # type: ignore[index]
    if not common:
        not_applicable("the two stairs share no rate where the before stair passed")
    rate = common[-1]
    knee = after.capacity
    require(bool((~after.rows["passed"]).any()) and knee is not None and rate >= near * knee,
            f"{cells[1].params.get('server')}: the after stair "
            + (f"passed every step up to {after.top_rate:,.0f} qps"
               if not (~after.rows["passed"]).any() else
               f"has its capacity at {knee or 0:,.0f} qps, the compared rate is {rate:,.0f}")
            + ": far below its knee, worst TAT says nothing about overload",
            "a stair that runs past the after capacity (STAIR_STOP)")
    b_row, a_row = before.at(rate), after.at(rate)
    assert b_row is not None and a_row is not None
    b, a = float(b_row["max_ms"]), float(a_row["max_ms"])
    drops = {name: _syn_drops(row) for name, row in (("before", b_row), ("after", a_row))}
    require(None not in drops.values(),
            f"at {rate:,.0f} qps listen-queue overflows and drops were not recorded",
            "a run that counts ListenOverflows and ListenDrops per step")
    retried = {name: _optional_count(row, "client_syn_retrans")
                     + _optional_count(row, "req_q_full_drops")
               for name, row in (("before", b_row), ("after", a_row))}
    mechanism = (f"; SYN drops {drops['before']} / {drops['after']}, SYN-queue drops + client "
                 f"SYN retries {retried['before']} / {retried['after']} (before / after)"
                 if any(drops.values()) or any(retried.values()) else "; no SYN dropped")
    verdict.measured = (f"{cells[0].params.get('server')} at {rate:,.0f} qps: {b:,.0f} -> "
                        f"{a:,.0f} ms ({a / b:.2f}x)" + mechanism)
    verdict.phrase = (f"worst TAT {b:,.0f} -> {a:,.0f} ms at {rate:,.0f} qps"
                      + (" (SYN retries)" if retried["after"] or drops["after"] else ""))
    assert a >= b * min_ratio, "worst latency did not grow with the new records"


def _optional_count(row: object, column: str) -> int:
    """A per-step counter runs before it existed do not have (0 when absent or blank)."""
    value = getattr(row, "get", lambda *_: 0)(column, 0)
    if value is None or value != value or str(value).strip() == "":
        return 0
    return int(float(value))


def _syn_drops(row: object) -> int | None:
    """Listen-queue overflows + SYNs dropped at LISTEN in a step (None: not recorded)."""
    total = 0
    for column in ("listen_overflows", "listen_drops"):
        value = getattr(row, "get", lambda *_: 0)(column, 0)
        if value is None or value != value or str(value).strip() == "":
            return None
        total += int(float(value))
    return total


@claim(
    "F1.cache-onset", kind=CALIBRATION,
    title="Model check: MME cache amplification starts once the records exceed the cache",
    published="cache states 1/2/3: records < cache (no extra queries), ~ cache, > cache "
              "(evictions before TTL -> more queries)",
    source="seed 000, the MME cache discussion", effect=TWO_SIDED,
    tolerance="onset between the cache size and {max_over:.0%} above it, and max "
              "amplification > 1",
    precondition="a cache model run (simulation)",
    fails_when="the model amplifies below the cache size or never",
    limits={"max_over": 0.25},
)
def test_cache_onset(run: Run, verdict: Verdict, max_over: float) -> None:
    if not run.cells:
        not_applicable("no cells in this run")
    parts = []
    for cell in run.cells:
        size = float(cell.figure("cache_size"))
        onset = cell.figure("onset_records")
        peak = float(cell.figure("max_amplification"))
        parts.append(f"{cell.label}: onset at {onset} records (cache {size:,.0f}), "
                     f"up to {peak:.1f}x")
        verdict.measured = "; ".join(parts)
        assert onset is not None, f"{cell.label}: no amplification at any record count"
        assert size <= float(onset) <= size * (1 + max_over), f"{cell.label}: onset off"
        assert peak > 1


def _load_failure(cell: Cell) -> str:
    """Why the function test's load step failed, from its row (`function-load.csv`)."""
    if not cell.has("function-load.csv"):
        return ""
    rows = cell.csv("function-load.csv")
    why = [str(rows[k].iloc[-1]) for k in ("reasons", "note")
           if k in rows.columns and not rows[k].isna().iloc[-1] and str(rows[k].iloc[-1])]
    return f" ({'; '.join(why)})" if why else ""


@claim(
    "F1.function-sync",
    title="At capacity, records added and deleted on the primary still reach the secondary",
    published="function test: records added/deleted during the load, primary -> secondary "
              "sync confirmed (then a 48 h soak with 0 failures)",
    source="seed 000, load protocol: function test", effect=DIRECTIONAL,
    tolerance="every change seen on the server under test (serial, then the record) within "
              "the test's timeout, and the load step at capacity still passes",
    precondition="the run ran the function test (FUNCTION_S > 0)",
    fails_when="a change never arrives, or the load fails during the changes",
)
def test_function_sync(run: Run, verdict: Verdict) -> None:
    cells = [c for c in run.cells if c.figure("function_changes", optional=True)]
    require(bool(cells), "the run has no function test", "FUNCTION_S=600")
    parts: list[str] = []
    failures: list[str] = []
    for cell in cells:
        changes = int(cell.figure("function_changes"))
        synced = int(cell.figure("function_synced"))
        slowest = cell.figure("function_sync_max_s", optional=True)
        passed = bool(cell.figure("function_passed"))
        label = "/".join(str(cell.params.get(k, "?")) for k in ("server", "records", "tuning"))
        parts.append(f"{label}: {synced}/{changes} synced"
                     + (f" (slowest {float(slowest):.1f} s)" if slowest is not None else "")
                     + ("" if passed else f", load step failed{_load_failure(cell)}"))
        if synced != changes:
            failures.append(f"{label}: {changes - synced} change(s) never arrived")
        if not passed:
            failures.append(f"{label}: the load failed during the changes")
    # every cell is measured before the verdict: the slide shows all of them
    verdict.measured = "; ".join(parts)
    verdict.phrase = (f"{sum(int(c.figure('function_synced')) for c in cells)} of "
                      f"{sum(int(c.figure('function_changes')) for c in cells)} changes synced"
                      + (", a load step failed" if any(not c.figure("function_passed")
                                                       for c in cells) else ""))
    assert not failures, "; ".join(failures)


SECTIONS = ("answer", "authority", "additional")


def _answers_unlike_model(cell: Cell) -> tuple[int, list[str], bool]:
    """(TAC and APN names judged, those whose TCP answer is not the modelled full answer,
    whether records were compared one by one). From `responses.csv` (every name): the
    records themselves where the run compared them (`missing`, `extra`), else each section's
    count; a cell without the file: the largest TAC answer's figures."""
    if cell.has("responses.csv"):
        rows = cell.csv("responses.csv", ("qname", "source", *SECTIONS))
        by_source = {src: rows[rows["source"] == src].set_index("qname")
                     for src in ("tcp", "model")}
        tcp, full = by_source["tcp"], by_source["model"]
        names = [n for n in full.index if n in tcp.index]
        records = "missing" in tcp.columns and tcp["missing"].notna().all()
        unlike = []
        for name in names:
            sent, modelled = tcp.loc[name], full.loc[name]
            if records:
                if int(sent["missing"]) or int(sent["extra"]):
                    unlike.append(f"{name} ({int(sent['missing'])} missing, "
                                  f"{int(sent['extra'])} extra)")
            elif any(int(sent[k]) != int(modelled[k]) for k in SECTIONS):
                unlike.append(name)
        return len(names), unlike, bool(records)
    same = all(cell.figure(f"tac_tcp_{k}") == cell.figure(f"tac_model_{k}")
               for k in ("answer", "additional"))
    return 1, [] if same else [str(cell.figure("tac_name", optional=True) or "TAC")], False


@claim(
    "F1.full-answer", kind=CALIBRATION,
    title="Lab check: BIND 9.16 sends the full TAC answer the zone model gives",
    published="the new records grew one TAC NAPTR answer 1.5x, to 23,069 B (ANSWER 93, "
              "ADDITIONAL 219), BIND 9.9.4",
    source="seed 000, the dig output of the TAC query", effect=TWO_SIDED,
    tolerance="bind916, records after: every TAC and APN answer over TCP carries exactly the "
              "records of the modelled full answer (none missing, none extra; section counts "
              "for runs that did not compare records), and the largest TAC answer is no more "
              "than {band:.0%} smaller than the model's encoding of it. Larger is not judged: "
              "BIND 9.12-9.18 compress a name only against itself and its parent "
              "(lib/dns/compress.c), so the same records take more bytes than with BIND 9.9's "
              "compression, which the model (and the seed's 23,069 B) have",
    precondition="a bind916 cell (BIND 9.16 from its image; 9.18.33+ skips additional "
                 "processing above 13 records)",
    fails_when="an answer lacks records of the full answer or has others, or the largest TAC "
               "answer is more than the band smaller than the model's",
    limits={"band": 0.05},
)
def test_full_answer(run: Run, verdict: Verdict, band: float) -> None:
    cells = [c for c in run.cells_where(server="bind916", records="after")
             if c.figure("tac_tcp_size", optional=True) is not None]
    require(bool(cells), "no bind916 cell with the new records and its answer sizes",
            "SERVERS=...,bind916 (needs `make images`)")
    parts, off = [], []
    for cell in cells:
        sent = int(cell.figure("tac_tcp_size"))
        full = int(cell.figure("tac_model_size"))
        recoded = cell.figure("tac_tcp_size_full_compression", optional=True)
        names, unlike, by_record = _answers_unlike_model(cell)
        version = cell.figure("server_version", optional=True) or "version hidden"
        label = f"records {cell.params.get('records')}, {cell.params.get('tuning')}"
        # dig-style counts: the OPT record is one of the additional records
        extra = int(cell.figure("tac_tcp_additional")) - 1
        parts.append(
            f"{label}: {names - len(unlike)} of {names} TAC/APN answers over TCP are the full "
            f"answer ({'record by record' if by_record else 'section counts'}); largest TAC "
            f"{sent:,} B with {extra} additional records (model {full:,} B"
            + (f"; the same answer with full name compression {int(recoded):,} B"
               if recoded is not None else "") + f") ({version})")
        if unlike:
            off.append(f"{label}: {', '.join(unlike[:3])}"
                       + (f" and {len(unlike) - 3} more" if len(unlike) > 3 else ""))
        if sent < full * (1 - band):
            off.append(f"{label}: {sent:,} B is more than {band:.0%} below {full:,} B")
    verdict.measured = "; ".join(parts)
    assert not off, f"not the full answer: {'; '.join(off)}"
