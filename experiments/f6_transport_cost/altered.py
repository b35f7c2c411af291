"""Altered data for F6: each server's trials of one transport rewritten so that a claim's
effect is gone (TCP or DoT answering as many queries as UDP, DoT as many as TCP, DoH twice
DoT's; every latency doubled, or a new connection per query answering as fast as a kept
one), for `analysis.altered`'s check that a claim cannot pass without its effect."""

from __future__ import annotations

import pandas as pd

from analysis.altered import Alteration, cells, edit_csv
from analysis.rundata import Run
from experiments.f6_transport_cost.derived import PER_QUERY, PERSISTENT, is_front_end


def _scaled(run: Run, transport: str, like: str, factor: float,
            front_end_only: bool = False) -> int:
    """Every server's (or the front-end's) trials of `transport` answer `factor` x the median
    of the same server's `like` trials."""
    changed = 0
    for cell in cells(run, server="*"):
        if front_end_only and not is_front_end(run, cell):
            continue

        def change(frame: pd.DataFrame) -> pd.DataFrame:
            base = frame[(frame["transport"] == like) & (frame["mode"] == PERSISTENT)]
            rows = (frame["transport"] == transport) & (frame["mode"] == PERSISTENT)
            if base.empty or not rows.any():
                return frame
            frame["qps"] = frame["qps"].astype(float)
            frame.loc[rows, "qps"] = float(base["qps"].astype(float).median()) * factor
            return frame
        changed += edit_csv(cell.dir / "trials.csv", change)
    return changed


def tcp_as_udp(run: Run) -> int:
    return _scaled(run, "tcp", "udp", 1.0)


def dot_as_udp(run: Run) -> int:
    return _scaled(run, "dot", "udp", 1.0)


def frontend_tcp_halved(run: Run) -> int:
    return _scaled(run, "tcp", "udp", 0.5, front_end_only=True)


def dot_as_tcp(run: Run) -> int:
    return _scaled(run, "dot", "tcp", 1.0)


def doh_twice_dot(run: Run) -> int:
    return _scaled(run, "doh", "dot", 2.0)


def _histograms(run: Run, mode: str, edit: str) -> int:
    """The latency histograms of every trial of `mode`: each edge doubled (`edit` "double"),
    or replaced by the same transport's kept-open trial's ("persistent")."""
    changed = 0
    for cell in cells(run, server="*"):
        trials = cell.csv("trials.csv", ("transport", "mode", "latency_file"))
        for _, row in trials[trials["mode"] == mode].iterrows():
            name = str(row["latency_file"])
            if edit == "double":
                changed += edit_csv(cell.dir / name, lambda f: f.assign(
                    upper_s=f["upper_s"].astype(float) * 2))
                continue
            kept = trials[(trials["mode"] == PERSISTENT)
                          & (trials["transport"] == row["transport"])]
            if kept.empty:
                continue
            source = pd.read_csv(cell.dir / str(kept["latency_file"].iloc[0]))
            changed += edit_csv(cell.dir / name, lambda _f, s=source: s.copy())
    return changed


def latencies_doubled(run: Run) -> int:
    return _histograms(run, PERSISTENT, "double")


def new_connections_as_kept(run: Run) -> int:
    return _histograms(run, PER_QUERY, "persistent")


ALTERATIONS: dict[str, tuple[Alteration, ...]] = {
    "F6.tcp-cost": (tcp_as_udp,),
    "F6.tls-cost": (dot_as_udp,),
    "F6.frontend.tcp": (frontend_tcp_halved,),
    "F6.frontend.tls": (dot_as_udp,),
    "F6.tls-below-tcp": (dot_as_tcp,),
    "F6.doh-below-dot": (doh_twice_dot,),
    "F6.latency.persistent": (latencies_doubled,),
    "F6.latency.handshakes": (new_connections_as_kept,),
}
