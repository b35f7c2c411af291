"""F6 claims (what TCP, DoT and DoH cost against UDP, seed 005: dnsprivacy.org, "Initial
Performance Measurements (Q1 2018)", RIPE 76; figures from the perfmeasurements_2018
repository's results/bionic/*/test-*ct-1-16.csv at 8 clients, the bars of its
transport-bar.png).

Data read from `transport-cost` runs (`transport.py` in this package, figures in
`derived.py`): one cell per server (`server=<kind>`) whose `trials.csv` has a row per
trial (`transport`, `mode`, `generator`, `qps`, `completed`, `noerror`), and the
`phase=ceiling` cell whose `ceiling.csv` has the same rows against `dnsload serve`: the
generator's own ceiling for each transport's load. A server's figure over a transport is
the median of its trials; a ratio is that of two such medians in the same cell (the
transports of a round run one after another on the same lab, the order rotated each round),
judged with its bootstrap interval over the trials, paired by round
(`analysis.stats.ratio_of_medians_interval`): a ratio whose interval straddles a band's edge
is inconclusive, with the trials that would decide it.

Every ratio claim needs both figures to be the server's: each below 90 % of its transport's
generator ceiling measured in the run (`GENERATOR_BOUND_SHARE`), else "not applicable" with
the figures, saying which transport measured the generator; its answers NOERROR; and its
trials in the source's regime (`derived.source_regime`, from the source's CSVs at 8 clients:
its servers' threads 71-79 % busy; over UDP 92-98 % of the 5,000 slots held by lost queries
waiting out dnsperf's 5 s timeout, over TCP and TLS none), else "not applicable" with the
figures: MACHINE where the server was less busy while the generator's cores were full,
SETTING otherwise (the load, the timeout, the buffers). The
seed's servers ran 4 threads on 2x8 cores; here each server has the cores the run gave it
(said in the verdict). dnsdist's claims need at least two of them: its TCP and TLS
connections go to worker threads of their own, which in the seed ran on 32 hardware threads
beside 4 pinned UDP listeners ("a different threading model", the follow-up page's words);
on one core they share it with the UDP listener and nothing is left to show.

`transport-latency` runs (the lab's own checks: the seed published no latency): cells as
above with `mode` persistent | per-query and each trial's histogram file; the client's link
delayed by `rtt_ms` (read back per cell).
"""

from __future__ import annotations

from analysis.claim import (
    DIRECTIONAL,
    LAB_CHECK,
    MACHINE,
    SETTING,
    TWO_SIDED,
    Judged,
    Verdict,
    claim,
    cores_condition,
    decide,
    not_applicable,
    require,
)
from analysis.rundata import Cell, NotApplicable, Run, combined_cause
from analysis.stats import ratio_of_medians_interval
from dnslab.thresholds import GENERATOR_BOUND_SHARE
from experiments.f6_transport_cost import derived
from experiments.f6_transport_cost.derived import LABELS, PER_QUERY, PERSISTENT, Measured, span

SOURCE = ("seed 005: dnsprivacy.org, Initial Performance Measurements (Q1 2018), 8 clients, "
          "5,000 queries in flight, 5 x 20 s (perfmeasurements_2018, results/bionic)")
SUMMARY = "the follow-up page's summary of it: 'TCP 40-50 % of UDP (except dnsdist), TLS 30-40 %'"
SEED_THREADS = 4
GENERATOR_REMEDY = ("a generator that is not the limit: the load generator on a core of its "
                    "own (GENERATOR_CPUS), more of them, or a faster machine")
