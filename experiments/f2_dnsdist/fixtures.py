"""F2 synthetic runs: dnsdist floods, untuned and tuned, beside a generator ceiling."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from analysis.synthetic import CellData, write_run

FLOOD_TRIAL_COLUMNS = ["trial", "sent", "received", "duration_s", "offered_qps", "qps",
                       "failures_per_s"]


def flood_trials(offered: float, answered: float, seconds: float = 20.0
                 ) -> dict[str, tuple[list[str], list[list[Any]]]]:
    """kxdpgun's per-trial rows (`trials.csv`): what it sent and what came back."""
    sent, received = int(offered * seconds), int(answered * seconds)
    return {"trials.csv": (FLOOD_TRIAL_COLUMNS, [[1, sent, received, seconds, offered, answered,
                                                  (sent - received) / seconds]])}


def dnsdist_run(root: Path, *, untuned: float, tuned: float, ceiling: float | None = 1e6,
                listeners: int = 8, untuned_fail: float = 100.0, tuned_fail: float = 0.0,
                generator: str = "dnsperf", flood_qps: float | None = None,
                **kwargs: Any) -> Path:
    """dnsdist-listeners: `generator=dnsperf` (closed loop, the ceiling is the sink's
    answered qps) or `kxdpgun` (open loop at `flood_qps`, default the ceiling: the ceiling is
    the rate it sent; each variant answers its qps and fails the rest)."""
    # the procedure's placement: the generator on one core, dnsdist on the others
    server_cores = max(int(kwargs.get("cpus", 2)) - 1, 1)

    def params(variant: str) -> dict[str, Any]:
        return {"variant": variant, "generator": generator, "server_cores": server_cores}

    def trials(answered: float) -> dict[str, tuple[list[str], list[list[Any]]]]:
        if generator != "kxdpgun":
            return {}
        return flood_trials(flood_qps or ceiling or answered, answered)

    cells = []
    if ceiling is not None:
        # an open-loop flood's ceiling cell: the sink answers part of what was sent
        sink = ceiling * 0.4 if generator == "kxdpgun" else ceiling
        figures = {"qps": sink, "failures_per_s": 0.0}
        if generator == "kxdpgun":  # as dnsdist.py records it: the rate the flood sent
            figures["ceiling_qps"] = ceiling
        cells.append(CellData(params("ceiling"), figures,
                              csv=flood_trials(ceiling, sink) if generator == "kxdpgun"
                              else {}))
    cells += [CellData(params("untuned"), {"qps": untuned, "failures_per_s": untuned_fail,
                                           "listeners": 1}, csv=trials(untuned)),
              CellData(params("tuned"), {"qps": tuned, "failures_per_s": tuned_fail,
                                         "listeners": listeners}, csv=trials(tuned))]
    return write_run(root, "dnsdist-listeners", cells, params={"workers": 1000}, **kwargs)

