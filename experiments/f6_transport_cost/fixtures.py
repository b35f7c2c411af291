"""F6 synthetic runs: transport-cost (each server's trials per transport, the generator's
ceiling per transport) and transport-latency (each trial's answer latencies under an
emulated round trip), shaped as `transport.py` writes them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from analysis.synthetic import CellData, write_run
from dnslab import cpus, results
from experiments.generators.perf import LATENCY_BINS

ROW_HEADER = ["trial", "mode", "transport", "generator", "connections_asked", "outstanding",
              "target_qps", "qps", "sent", "completed", "lost", "run_time_s", "noerror",
              "avg_latency_ms", "generator_cpu_pct", "reconnections", "tls", "latency_file",
              "connections", "server_cores_busy_pct", "generator_cores_busy_pct"]
NODES = {"unbound": ("resolver", "resolver"), "dnsdist": ("frontend", "frontend"),
         "bind": ("sec-bind", "secondary"), "nsd": ("sec-nsd", "secondary"),
         "knot": ("sec-knot", "secondary")}
SERVES = {"unbound": ("udp", "tcp", "dot", "doh"), "dnsdist": ("udp", "tcp", "dot", "doh"),
          "bind": ("udp", "tcp", "dot", "doh"), "nsd": ("udp", "tcp", "dot"),
          "knot": ("udp", "tcp")}
GENERATORS = {"udp": "dnsperf", "tcp": "dnsload", "dot": "dnsload", "doh": "dnsload"}
TOPOLOGY = {"name": "reference", "file": "reference.clab.yml",
            "nodes": {node: {"role": role, "server": kind} for kind, (node, role) in
                      NODES.items()} | {"client": {"role": "client", "server": "tools"}}}
TLS = "TLSv1.3 TLS_AES_256_GCM_SHA384"
SEED_THREADS = {"unbound": 4, "dnsdist": 4}  # the experiment file's `threads`
# a 2-core machine's figures (the CI runs of 2026-11-26, rounded): server over each transport
MACHINE_QPS = {"unbound": {"udp": 85000, "tcp": 78000, "dot": 50000, "doh": 26000},
               "dnsdist": {"udp": 44000, "tcp": 63000, "dot": 60000, "doh": 40000},
               "bind": {"udp": 60000, "tcp": 40000, "dot": 30000, "doh": 15000},
               "nsd": {"udp": 150000, "tcp": 120000, "dot": 80000},
               "knot": {"udp": 120000, "tcp": 90000}}
CEILINGS = {"udp": 190000.0, "tcp": 930000.0, "dot": 700000.0, "doh": 80000.0}


# the source's regime over UDP (its CSVs at 8 clients: 92-98 % of the slots held by lost
# queries waiting out the timeout); none over the others
HELD = {"udp": 0.95}
TIMEOUT_S = 2.0


def _row(trial: int, mode: str, transport: str, qps: float, seconds: float,
         latency_file: str = "", target: float | str = "", noerror: float = 1.0,
         tls: str = "", busy: float = 100.0, held: float = 0.0,
         generator_busy: float = 60.0) -> list[Any]:
    answered = int(qps * seconds)
    lost = int(held * seconds * 5000 / TIMEOUT_S)  # each holds its slot for the timeout
    return [trial, mode, transport, GENERATORS[transport],
            0 if transport == "udp" else 8, 5000, target, round(qps, 1),
            answered + lost, answered, lost, seconds, int(answered * noerror), 2.0, 60.0, 0,
            tls, latency_file, 0 if transport == "udp" else 8, busy, generator_busy]


def transport_cost_run(root: Path, *, qps: dict[str, dict[str, float]],
                       ceilings: dict[str, float] | None = None, trials: int = 5,
                       server_cpus: str = "0", spread: float = 0.02,
                       noerror: float = 1.0, seed: int = 5, ceiling: bool = True,
                       busy: dict[str, float] | None = None,
                       held: dict[str, float] | None = None,
                       generator_busy: float = 60.0, threads: int | None = None,
                       ceiling_rounds: dict[str, tuple[float, float]] | None = None,
                       **kwargs: Any) -> Path:
    """Servers (`qps`: server -> transport -> median qps; a transport a kind does not serve
    is left out and recorded as not served), `trials` rounds each with a relative `spread`,
    the generator's ceiling per transport (`ceilings`, default CEILINGS; `ceiling=False`:
    none measured; `ceiling_rounds`: a transport's two rounds where they differ), the servers
    on `server_cpus` of a 2-core machine, their cores 100 % busy
    in every trial but over the transports `busy` gives (transport -> %); the share of the
    slots lost queries held over each transport (`held`, default the source's regime
    `HELD`), the generator's cores `generator_busy` % busy; the servers' `threads` (None:
    one per core)."""
    rng = np.random.default_rng(seed)
    top = {**CEILINGS, **(ceilings or {})}
    cells = []
    if ceiling:
        rounds = {t: (v, v) for t, v in top.items()} | dict(ceiling_rounds or {})
        rows = [_row(t, "persistent", transport, values[t - 1], 20.0)
                for t in (1, 2) for transport, values in rounds.items()]
        cells.append(CellData({"phase": "ceiling", "responder": "dnsload serve -dot -doh",
                               "responder_node": "resolver"},
                              {f"ceiling_qps_{t}": v for t, v in top.items()},
                              csv={"ceiling.csv": (ROW_HEADER[:-3], [r[:-3] for r in rows])}))
    for server, by_transport in qps.items():
        node, role = NODES[server]
        rows = [_row(t, "persistent", transport, value * float(rng.normal(1, spread)), 20.0,
                     noerror=noerror, tls=TLS if transport in ("dot", "doh") else "",
                     busy=(busy or {}).get(transport, 100.0),
                     held={**HELD, **(held or {})}.get(transport, 0.0),
                     generator_busy=generator_busy)
                for t in range(1, trials + 1) for transport, value in by_transport.items()]
        not_served = {t: f"the packaged {server} does not serve {t} (its manifest says why)"
                      for t in ("dot", "doh") if t not in SERVES[server]}
        cells.append(CellData(
            {"server": server, "server_node": node, "role": role,
             "transports": list(by_transport)},
            {"not_served": not_served, "server_node": node,
             "server_cores": len(cpus.parse(server_cpus)),
             "server_threads": threads or len(cpus.parse(server_cpus)),
             "seed_threads": SEED_THREADS.get(server),
             "answers_as": "resolver (static-stub)" if server == "bind" else role,
             **{f"tls_{t}": TLS for t in ("dot", "doh") if t in by_transport}},
            csv={"trials.csv": (ROW_HEADER, rows)}))
    machine = max(cpus.parse(server_cpus)) + 2
    run = write_run(root, "transport-cost", cells, topology=TOPOLOGY, cpus=machine,
                    params={"servers": list(qps), "transports": ["udp", "tcp", "dot", "doh"],
                            "trials": trials, "trial_s": 20, "clients": 8,
                            "outstanding": 5000, "timeout_s": TIMEOUT_S,
                            "generators": GENERATORS}, **kwargs)
    _placement(run, server_cpus)
    return run


def _placement(run: Path, server_cpus: str) -> None:
    """The run's CPU placement in meta.json, as `Run.placement` records it: the generator on
    the core after the servers'."""
    meta = results.read_meta(run)
    writer = results.RunWriter(dir=run, meta=meta, _cell_dirs={})
    generator = max(cpus.parse(server_cpus)) + 1
    writer.record_run_placement({"generator_cpus": str(generator), "server_cpus": server_cpus,
                                 "shared": False, "host_cpus": f"0-{generator}"})