_REGIME = derived.source_regime()
PRECONDITION = ("both figures the server's: each below {bound:.0%} of its transport's "
                "generator ceiling measured in the run (a figure above that ceiling is "
                "the generator's too where its cores were full in the server's trials and the "
                "server's were not, else the ceiling's responder's limit), >= {min_trials} "
                "trials each, "
                ">= {noerror:.0%} of the answers NOERROR; and each in the source's regime "
                "(its CSVs at 8 clients): the server's threads busy at least "
                f"{_REGIME.busy_low * 100:.0f} % (its 4-thread servers "
                f"{span(_REGIME.busy_low, _REGIME.busy_high)}) less {{regime_margin:.0%}}, "
                "its queries really in flight (the slots not held by lost queries waiting out "
                "the timeout) within a factor "
                f"{derived.IN_FLIGHT_FACTOR:g} of the source's over the transport (UDP "
                f"{span(*_REGIME.in_flight['udp'], digits=1)}, TCP "
                f"{span(*_REGIME.in_flight['tcp'], digits=1)}, TLS "
                f"{span(*_REGIME.in_flight['dot'], digits=1)} of the 5,000)")
LIMITS = {"bound": GENERATOR_BOUND_SHARE, "min_trials": 3, "noerror": 0.99,
          "regime_margin": derived.REGIME_MARGIN}
INTERVAL_RULE = ("; each ratio's 95 % bootstrap interval over the trials (paired by round) on "
                 "the band's side, one across its edge inconclusive")


def server_figure(run: Run, server: str, transport: str, min_trials: int, noerror: float,
                  margin: float = derived.REGIME_MARGIN, mode: str = PERSISTENT) -> Measured:
    """A server's figure over a transport, once it is the server's: measured, enough
    trials, NOERROR answers, below its generator's ceiling (else "not applicable" with the
    figure)."""
    if server not in derived.server_cells(run):
        not_applicable(f"the run measured no {server} (SERVERS=...,{server})", cause=SETTING)
    why = derived.not_served(run, server).get(transport)
    if why:
        not_applicable(f"{server} over {LABELS[transport]}: {why}", cause=SETTING)
    found = derived.measured(run, server, transport, mode)
    if found is None:
        not_applicable(f"the run measured {server} over no {LABELS[transport]} "
                       f"(TRANSPORTS=...,{transport})", cause=SETTING)
    assert found is not None
    require(found.trials >= min_trials,
            f"{found.trials} trial(s) of {server} over {LABELS[transport]}",
            f"TRIALS>={min_trials} (the seed: 5 runs)", cause=SETTING)
    require(found.noerror_share >= noerror,
            f"{server} over {LABELS[transport]} answered {found.noerror_share:.1%} NOERROR",
            "a server that answers its zone or cache (see the cell's raw output)", cause=SETTING)
    require(found.ceiling is not None,
            f"no generator ceiling for {LABELS[transport]} measured in this run",
            "a run that measures it (CEILING=true)", cause=SETTING)
    assert found.ceiling is not None
    require(not found.above_ceiling,
            f"{server} over {LABELS[transport]} answered {found.qps:,.0f} qps, more than the "
            f"ceiling cell's best round ({found.ceiling:,.0f} qps, {found.generator} against "
            "dnsload serve on the server's cores): that is the responder's limit, the "
            "generator's own is not measured",
            "a ceiling the responder does not hold (SERVER_CPUS with more cores for it)",
            cause=SETTING)
    require(not found.limited,
            f"generator-limited: {server} over {LABELS[transport]} answered "
            f"{found.qps:,.0f} qps, {found.share_of_ceiling:.0%} of the generator's ceiling "
            f"{found.ceiling:,.0f} qps ({found.generator})" + _busy_said(found),
            GENERATOR_REMEDY, cause=MACHINE)
    misses = found.out_of_regime(margin)
    require(not misses,
            f"{server} over {LABELS[transport]} is out of the source's regime: "
            + "; ".join(what for what, _ in misses)
            + f" ({derived.source_regime().said(transport)})",
            "a load in the source's regime (TIMEOUT_S=5 as dnsperf's default, each server's "
            "socket buffers at 512 KiB, THREADS as the seed's configs; the generator on a core "
            "of its own where it was full)",
            cause=MACHINE if misses and all(c == MACHINE for _, c in misses) else SETTING)
    return found


def _busy_said(found: Measured) -> str:
    if found.generator_busy_pct is None or found.cores_busy_pct is None:
        return ""
    return (f"; in its trials the generator's cores {found.generator_busy_pct:.0f} % busy, the "
            f"server's {found.cores_busy_pct:.0f} %")


