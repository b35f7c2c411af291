"""Synthetic runs of the shared procedures, as the runner writes them: a comparison of
servers over transports beside dnsperf's ceiling, with dnsperf's latency histograms."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from analysis.synthetic import CellData, write_run
from experiments.generators.perf import LATENCY_BINS
from experiments.procedures.compare import CEILING

OWN_FILE = """description: NSD and Knot over UDP and TCP (test fixture)
topology: reference
procedure: compare.servers_by_transport
params: {servers: [nsd, knot]}
"""


def _trials(by_transport: dict[str, float], repetitions: int, seconds: float,
            clients_in_flight: int) -> dict[str, tuple[list[str], list[list[Any]]]]:
    """trials.csv and each run's latency histogram: `clients_in_flight` queries wait
    in_flight / qps in the server's queue (Little's law)."""
    rng = np.random.default_rng(7)
    edges = np.array([0.0, *LATENCY_BINS, np.inf])
    rows, files = [], {}
    for repetition in range(1, repetitions + 1):
        for transport, qps in by_transport.items():
            answered = qps * (1 + 0.02 * (repetition - 2))
            queue_ms = 1000.0 * clients_in_flight / answered
            counts, _ = np.histogram(rng.gamma(4.0, queue_ms / 4000.0, 20000), bins=edges)
            counts = np.round(counts * answered * seconds / 20000).astype(int)
            name = f"latency-{transport}-{repetition}.csv"
            rows.append([transport, repetition, round(answered, 1), 0, name])
            files[name] = (["upper_s", "count"], [[f"{edge:.6g}", int(n)] for edge, n in
                                                  zip([*LATENCY_BINS, float("inf")], counts,
                                                      strict=True)])
    return {"trials.csv": (["transport", "repetition", "qps", "lost", "latency_file"], rows),
            **files}


def compare_run(root: Path, servers: dict[str, dict[str, float]],
                ceiling: dict[str, float] | None, repetitions: int = 3) -> Path:
    """A run of a file of one's own (`mine-compare.yaml`): each server's qps per transport
    and dnsperf's ceiling (None: CEILING=false), `repetitions` runs each."""
    transports = list(next(iter(servers.values())))
    cells = [CellData({"server": name}, csv=_trials(qps, repetitions, 8.0, 200))
             for name, qps in servers.items()]
    if ceiling is not None:
        cells.append(CellData({"server": CEILING}, csv=_trials(ceiling, repetitions, 8.0, 200)))
    params = {"servers": list(servers), "transports": transports, "timeout_s": 2.0,
              "repetitions": repetitions, "ceiling": ceiling is not None}
    run = write_run(root, "mine-compare", cells, params=params,
                    meta={"own_experiment": "mine-compare.yaml"})
    (run / "mine-compare.yaml").write_text(OWN_FILE)
    return run
