"""Altered data for F1 (TCP fallback): the stair of one record set or tuning copied over
another's (stair.csv, burst.csv and the burst figures), the worst and p99 TAT made the same,
the function test's changes never arriving, the server busy at its capacity, no queue
symptom where it fails, the answer not grown; for `analysis.altered`'s check that a claim
cannot pass without its effect.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.altered import Alteration, copy_file, edit_csv, edit_figures
from analysis.rundata import Run


def stair_copied(run: Run, source: tuple[str, str], target: tuple[str, str]) -> int:
    changed = 0
    for server in {str(c.params.get("server")) for c in run.cells} - {"ceiling"}:
        src = run.cells_where(server=server, records=source[0], tuning=source[1])
        dst = run.cells_where(server=server, records=target[0], tuning=target[1])
        if src and dst:
            changed += copy_file(src[0], dst[0], "stair.csv")
            changed += copy_file(src[0], dst[0], "burst.csv")
            burst = {k: v for k, v in src[0].figures.items() if k.startswith("burst_")}
            changed += edit_figures(dst[0], lambda f, burst=burst: f.update(burst))
    return changed


def after_records_like_before(run: Run) -> int:
    """The new records cost nothing: the after stair is the before stair."""
    return stair_copied(run, ("before", "untuned"), ("after", "untuned"))


def tuning_like_untuned(run: Run) -> int:
    return stair_copied(run, ("after", "untuned"), ("after", "tuned"))


def after_latency_like_before(run: Run) -> int:
    """The after stair's worst and p99 TAT are the before stair's (interpolated between its
    steps) at every rate the after stair ran."""
    changed = 0
    for before in run.cells_where(records="before", tuning="untuned"):
        after = run.cells_where(server=before.params.get("server"), records="after",
                                tuning="untuned")
        if not after or not before.has("stair.csv"):
            continue
        rows = before.csv("stair.csv").sort_values("target_qps")

        def change(frame: pd.DataFrame, rows: pd.DataFrame = rows) -> pd.DataFrame:
            for column in ("max_ms", "p99_ms"):
                if column in frame and column in rows:
                    frame[column] = np.interp(frame["target_qps"].astype(float),
                                              rows["target_qps"].astype(float),
                                              rows[column].astype(float))
            return frame
        changed += edit_csv(after[0].dir / "stair.csv", change)
    return changed


def server_busy_at_capacity(run: Run) -> int:
    """The server's cores 97 % busy in every step and burst: CPU-bound wherever it held."""
    def change(frame: pd.DataFrame) -> pd.DataFrame:
        for column in ("server_cores_busy_pct", "server_cpu_pct"):
            if column in frame:
                frame[column] = 97.0
        return frame
    return sum(edit_csv(c.dir / name, change) for c in run.cells
               if c.params.get("server") != "ceiling" for name in ("stair.csv", "burst.csv"))


def no_queue_symptoms(run: Run) -> int:
    """No SYN dropped and no receive-buffer error in any step: the server failed for another
    reason than its queues."""
    def change(frame: pd.DataFrame) -> pd.DataFrame:
        for column in ("listen_overflows", "listen_drops", "udp_rcvbuf_errors"):
            if column in frame:
                frame[column] = 0
        return frame
    return sum(edit_csv(c.dir / name, change) for c in run.cells
               if c.params.get("server") != "ceiling" for name in ("stair.csv", "burst.csv"))


def answer_not_grown(run: Run) -> int:
    """The before records' answers as large as the after records' (sizes and counts)."""
    changed = 0
    for after in run.cells_where(records="after"):
        sizes = {k: v for k, v in after.figures.items() if k.startswith(("tac_", "apn_"))}
        for before in run.cells_where(server=after.params.get("server"), records="before",
                                      tuning=after.params.get("tuning")):
            changed += edit_figures(before, lambda f, sizes=sizes: f.update(sizes))
    return changed


def changes_never_arrive(run: Run) -> int:
    return sum(edit_figures(c, lambda f: f.update(function_synced=0))
               for c in run.cells if c.figure("function_changes", optional=True))


ALTERATIONS: dict[str, tuple[Alteration, ...]] = {
    "F1.capacity-drop": (after_records_like_before,),
    "F1.tuning-helps": (tuning_like_untuned,),
    "F1.latency-grows": (after_latency_like_before,),
    "F1.function-sync": (changes_never_arrive,),
    "F1.not-cpu-bound": (server_busy_at_capacity,),
    "F1.queue-symptoms": (no_queue_symptoms,),
    "F1.answer-growth": (answer_not_grown,),
}