def ratio(run: Run, verdict: Verdict, server: str, transport: str, min_trials: int,
          noerror: float, margin: float) -> tuple[float, Measured, Measured]:
    """transport/UDP of one server, both figures its own, with the TLS version said where it
    is not the seed's."""
    udp = server_figure(run, server, "udp", min_trials, noerror, margin)
    other = server_figure(run, server, transport, min_trials, noerror, margin)
    tls = derived.tls_of(run, server, transport)
    if tls and not tls.startswith("TLSv1.2"):
        verdict.condition(f"{tls.split()[0]} (seed: TLS 1.2)")
    return other.qps / udp.qps, other, udp


def ratio_figure(what: str, top: Measured, bottom: Measured, low: float | None = None,
                 high: float | None = None) -> Judged:
    """top's median qps over bottom's with its bootstrap interval over the trials, paired by
    round where both ran the same rounds (a round runs the transports one after another on
    the same lab), against the band [low, high]."""
    mine, theirs = dict(zip(top.rounds, top.values, strict=True)), dict(zip(
        bottom.rounds, bottom.values, strict=True))
    common = sorted(set(mine) & set(theirs))
    paired = bool(common) and len(common) == len(mine) == len(theirs)
    interval = (ratio_of_medians_interval([mine[r] for r in common],
                                          [theirs[r] for r in common], paired=True)
                if paired else ratio_of_medians_interval(top.values, bottom.values))
    return Judged(what, interval.of("trials"), low=low, high=high)


def said(server: str, transport: str, value: float, other: Measured, udp: Measured) -> str:
    return (f"{server}: {LABELS[transport]} {other.qps:,.0f} / UDP {udp.qps:,.0f} qps = "
            f"{value:.2f} ({other.generator} {other.share_of_ceiling:.0%} and "
            f"{udp.generator} {udp.share_of_ceiling:.0%} of their ceilings, "
            f"{other.trials}/{udp.trials} trials)")


def _others(run: Run) -> list[str]:
    """The run's servers but its front-end (the seed's summary: "except dnsdist")."""
    return [server for server, cell in derived.server_cells(run).items()
            if not derived.is_front_end(run, cell)]


def _frontend(run: Run) -> str:
    found = [server for server, cell in derived.server_cells(run).items()
             if derived.is_front_end(run, cell)]
    if not found:
        not_applicable("the run measured no front-end (SERVERS=...,<the front-end's kind>)",
                       cause=SETTING)
    return found[0]


def _every_ratio(run: Run, verdict: Verdict, transport: str, low: float, high: float,
                 min_trials: int, noerror: float, margin: float) -> None:
    """Every server but the front-end whose figures are its own: the transport's ratio to
    UDP within [low, high]; the others listed, not judged."""
    judged, skipped, unmet = [], [], []
    for server in _others(run):
        if transport in derived.not_served(run, server):
            skipped.append(f"{server}: no {LABELS[transport]}")  # never judged: no cause
            continue
        try:
            judged.append((server, *ratio(run, verdict, server, transport, min_trials,
                                          noerror, margin)))
        except NotApplicable as exc:
            skipped.append(f"{server}: {exc}")
            unmet.append(exc)
    require(bool(judged), f"no server but the front-end has {LABELS[transport]} and UDP figures "
            "of its own" + (": " + "; ".join(skipped) if skipped else ""),
            "what each server's reason says", cause=combined_cause(unmet))
    verdict.condition(cores_condition(run.meta, SEED_THREADS, "each server"))
    for text in derived.seed_differences(run, [server for server, *_ in judged]):
        verdict.condition(text)
    parts = [said(derived.label(run, server), transport, value, other, udp)
             for server, value, other, udp in judged]
    verdict.measured = "; ".join(parts) + ("; not judged: " + "; ".join(skipped)
                                           if skipped else "")
    figures = [ratio_figure(derived.label(run, server), other, udp, low, high)
               for server, _, other, udp in judged]
    verdict.phrase = f"{LABELS[transport]}/UDP " + ", ".join(f.text() for f in figures)
    decide(verdict, *figures)


