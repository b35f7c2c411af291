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



def like_eb86(root: Path) -> Path:
    """A run shaped like the full `dnsdist-listeners` run 20261125T220415Z-eb86 (kxdpgun open
    loop, 2 cores: dnsdist on one) as NOTES.md gives it: the flood sent 331,644 qps to the
    sink's ceiling cell and 285,332 to dnsdist; one listener answered 128,776 (171,823
    failed/s), one reusePort listener with big buffers and recvmmsg 162,950 (122,381)."""
    return dnsdist_run(root, untuned=128776, tuned=162950, ceiling=331644, listeners=1,
                       untuned_fail=171823.0, tuned_fail=122381.0, generator="kxdpgun",
                       flood_qps=285332, cpus=2, run_id="20261125T220415Z-eb86")


def like_6db9(root: Path) -> Path:
    """A run shaped like the full `dnsdist-listeners GENERATOR=dnsperf` run
    20261124T085657Z-6db9: dnsperf's ceiling 67,589 qps; one listener 67,742 qps with 344.3
    failed/s, the tuned listener 70,015 with none; dnsdist on one core."""
    return dnsdist_run(root, untuned=67742, tuned=70015, ceiling=67589, listeners=1,
                       untuned_fail=344.3, tuned_fail=0.0, cpus=2,
                       run_id="20261124T085657Z-6db9")