def seed_ratios(**changes: dict[str, float]) -> dict[str, dict[str, float]]:
    """Every server with the seed's ratios to UDP (Unbound TCP 0.41, DoT 0.28; BIND TCP 0.49;
    dnsdist TCP 1.47, DoT 0.71; NSD and Knot TCP 0.45, DoT 0.33; DoH 0.8 of DoT) on this
    machine's UDP figures, `changes` over them ({server: {transport: ratio}})."""
    ratios = {"unbound": {"tcp": 0.41, "dot": 0.28}, "bind": {"tcp": 0.49, "dot": 0.33},
              "dnsdist": {"tcp": 1.47, "dot": 0.71}, "nsd": {"tcp": 0.45, "dot": 0.33},
              "knot": {"tcp": 0.45}}
    out = {}
    for server, udp in ((s, MACHINE_QPS[s]["udp"]) for s in ratios):
        mine = {**ratios[server], **changes.get(server, {})}
        out[server] = {"udp": udp, **{t: udp * r for t, r in mine.items()}}
        if "doh" in SERVES[server]:
            out[server]["doh"] = mine.get("doh", 0.8 * mine["dot"]) * udp
    return out


# --- transport-latency ------------------------------------------------------------------

def latency_histogram(median_ms: float, rng: np.random.Generator, answers: int = 4000,
                      spread: float = 0.05) -> tuple[list[str], list[list[Any]]]:
    """Answer latencies around `median_ms` as dnsperf -v's histogram file."""
    values = rng.lognormal(np.log(median_ms), spread, answers) / 1000.0
    edges = np.array([0.0, *LATENCY_BINS, np.inf])
    counts, _ = np.histogram(values, bins=edges)
    return ["upper_s", "count"], [[f"{e:.6g}", int(n)] for e, n in
                                  zip([*LATENCY_BINS, float("inf")], counts, strict=True)]