def _seed_runs(server: derived.SeedServer, transport: str) -> str:
    """The source's runs behind a published ratio: each figure's range over its runs, in
    kqps (the spread a speaker weighs the figure by)."""
    said = []
    for name in ("udp", transport):
        runs = server.source.runs[name]
        ran = [runs.qps[i] / 1000 for i in runs.ran]
        said.append(f"{LABELS[name]} {min(ran):,.0f}-{max(ran):,.0f}k")
    return f"{', '.join(said)}, {len(server.source.runs[transport].ran)} runs"


def _seed_said(transport: str, front_end: bool) -> str:
    return ", ".join(f"{s.name} {s.ratio(transport):.2f}" for s in derived.seed()
                     if s.front_end == front_end and s.ratio(transport) is not None)


@claim(
    "F6.tcp-cost",
    title="Every server but the front-end answers 40-50 % as many queries over TCP as over UDP",
    published="TCP/UDP at 8 clients: " + ", ".join(
        f"{s.name} {s.ratio('tcp'):.2f} ({_seed_runs(s, 'tcp')})" for s in derived.seed()
        if not s.front_end)
    + "; " + SUMMARY,
    source=SOURCE, effect=TWO_SIDED,
    tolerance="qps(TCP)/qps(UDP) of every server but the front-end between {low} and {high} "
              "(the summary's 40-50 % +-10 points)" + INTERVAL_RULE,
    precondition=PRECONDITION + "; servers whose figures are not their own are listed, not "
                 "judged",
    fails_when="a server's TCP costs far less (ratio above {high}) or far more (below {low})",
    limits={"low": 0.30, "high": 0.60, **LIMITS},
    interval=True,
)
def test_tcp_cost(run: Run, verdict: Verdict, low: float, high: float, bound: float,
                  min_trials: int, noerror: float, regime_margin: float) -> None:
    _every_ratio(run, verdict, "tcp", low, high, min_trials, noerror, regime_margin)


@claim(
    "F6.tls-cost",
    title="Every server but the front-end answers 30-40 % as many queries over TLS as over UDP",
    published="TLS/UDP at 8 clients (TLS 1.2): " + ", ".join(
        f"{s.name} {s.ratio('dot'):.2f} ({_seed_runs(s, 'dot')})" for s in derived.seed()
        if not s.front_end and s.tls) + "; " + SUMMARY,
    source=SOURCE, effect=TWO_SIDED,
    tolerance="qps(DoT)/qps(UDP) of every server but the front-end that serves DoT between "
              "{low} and {high} (the summary's 30-40 % +-10 points; the seed's 0.28 and 0.37 "
              "inside)" + INTERVAL_RULE,
    precondition=PRECONDITION + "; servers whose figures are not their own are listed, not "
                 "judged",
    fails_when="a server's TLS costs far less (ratio above {high}) or far more (below {low})",
    limits={"low": 0.20, "high": 0.50, **LIMITS},
    interval=True,
)
def test_tls_cost(run: Run, verdict: Verdict, low: float, high: float, bound: float,
                  min_trials: int, noerror: float, regime_margin: float) -> None:
    _every_ratio(run, verdict, "dot", low, high, min_trials, noerror, regime_margin)


def _frontend_ratio(run: Run, verdict: Verdict, transport: str, min_cores: int,
                    min_trials: int, noerror: float, margin: float
                    ) -> tuple[str, float, Measured, Measured]:
    server = _frontend(run)
    cores = derived.server_cores(run, server)
    require(cores is not None and cores >= min_cores,
            f"the front-end ({server}) on {cores} core(s): TCP/TLS workers share them with "
            "its UDP listener (seed: 4 listeners on 4 CPUs, workers on 32 threads)",
            f"a machine with >= {min_cores} cores for the front-end besides the generator's "
            "(SERVER_CPUS)", cause=MACHINE)
    verdict.condition(cores_condition(run.meta, SEED_THREADS, server))
    for text in derived.seed_differences(run, [server]):
        verdict.condition(text)
    return server, *ratio(run, verdict, server, transport, min_trials, noerror, margin)


