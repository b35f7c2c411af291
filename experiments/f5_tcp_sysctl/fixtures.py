"""F5 synthetic runs: paced dnsperf trials per sysctl profile, with a capacity cell and the
generator's ceiling."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from analysis.synthetic import CellData, write_run

TRIAL_COLUMNS = ["trial", "load_pct", "target_qps", "qps", "sent", "lost", "avg_latency_ms",
                 "listen_overflows", "latency_file"]
HISTOGRAM_COLUMNS = ["upper_s", "count"]


CEILING_COLUMNS = ["trial", "mode", "load_pct", "target_qps", "qps", "sent"]


def tcp_sysctl_run(root: Path, *, gain: dict[str, float], latency_gain: dict[str, float]
                   | None = None, trials: int = 8, overflows: int = 500,
                   capped: bool = False, seed: int = 7,
                   node_sysctls: dict[str, dict[str, dict[str, str]]] | None = None,
                   generator_max: float | None = 1e6, sent_share: dict[str, float] | None = None,
                   per_round: bool = False, answered_share: float = 0.8,
                   lost_gain: dict[str, float] | None = None, spread: float = 0.01,
                   loads: tuple[int, ...] = (10, 100), histograms: bool = False,
                   ceiling_first_share: float = 1.0, timeout_s: float = 0.5,
                   trial_s: int = 30, resets: int | None = None,
                   client: tuple[int, int] | None = None, retrans: int | None = None,
                   under_test: str | None = None, **kwargs: Any) -> Path:
    """Profiles default + `gain` keys (qps factor vs default at 100 % load; the default answers
    `answered_share` of the offered rate there, no profile more than all of it). `capped` makes
    every trial answer its -Q target (the server never saturated). `node_sysctls` replaces the
    sysctls read back for a profile ({profile: {node: {key: value}}}). `generator_max`: the most
    qps dnsperf sends and gets answered against the canned responder (the `phase=ceiling` cell
    answers min(target, it) per load; None: no ceiling cell, as in runs before it existed);
    `ceiling_first_share`: its first round reached only that share of it (a round the machine
    disturbed). Each trial sends its target over `trial_s` (open loop), or `sent_share[profile]`
    of it at 100 % load. `per_round`: one cell per profile and round (`profile=<p>,round=<r>`,
    as the procedure writes them since rounds are blocks) instead of one per profile; the same
    trials either way. `lost_gain`: lost queries per profile against the default's 1 % of its
    answers; `spread`: the trials' relative spread (qps and latency). `histograms`: each trial
    keeps its answer-latency histogram (`latency-l<load>-<trial>.csv`, as dnsperf -v gives the
    procedure), shaped by `latency_histogram`. `timeout_s`: dnsperf's (the experiment's
    default 0.5 s, under the 1 s SYN retry); `trial_s`: each trial's length. `resets`: the
    trials count EmbryonicRsts (`embryonic_rsts`), this many in each trial of a profile that
    turns tcp_abort_on_overflow on at 100 % load (None: a run before the column). `client`:
    the generator's counters, (SYNs retried, data segments resent) in every profile's trial at
    100 % load, none reset (None: a run before them). `retrans`: the server's RetransSegs in
    every profile's trial at 100 % load (`retrans_segs`; None: a run without the column).
    `under_test`: the lab holds a second authoritative node, `auth`, beside the one under test
    of this name (SERVER=bind: `auth-bind`), whose cells name it (`primary_node`) and whose
    settings alone are read back."""
    rng = np.random.default_rng(seed)
    sysctl_of = {"tso-win-divisor-1": {"net.ipv4.tcp_tso_win_divisor": "1"},
                 "diiner": {"net.ipv4.tcp_abort_on_overflow": "1"},
                 "tcp-sack-0": {"net.ipv4.tcp_sack": "0"},
                 "esnet-10g": {"net.core.rmem_max": "67108864", "net.core.wmem_max": "67108864",
                               "net.ipv4.tcp_rmem": "4096 87380 33554432"},
                 "ldplayer": {"net.core.somaxconn": "65535",
                              "net.ipv4.tcp_max_syn_backlog": "8388600"}}
    cells = []
    if generator_max is not None:
        rows = []
        for trial in (1, 2):
            rows.append([trial, "closed", "", "", generator_max, int(generator_max * 3)])
            for load in loads:
                target = 20000.0 * load / 100
                reached = min(target, generator_max) * (ceiling_first_share if trial == 1
                                                        else 1.0)
                rows.append([trial, "paced", load, target, round(reached, 1),
                             int(reached * trial_s)])
        figures: dict[str, Any] = {"capacity_qps": 20000.0,
                                   "closed_loop_ceiling_qps": generator_max}
        for load in loads:
            figures[f"target_qps_l{load}"] = 20000.0 * load / 100
            figures[f"ceiling_qps_l{load}"] = min(20000.0 * load / 100, generator_max)
        cells.append(CellData({"phase": "ceiling"}, figures,
                              csv={"ceiling.csv": (CEILING_COLUMNS, rows)}))
    columns = (TRIAL_COLUMNS[:-1] + (["embryonic_rsts"] if resets is not None else [])
               + (["client_syn_retrans", "client_retrans_segs", "client_estab_resets"]
                  if client is not None else [])
               + (["retrans_segs"] if retrans is not None else [])
               + TRIAL_COLUMNS[-1:])  # the latency file last, as rows keep it
    for profile in ["default", *gain]:
        rows = []
        files: dict[str, tuple[list[str], list[list[Any]]]] = {}
        for trial in range(1, trials + 1):
            for load in loads:
                target = 20000.0 * load / 100
                achieved = target if capped or load == 10 else min(
                    target, answered_share * target * gain.get(profile, 1.0)
                    * float(rng.normal(1, spread)))
                latency = 2.0 * (latency_gain or {}).get(profile, 1.0) * float(
                    rng.normal(1, spread))
                sent_rate = target * ((sent_share or {}).get(profile, 1.0) if load == 100
                                      else 1.0)
                lost = achieved * 0.01 * (lost_gain or {}).get(profile, 1.0)
                name = f"latency-l{load}-{trial}.csv" if histograms else ""
                aborts = sysctl_of.get(profile, {}).get("net.ipv4.tcp_abort_on_overflow")
                rows.append([trial, load, target, round(achieved, 1), int(sent_rate * trial_s),
                             int(lost), round(latency, 3),
                             overflows if profile == "default" and load == 100 else 0]
                            + ([resets if aborts == "1" and load == 100 else 0]
                               if resets is not None else [])
                            + ([*((client[0], client[0] + client[1]) if load == 100
                                  else (0, 0)), 0] if client is not None else [])
                            + ([retrans if load == 100 else 0] if retrans is not None else [])
                            + [name])
                if name:
                    files[name] = latency_histogram(latency, load, rng)
        node = {"auth": {"net.ipv4.tcp_tso_win_divisor": "3", "net.ipv4.tcp_abort_on_overflow":
                         "0", "net.ipv4.tcp_sack": "1", "net.core.rmem_max": "212992",
                         "net.core.wmem_max": "212992",
                         "net.ipv4.tcp_rmem": "4096 131072 6291456",
                         "net.core.somaxconn": "4096",
                         "net.ipv4.tcp_max_syn_backlog": "1024", **sysctl_of.get(profile, {})}}
        node = (node_sysctls or {}).get(profile, node)
        named = {}
        if under_test:
            node, named = {under_test: node["auth"]}, {"primary_node": under_test}
        if not per_round:
            cells.append(CellData({"profile": profile, **named}, {},
                                  csv={"trials.csv": (columns, rows), **files},
                                  sysctls=node))
            continue
        for trial in range(1, trials + 1):
            mine = [row for row in rows if row[0] == trial]
            kept = {row[-1]: files[row[-1]] for row in mine if row[-1]}
            cells.append(CellData({"profile": profile, "round": trial, **named}, {},
                                  csv={"trials.csv": (columns, mine), **kept},
                                  sysctls=node))
    return write_run(root, "tcp-sysctl", cells,
                     params={"profiles": ["default", *gain], "trial_s": trial_s,
                             "timeout_s": timeout_s},
                     topology={"name": "tcp", "file": "tcpauth.clab.yml", "nodes": {
                         "auth": {"role": "primary", "server": "knot"},
                         **({under_test: {"role": "primary", "server": "bind"}}
                            if under_test else {}),
                         "client": {"role": "client", "server": "tools"}}}, **kwargs)



def latency_histogram(median_ms: float, load_pct: int, rng: np.random.Generator,
                      answers: int = 20000, timeout_ms: float = 2000.0
                      ) -> tuple[list[str], list[list[Any]]]:
    """A trial's answer latencies as dnsperf -v's histogram (perf.LATENCY_BINS, upper edges
    in s): around `median_ms`, wider as the load passes the capacity (queueing), with a tail
    of retransmissions (200 ms, the minimum RTO) and retried SYNs (1 s)."""
    from experiments.generators.perf import LATENCY_BINS

    spread = 0.35 if load_pct < 100 else 0.6 + (load_pct - 100) / 100
    body = rng.lognormal(np.log(median_ms * (1 + max(load_pct - 90, 0) / 20)), spread,
                         answers)
    tail = np.concatenate([200 + rng.exponential(20, answers // 200),
                           1000 + rng.exponential(50, answers // 2000)])
    every = np.concatenate([body, tail])
    every = every[every < timeout_ms]  # slower: lost, never answered
    edges = np.array([0.0, *LATENCY_BINS, np.inf])
    counts, _ = np.histogram(every / 1000.0, bins=edges)
    return HISTOGRAM_COLUMNS, [[f"{edge:.6g}", int(n)] for edge, n in
                               zip([*LATENCY_BINS, float("inf")], counts, strict=True)]


def full_scale_runs() -> list[tuple[str, Callable[[Path], Path]]]:
    """tcp-sysctl at its full scale's shape (six profiles, 20 rounds, three loads, each trial
    with its latency histogram), for the figure layout tests."""
    return [("tcp-sysctl: 6 profiles x 20 rounds x 3 loads", lambda root: tcp_sysctl_run(
        root, gain={"diiner": 1.02, "tso-win-divisor-1": 0.9, "auth-operator": 1.0,
                    "ldplayer": 0.99, "esnet-10g": 1.01},
        latency_gain={"tso-win-divisor-1": 1.3, "diiner": 0.95}, trials=20,
        loads=(10, 100, 150), histograms=True))]


def seed_like_runs() -> dict[str, Callable[[Path], Path]]:
    """{experiment: a run where every claim it names holds}: the altered-data test removes
    each claim's effect from it and expects nothing reproduced. Built as the claim cases'
    'present' runs (cases.py beside this module)."""
    from experiments.f5_tcp_sysctl import cases

    # every F5 claim's effect present: 20 tight trials
    return {"tcp-sysctl": cases.f5(gain={"tso-win-divisor-1": 0.85, "diiner": 1.08,
                                         "tcp-sack-0": 1.0, "esnet-10g": 1.0},
                                   latency_gain={"diiner": 0.95, "tcp-sack-0": 1.015},
                                   lost_gain={"diiner": 0.02}, trials=20, spread=0.003)}


def like_cdcf(root: Path) -> Path:
    """A run shaped like the full `tcp-sysctl` run 20261125T145605Z-cdcf as NOTES.md gives it:
    20 rounds of default, diiner (+0.7 % qps, 3.41 against 3.34 ms) and tso-win-divisor-1
    (+0.6 %, 3.34 ms), Knot saturated (63 % of the offered rate answered), trials spread with a
    CV of ~5.5 %, the default's listen queue overflowing, next to no query lost. The trials'
    noise (seed 31) puts the medians at +1.6 % (diiner) and -0.05 % (tso-win-divisor-1)."""
    return tcp_sysctl_run(root, gain={"diiner": 1.007, "tso-win-divisor-1": 1.006},
                          latency_gain={"diiner": 3.41 / 3.34}, trials=20, spread=0.055,
                          seed=31,
                          answered_share=0.63, lost_gain={"default": 0.001, "diiner": 0.0,
                                                          "tso-win-divisor-1": 0.001},
                          timeout_s=2.0, run_id="20261125T145605Z-cdcf")