def transport_latency_run(root: Path, *, rtts: dict[str, float] | None = None,
                          server_rtts: dict[str, dict[str, float]] | None = None,
                          nodelay: dict[str, dict[str, bool]] | None = None,
                          rtt_ms: float = 20.0, applied_ms: float | None = None,
                          sent_share: float = 1.0, tls_version: str | None = "TLSv1.3",
                          servers: tuple[str, ...] = ("unbound", "dnsdist", "bind", "nsd"),
                          per_query: bool = True, trials: int = 2, seed: int = 6,
                          **kwargs: Any) -> Path:
    """Each server's trials per transport and mode, every answer's latency around a number
    of round trips (`rtts`: {"<transport>" or "<transport>/per-query": RTTs}, default one
    for every transport kept open, 2 for TCP and 3 for DoT per query; `server_rtts` over
    them for one server, not the responder); whether each server's sockets had TCP_NODELAY
    set (`nodelay`: {server: {transport: bool}}; not read where not given); the client's
    delay read back as `applied_ms` (default `rtt_ms`); each paced trial sent `sent_share`
    of its rate; `per_query` False: connections kept open only; `tls_version` None: no TLS
    session recorded."""
    rng = np.random.default_rng(seed)
    base = {"udp": 1.02, "tcp": 1.03, "dot": 1.04, "doh": 1.06, "tcp/per-query": 2.05,
            "dot/per-query": 3.08, **(rtts or {})}
    rate = 500.0
    tls = f"{tls_version} TLS_AES_256_GCM_SHA384" if tls_version else ""
    cells: list[CellData] = []
    for name, transports in (("ceiling", ("udp", "tcp", "dot", "doh")),
                             *((s, SERVES[s]) for s in servers)):
        rows, files = [], {}
        wanted = {**base, **(server_rtts or {}).get(name, {})}
        for trial in range(1, trials + 1):
            for key, rtts_ in wanted.items():
                transport, _, mode = key.partition("/")
                if transport not in transports:
                    continue
                mode = mode or "persistent"
                if mode != "persistent" and not per_query:
                    continue
                suffix = "-per-query" if mode != "persistent" else ""
                file = f"latency-{transport}{suffix}-{trial}.csv"
                scale = 0.98 if name == "ceiling" else 1.0
                files[file] = latency_histogram(rtt_ms * rtts_ * scale, rng)
                row = _row(trial, mode, transport, rate * sent_share, 20.0, file, rate,
                           tls=tls if transport in ("dot", "doh") else "")
                rows.append(row)
        if name == "ceiling":
            cells.append(CellData({"phase": "ceiling", "responder_node": "resolver"}, {},
                                  csv={"ceiling.csv": (ROW_HEADER[:-3], [r[:-3] for r in rows]),
                                       **files}))
            continue
        node, role = NODES[name]
        cells.append(CellData({"server": name, "server_node": node, "role": role},
                              {"not_served": {}, "server_cores": 1, "rtt_ms": rtt_ms,
                               **{f"tls_{t}": tls for t in ("dot", "doh")
                                  if t in SERVES[name] and tls},
                               **{f"nodelay_{t}": on for t, on in
                                  (nodelay or {}).get(name, {}).items()}},
                              csv={"trials.csv": (ROW_HEADER, rows), **files}))
    run = write_run(root, "transport-latency", cells, topology=TOPOLOGY,
                    params={"servers": list(servers), "rtt_ms": rtt_ms, "rate": rate,
                            "trials": trials, "trial_s": 20, "timeout_s": 2.0,
                            "connections": ["persistent", "per-query"]}, **kwargs)
    meta = results.read_meta(run)
    writer = results.RunWriter(dir=run, meta=meta, _cell_dirs={})
    delay = rtt_ms if applied_ms is None else applied_ms
    for cell_id in meta.get("cells") or {}:
        writer.record_cell(cell_id, "wan", {"client": {"backend": "netem", "delay_ms": delay,
                                                       "jitter_ms": 0.0, "loss_pct": 0.0}})
    _placement(run, "0")
    return run


def full_scale_runs() -> list[tuple[str, Callable[[Path], Path]]]:
    """Both experiments at their full scale's shape: five servers x four transports x five
    rounds; four servers x persistent and per-query connections."""
    return [("transport-cost: 5 servers x 4 transports x 5 rounds",
             lambda root: transport_cost_run(root, qps=MACHINE_QPS)),
            ("transport-latency: 4 servers, both connection modes",
             lambda root: transport_latency_run(root))]


def seed_like_runs() -> dict[str, Callable[[Path], Path]]:
    """{experiment: a run where every claim it names holds} for the altered-data check:
    the seed's ratios on 2 cores of the servers' own (dnsdist's claims need two)."""
    return {"transport-cost": lambda root: transport_cost_run(root, qps=seed_ratios(),
                                                             server_cpus="0-1"),
            "transport-latency": lambda root: transport_latency_run(root)}