@claim(
    "F6.frontend.tcp",
    title="The front-end answers at least as many queries over TCP as over UDP",
    published=f"TCP/UDP at 8 clients: {_seed_said('tcp', True)} ('except dnsdist, "
              "which uses a different threading model and performed better')",
    source=SOURCE, effect=DIRECTIONAL,
    tolerance="qps(TCP)/qps(UDP) >= {floor}" + INTERVAL_RULE,
    precondition="the front-end had >= {min_cores} cores of its own (TCP workers beside its "
                 "UDP listeners); " + PRECONDITION,
    fails_when="the front-end answers fewer queries over TCP than over UDP",
    limits={"floor": 1.0, "min_cores": 2, **LIMITS},
    interval=True,
)
def test_frontend_tcp(run: Run, verdict: Verdict, floor: float, min_cores: int, bound: float,
                      min_trials: int, noerror: float, regime_margin: float) -> None:
    server, value, other, udp = _frontend_ratio(run, verdict, "tcp", min_cores, min_trials,
                                                noerror, regime_margin)
    verdict.measured = said(server, "tcp", value, other, udp)
    figure = ratio_figure(f"{server} TCP/UDP", other, udp, low=floor)
    verdict.phrase = (f"{figure.text()} ({other.qps / 1000:,.0f}k / "
                      f"{udp.qps / 1000:,.0f}k qps)")
    decide(verdict, figure)


@claim(
    "F6.frontend.tls",
    title="The front-end answers about 70 % as many queries over TLS as over UDP",
    published=f"TLS/UDP at 8 clients (TLS 1.2): {_seed_said('dot', True)} (the "
              "repository's bar_data_percent.txt: 71)",
    source=SOURCE, effect=TWO_SIDED,
    tolerance="qps(DoT)/qps(UDP) between {low} and {high}" + INTERVAL_RULE,
    precondition="the front-end had >= {min_cores} cores of its own (TLS workers beside its "
                 "UDP listeners); " + PRECONDITION,
    fails_when="TLS costs the front-end far more (below {low}) or nothing (above {high})",
    limits={"low": 0.55, "high": 0.90, "min_cores": 2, **LIMITS},
    interval=True,
)
def test_frontend_tls(run: Run, verdict: Verdict, low: float, high: float, min_cores: int,
                      bound: float, min_trials: int, noerror: float,
                      regime_margin: float) -> None:
    server, value, other, udp = _frontend_ratio(run, verdict, "dot", min_cores, min_trials,
                                                noerror, regime_margin)
    verdict.measured = said(server, "dot", value, other, udp)
    figure = ratio_figure(f"{server} DoT/UDP", other, udp, low=low, high=high)
    verdict.phrase = (f"{figure.text()} ({other.qps / 1000:,.0f}k / "
                      f"{udp.qps / 1000:,.0f}k qps)")
    decide(verdict, figure)


def _pairs(run: Run, upper: str, lower: str, min_trials: int, noerror: float, margin: float
           ) -> tuple[list[tuple[str, Measured, Measured]], list[tuple[str, NotApplicable]]]:
    """Every server of the run that serves both transports: (server, upper's figure,
    lower's figure) where both are the server's, and why each of the others is not judged."""
    judged, skipped = [], []
    for server in derived.server_cells(run):
        missing = derived.not_served(run, server)
        if upper in missing or lower in missing:
            continue
        try:
            judged.append((server, server_figure(run, server, upper, min_trials, noerror,
                                                 margin),
                           server_figure(run, server, lower, min_trials, noerror, margin)))
        except NotApplicable as exc:  # said, and the others judged
            skipped.append((server, exc))
    return judged, skipped


def _below(run: Run, verdict: Verdict, upper: str, lower: str, margin: float,
           min_trials: int, noerror: float, regime_margin: float) -> None:
    judged, unmet = _pairs(run, upper, lower, min_trials, noerror, regime_margin)
    skipped = [f"{server}: {exc}" for server, exc in unmet]
    require(bool(judged), "no server whose " + LABELS[upper] + " and " + LABELS[lower]
            + " figures are both its own" + (": " + "; ".join(skipped) if skipped else ""),
            "what each server's reason says", cause=combined_cause([e for _, e in unmet]))
    verdict.condition(cores_condition(run.meta, SEED_THREADS, "each server"))
    for text in derived.seed_differences(run, [server for server, *_ in judged]):
        verdict.condition(text)
    parts = [f"{derived.label(run, server)} {LABELS[lower]} {low.qps:,.0f} / "
             f"{LABELS[upper]} {up.qps:,.0f} = {low.qps / up.qps:.2f}"
             for server, up, low in judged]
    verdict.measured = "; ".join(parts) + ("; not judged: " + "; ".join(skipped)
                                           if skipped else "")
    # lower / upper at most 1 - margin (DoH: up to 1 + 5 % of DoT)
    figures = [ratio_figure(derived.label(run, server), low, up, high=1 - margin)
               for server, up, low in judged]
    verdict.phrase = (f"{LABELS[lower]}/{LABELS[upper]} "
                      + ", ".join(f.text() for f in figures))
    decide(verdict, *figures)


@claim(
    "F6.tls-below-tcp",
    title="Every server answers fewer queries over TLS than over TCP",
    published="TLS below TCP for every server that had TLS: " + ", ".join(
        f"{s.name} {s.tls / 1000:,.0f}k < {s.tcp / 1000:,.0f}k" for s in derived.seed()
        if s.tls) + " qps at 8 clients",
    source=SOURCE, effect=DIRECTIONAL,
    tolerance="qps(DoT) < (1 - {margin:.0%}) x qps(TCP) for every server judged" + INTERVAL_RULE,
    precondition="a server whose TCP and DoT figures are both its own (" + PRECONDITION
                 + "); the others are listed, not judged",
    fails_when="a server answers as many queries over DoT as over TCP, or more",
    limits={"margin": 0.05, **LIMITS},
    interval=True,
)
def test_tls_below_tcp(run: Run, verdict: Verdict, margin: float, bound: float,
                       min_trials: int, noerror: float, regime_margin: float) -> None:
    _below(run, verdict, "tcp", "dot", margin, min_trials, noerror, regime_margin)


@claim(
    "F6.doh-below-dot",
    title="No server answers more queries over DoH than over DoT",
    published="(no DoH in the seed) the lab's check: DoH is DNS in HTTP/2 frames inside the "
              "same TLS, so it costs a server at least what DoT does",
    source="the lab's own check beside seed 005", effect=DIRECTIONAL, kind=LAB_CHECK,
    tolerance="qps(DoH) <= (1 + {margin:.0%}) x qps(DoT) for every server judged"
              + INTERVAL_RULE,
    precondition="a server whose DoT and DoH figures are both its own (" + PRECONDITION
                 + "); the others are listed, not judged",
    fails_when="a server answers more than {margin:.0%} more queries over DoH than over DoT",
    limits={"margin": 0.05, **LIMITS},
    interval=True,
)
def test_doh_below_dot(run: Run, verdict: Verdict, margin: float, bound: float,
                       min_trials: int, noerror: float, regime_margin: float) -> None:
    _below(run, verdict, "dot", "doh", -margin, min_trials, noerror, regime_margin)


# --- transport-latency: the lab's own checks ----------------------------------------------

# a server that sends its answers late because of a socket option of its own, not the
# transport's round trips: Nagle's algorithm on its socket (TCP_NODELAY off) holds a small
# answer while an earlier segment (a TLS session ticket, the previous answer) waits for the
# client's ACK, which Linux delays up to 40 ms (NOTES.md, "Where the ~40 ms stalls come from")
NAGLE_HOLD = ("the server holds its answer for the client's delayed ACK (Nagle: TCP_NODELAY "
              "off on its socket), not the transport's round trips nor encryption cost")
NAGLE_REMEDY = ("a server that sets TCP_NODELAY on its connections (Unbound >= 1.23 on DoT, "
                "BIND >= 9.19.9 on TCP and DoT; NSD up to 4.13 does not), or a client that "
                "does not delay its ACKs")


def _held(run: Run, server: str, transport: str, mode: str, rtts: float, rtt: float,
          low: float, high: float) -> str | None:
    """Whether a figure above its band is the server's own hold: Nagle on the server's socket
    (read in the run) while the lab's responder (TCP_NODELAY on) answered the same load within
    the band (its figure, said); None where the run does not show both."""
    # a new TCP connection's answer is the first thing the server writes on it: nothing
    # unacknowledged before it for Nagle to wait on
    if rtts <= high or (transport == "tcp" and mode == PER_QUERY):
        return None
    responder = derived.responder_median_ms(run, transport, mode)
    if (derived.nodelay_of(run, server, transport) is not False or responder is None
            or not low <= responder / rtt <= high):
        return None
    return f"the lab's responder {responder:.1f} ms"


def _latency_cells(run: Run, min_share: float) -> tuple[float, dict[str, Cell]]:
    """The run's round trip, once it was applied to every cell, and the server cells."""
    rtt = derived.rtt_ms(run)
    require(rtt > 0, "no round trip emulated (RTT_MS=0)", "RTT_MS=20", cause=SETTING)
    cells = derived.server_cells(run)
    if not cells:
        not_applicable("no server cell in this run", cause=SETTING)
    for server, cell in cells.items():
        applied = derived.wan_applied(run, cell)
        require(applied is not None and abs(applied - rtt) < 0.5,
                f"{server}'s cell read back a client delay of {applied} ms, not {rtt:g}",
                "a kernel with netem, or the nfqueue backend (dnslab.wan)", cause=SETTING)
        frame = cell.csv("trials.csv", ("target_qps", "sent", "run_time_s"))
        sent = frame["sent"].astype(float) / frame["run_time_s"].astype(float)
        share = float((sent / frame["target_qps"].astype(float)).min())
        require(share >= min_share, f"{server}: a trial sent {share:.0%} of its paced rate",
                "a lower RATE, or a faster generator", cause=SETTING)
    return rtt, cells


@claim(
    "F6.latency.persistent",
    title="Over connections kept open, every transport answers in one round trip",
    published="(no latency in the seed) the lab's check: once a connection is open, a query "
              "over TCP, DoT or DoH takes one round trip, as over UDP",
    source="the lab's own check beside seed 005", effect=TWO_SIDED, kind=LAB_CHECK,
    tolerance="every server's and transport's median answer within {low}-{high} round trips",
    precondition="a round trip emulated and read back on the client's link in every cell, "
                 "every trial sent >= {min_share:.0%} of its paced rate; no figure above the "
                 "band held by the server itself (Nagle on its socket, while the lab's "
                 "responder answered the same load within the band)",
    fails_when="a transport's median answer takes more than {high} round trips (a handshake or "
               "a stall per query) or less than {low} (no round trip applied)",
    limits={"low": 0.9, "high": 1.5, "min_share": 0.9},
)
def test_latency_persistent(run: Run, verdict: Verdict, low: float, high: float,
                            min_share: float) -> None:
    rtt, cells = _latency_cells(run, min_share)
    parts, outside, held = [], [], []
    for server, cell in cells.items():
        for transport in derived.TRANSPORTS:
            pooled = derived.pooled_latency(cell, transport, PERSISTENT)
            median = derived.median_ms(pooled) if pooled is not None else None
            if median is None:
                continue
            parts.append(f"{server} {LABELS[transport]} {median:.1f} ms ({median / rtt:.2f} RTT)")
            why = _held(run, server, transport, PERSISTENT, median / rtt, rtt, low, high)
            if why:
                held.append(f"{parts[-1][:-1]}, {why})")
            elif not low <= median / rtt <= high:
                outside.append(parts[-1])
    require(bool(parts), "no trial kept answer latencies", "LATENCY_HISTOGRAM=true", cause=SETTING)
    verdict.condition(f"RTT {rtt:g} ms emulated on the client's link")
    verdict.measured = "medians: " + "; ".join(parts)
    verdict.phrase = (f"{len(parts) - len(outside) - len(held)} of {len(parts)} within "
                      f"{low}-{high} RTT" + (f", {len(held)} held by the server" if held else ""))
    assert not outside, "outside the band: " + "; ".join(outside)
    require(not held, f"{NAGLE_HOLD}: " + "; ".join(held), NAGLE_REMEDY, cause=SETTING)


# a new connection per query: TCP's handshake, then TLS 1.3's (one round trip), TLS 1.2's (two)
HANDSHAKE_RTTS = {"tcp": 1, "TLSv1.3": 1, "TLSv1.2": 2}


@claim(
    "F6.latency.handshakes",
    title="A new connection per query adds the handshakes' round trips",
    published="(no latency in the seed) the lab's check: over a new connection per query "
              "TCP waits one round trip more than UDP, DoT with TLS 1.3 two more (TLS 1.2: "
              "three)",
    source="the lab's own check beside seed 005", effect=TWO_SIDED, kind=LAB_CHECK,
    tolerance="each median answer within +-{band} round trips of 1 + the handshakes' round "
              "trips (TCP 2, DoT over TLS 1.3 3)",
    precondition="trials with a new connection per query (CONNECTIONS=...,per-query); a round "
                 "trip emulated and read back; every trial sent >= {min_share:.0%} of its "
                 "paced rate; each DoT listener's TLS version recorded (its handshake's round "
                 "trips); no figure above the count held by the server itself (Nagle on its "
                 "socket, while the lab's responder answered at the count)",
    fails_when="a median answer off the handshakes' count by more than {band} round trips",
    limits={"band": 0.6, "min_share": 0.9},
)
def test_latency_handshakes(run: Run, verdict: Verdict, band: float, min_share: float) -> None:
    rtt, cells = _latency_cells(run, min_share)
    parts, outside, held, unknown = [], [], [], []
    for server, cell in cells.items():
        for transport in ("tcp", "dot"):
            pooled = derived.pooled_latency(cell, transport, PER_QUERY)
            median = derived.median_ms(pooled) if pooled is not None else None
            if median is None:
                continue
            version = derived.tls_of(run, server, transport).split(" ")[0]
            if transport == "dot" and version not in HANDSHAKE_RTTS:
                unknown.append(f"{server} DoT {median:.1f} ms = {median / rtt:.2f} RTT: TLS "
                               f"version {version or 'not recorded'}, its handshake's round "
                               "trips unknown")
                continue
            expected = 1 + HANDSHAKE_RTTS["tcp"] + (HANDSHAKE_RTTS[version]
                                                    if transport == "dot" else 0)
            parts.append(f"{server} {LABELS[transport]} {median:.1f} ms = {median / rtt:.2f} RTT "
                         f"(expected {expected}{', ' + version if version else ''})")
            why = _held(run, server, transport, PER_QUERY, median / rtt, rtt,
                        expected - band, expected + band)
            if why:
                held.append(f"{parts[-1][:-1]}, {why})")
            elif abs(median / rtt - expected) > band:
                outside.append(parts[-1])
    require(bool(parts + unknown), "no trial with a new connection per query",
            "CONNECTIONS=persistent,per-query", cause=SETTING)
    verdict.condition(f"RTT {rtt:g} ms emulated on the client's link")
    verdict.measured = "; ".join(parts + unknown)
    verdict.phrase = (f"{len(parts) - len(outside) - len(held)} of {len(parts + unknown)} at "
                      "their handshakes' count" + (f", {len(held)} held by the server"
                                                   if held else ""))
    assert not outside, "off the handshakes' count: " + "; ".join(outside)
    require(not held, f"{NAGLE_HOLD}: " + "; ".join(held), NAGLE_REMEDY, cause=SETTING)
    require(not unknown, "; ".join(unknown), "the TLS version each DoT listener negotiated "
            "(the cell's tls_dot; HANDSHAKE_RTTS has TLS 1.2 and 1.3)", cause=SETTING)
