"""Altered-data check: take a real run folder, rewrite the raw files its procedures wrote so
that a claim's effect is removed or reversed, analyse the copy again, and see what the claim
says. A claim that stays "reproduced" on data without its effect passes by accident.

`alter_and_judge(run_dir, tmp)` copies the run once per alteration of every claim its
experiment names (daemon logs left out: the analysis never reads them), applies the
alteration, runs `analysis.pipeline.analyse(copy, update_index=False)` and returns
{claim_id: status}: "reproduced" when any alteration of the claim left it reproduced, else the
status of its first alteration. `ALTERATIONS` maps each claim to its alterations, small
functions named for what they do to the data; each returns how many files it changed (0: the
run has no data for it, and it is not counted).
"""

from __future__ import annotations

import copy
import shutil
from collections.abc import Callable
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from analysis.claim import REPRODUCED
from analysis.pipeline import analyse
from analysis.rundata import Cell, Run, load_run
from analysis.verdicts import experiment_claims
from dnslab import results

Alteration = Callable[[Run], int]


# --- reading and writing the raw files --------------------------------------------------------

def cells(run: Run, **wanted: str) -> list[Cell]:
    """The run's cells whose params match (fnmatch patterns; `phase` absent unless asked)."""
    found = []
    for cell in run.cells:
        if "phase" not in wanted and cell.params.get("phase") is not None:
            continue
        if all(fnmatchcase(str(cell.params.get(k)), v) for k, v in wanted.items()):
            found.append(cell)
    return found


def edit_csv(path: Path, change: Callable[[pd.DataFrame], pd.DataFrame]) -> int:
    """Rewrite a CSV through `change`; 1 if its content changed, else 0 (not counted)."""
    if not path.is_file():
        return 0
    frame = pd.read_csv(path)
    new = change(frame.copy())
    if new.equals(frame):
        return 0
    new.to_csv(path, index=False)
    return 1


def edit_figures(cell: Cell, change: Callable[[dict[str, Any]], None]) -> int:
    """Rewrite a cell's figures (its cell.json, through the results contract)."""
    data = results.read_cell(cell.dir)
    if data is None:
        return 0
    before = dict(data.get("figures") or {})
    figures = copy.deepcopy(before)
    change(figures)
    if figures == before:
        return 0
    writer = results.RunWriter(dir=cell.run.dir, meta=cell.run.meta,
                               _cell_dirs={cell.id: cell.dir})
    writer.write_cell(cell.id, figures, str(data.get("status") or "complete"))
    return 1


def monitor_path(run: Run, cell: Cell) -> Path:
    return cell.dir / "monitor" / f"{run.node_with_role('secondary', cell)}.csv"


def ports_of(cell: Cell) -> int:
    return int(cell.figure("port_range_size", optional=True) or 0) or 28232


# --- F3, xfr-30k-zones -----------------------------------------------------------------------

def scale_time_wait(run: Run, factor: float, **wanted: str) -> int:
    def change(frame: pd.DataFrame) -> pd.DataFrame:
        frame["tcp_time_wait"] = (frame["tcp_time_wait"] * factor).round()
        return frame
    return sum(edit_csv(monitor_path(run, c), change) for c in cells(run, **wanted))


def time_wait_halved(run: Run) -> int:
    """TIME_WAIT never gets near the range: the ceiling is gone."""
    return scale_time_wait(run, 0.5, profile="default")


def time_wait_doubled(run: Run) -> int:
    """TIME_WAIT climbs past the range: the range is not the ceiling."""
    return scale_time_wait(run, 2.0, profile="default")


def drop_failures(run: Run, **wanted: str) -> int:
    def change(frame: pd.DataFrame) -> pd.DataFrame:
        return frame[frame["event"] != "connect_failed"]
    return sum(edit_csv(c.dir / "xfr_events.csv", change) for c in cells(run, **wanted))


def no_connect_failures(run: Run) -> int:
    """The secondary never failed to connect."""
    return drop_failures(run, profile="default")


def failures_late(run: Run) -> int:
    """The failures come at twice their time + 10 s, long after the ports ran out (a shift
    the 1 Hz monitor resolves at any scale, unlike an earlier failure in a run whose ports
    run out within a second)."""
    def change(frame: pd.DataFrame) -> pd.DataFrame:
        failed = frame["event"] == "connect_failed"
        frame.loc[failed, "t"] = frame.loc[failed, "t"] * 2 + 10
        return frame
    return sum(edit_csv(c.dir / "xfr_events.csv", change) for c in cells(run, profile="default"))


def seed_range_no_failures(run: Run) -> int:
    """The cells with the seed's range never failed to connect."""
    seeds = [c for c in run.cells if c.params.get("profile", "default") == "default"
             and c.sysctl(run.node_with_role("secondary", c),
                          "net.ipv4.ip_local_port_range") == "32768 60999"]
    return sum(edit_csv(c.dir / "xfr_events.csv",
                        lambda f: f[f["event"] != "connect_failed"]) for c in seeds)


def served_at(done: pd.DataFrame, times: pd.Series) -> np.ndarray:
    """Zones served at each of `times`, from zones_done.csv's samples, counted from 0 zones at
    t=0: a cold start of a few seconds has its first sample after the monitor's first."""
    t = np.concatenate(([0.0], done["t"].to_numpy(dtype=float)))
    served = np.concatenate(([0.0], done["zones_served"].to_numpy(dtype=float)))
    order = np.argsort(t, kind="stable")
    return np.interp(times.to_numpy(dtype=float), t[order], served[order])


def tls_opens_every_zone(run: Run) -> int:
    """XoT opens one connection per zone served, as TCP does: no reuse."""
    changed = 0
    for cell in cells(run, transport="tls"):
        done = cell.csv("zones_done.csv", ("t", "zones_served"))

        def change(frame: pd.DataFrame, done: pd.DataFrame = done) -> pd.DataFrame:
            served = served_at(done, frame["t"])
            # the last sample counts every zone: connections open before their zone is
            # served, and the claim divides the opens by the zones served at the end
            last = int(np.argmax(frame["t"].to_numpy()))
            served[last] = max(served[last], float(done["zones_served"].max()))
            frame["tcp_active_opens"] = frame["tcp_active_opens"].iloc[0] + served.round()
            return frame
        changed += edit_csv(monitor_path(run, cell), change)
    return changed


def stretch_served(cell: Cell, factor: float) -> int:
    def change(frame: pd.DataFrame) -> pd.DataFrame:
        frame["t"] = frame["t"] * factor
        return frame
    return edit_csv(cell.dir / "zones_done.csv", change)


def all_served_s(cell: Cell) -> float | None:
    """When the cell's cold start had served every zone it served (zones_done.csv)."""
    done = cell.csv("zones_done.csv", ("t", "zones_served"))
    if done.empty or done["zones_served"].max() <= 0:
        return None
    return float(done.loc[done["zones_served"] >= done["zones_served"].max(), "t"].min())


def tls_three_times_slower(run: Run) -> int:
    """XoT takes three times as long to serve the zones as TCP did in the same profile and
    repetition (three times its own time at least), however fast it really was."""
    changed = 0
    for tls in cells(run, transport="tls"):
        # paired as F3.xot.reuse pairs them: the same profile and repetition
        tcp = cells(run, transport="tcp", profile=str(tls.params.get("profile")),
                    rep=str(tls.params.get("rep")))
        tls_s = all_served_s(tls)
        tcp_s = all_served_s(tcp[0]) if tcp else None
        factor = 3.0 * max(1.0, (tcp_s or 0.0) / tls_s) if tls_s else 3.0
        changed += stretch_served(tls, factor)
    return changed


def wide_ports_never_finishes(run: Run) -> int:
    """wide-ports stalls one zone short of the end, as an exhausted default does."""
    changed = 0
    for cell in cells(run, profile="wide-ports"):
        zones = int(cell.figure("zones", optional=True) or 0)

        def change(frame: pd.DataFrame, zones: int = zones) -> pd.DataFrame:
            frame["zones_served"] = np.minimum(frame["zones_served"], zones - 1)
            return frame
        changed += edit_csv(cell.dir / "zones_done.csv", change)
    return changed


def add_failures(run: Run, profile: str) -> int:
    """Connect failures in `profile`'s cells, as many as its zones / 10, mid-way."""
    changed = 0
    for cell in cells(run, profile=profile):
        zones = int(cell.figure("zones", optional=True) or 100)

        def change(frame: pd.DataFrame, zones: int = zones) -> pd.DataFrame:
            middle = float(frame["t"].median()) if not frame.empty else 1.0
            extra = pd.DataFrame({"t": np.linspace(middle, middle + 1.0, max(zones // 10, 1)),
                                  "event": "connect_failed", "zone": "z0."})
            return pd.concat([frame, extra], ignore_index=True).sort_values("t")
        changed += edit_csv(cell.dir / "xfr_events.csv", change)
    return changed


def wide_ports_failures(run: Run) -> int:
    return add_failures(run, "wide-ports")


def tw_buckets_failures(run: Run) -> int:
    return add_failures(run, "tw-buckets*")


def time_wait_over_the_cap(run: Run) -> int:
    """TIME_WAIT three times the cap: the kernel did not enforce it."""
    changed = 0
    for cell in cells(run, profile="tw-buckets*"):
        cap = cell.sysctl(run.node_with_role("secondary", cell), "net.ipv4.tcp_max_tw_buckets")
        level = 3 * int(cap or 1000)

        def change(frame: pd.DataFrame, level: int = level) -> pd.DataFrame:
            frame["tcp_time_wait"] = np.maximum(frame["tcp_time_wait"], level)
            return frame
        changed += edit_csv(monitor_path(run, cell), change)
    return changed


# --- F3, single transfers and the sweep (cell.json figures the procedures wrote) --------------

def tld_times_spread(run: Run) -> int:
    """The TLD transfer times vary by +-10 % between repetitions."""
    def change(figures: dict[str, Any]) -> None:
        figures["delays_s"] = [float(d) * (1.1 if i % 2 else 0.9) if d is not None else d
                               for i, d in enumerate(figures.get("delays_s") or [])]
    return sum(edit_figures(c, change) for c in run.cells)


def shift_delays(run: Run, to: float) -> int:
    def change(figures: dict[str, Any]) -> None:
        figures["delays_s"] = [to for _ in figures.get("delays_s") or []]
    return sum(edit_figures(c, change) for c in run.cells)


def smallest_takes_half_a_second(run: Run) -> int:
    return shift_delays(run, 0.45)


def smallest_clock_artefact(run: Run) -> int:
    """The seed's -0.354 s: two clocks of different precision."""
    return shift_delays(run, -0.354)


def sweep_linear(run: Run) -> int:
    """Every count takes the smallest count's time per zone: a straight line."""
    sweep = [c for c in run.cells if "zones" in c.params and c.params.get("phase") is None]
    finished = [c for c in sweep if c.figure("total_time_s", optional=True)]
    if not finished:
        return 0
    smallest = min(finished, key=lambda c: int(c.params["zones"]))
    per_zone = float(smallest.figure("total_time_s")) / int(smallest.params["zones"])

    def change(cell: Cell) -> int:
        return edit_figures(cell, lambda f: f.update(
            total_time_s=round(per_zone * int(cell.params["zones"]), 3)))
    return sum(change(c) for c in sweep)


# --- F1, F2, F4, F5 ---------------------------------------------------------------------------

def copy_file(source: Cell, target: Cell, name: str) -> int:
    if not (source.dir / name).is_file() or not target.dir.is_dir():
        return 0
    shutil.copyfile(source.dir / name, target.dir / name)
    return 1


def stair_copied(run: Run, source: tuple[str, str], target: tuple[str, str]) -> int:
    changed = 0
    for server in {str(c.params.get("server")) for c in run.cells} - {"ceiling"}:
        src = run.cells_where(server=server, records=source[0], tuning=source[1])
        dst = run.cells_where(server=server, records=target[0], tuning=target[1])
        if src and dst:
            changed += copy_file(src[0], dst[0], "stair.csv")
            burst = {k: v for k, v in src[0].figures.items() if k.startswith("burst_")}
            changed += edit_figures(dst[0], lambda f, burst=burst: f.update(burst))
    return changed


def after_records_like_before(run: Run) -> int:
    """The new records cost nothing: the after stair is the before stair."""
    return stair_copied(run, ("before", "untuned"), ("after", "untuned"))


def tuning_like_untuned(run: Run) -> int:
    return stair_copied(run, ("after", "untuned"), ("after", "tuned"))


def after_latency_like_before(run: Run) -> int:
    """The after stair's worst TAT is the before stair's at every rate both ran."""
    changed = 0
    for before in run.cells_where(records="before", tuning="untuned"):
        after = run.cells_where(server=before.params.get("server"), records="after",
                                tuning="untuned")
        if not after or not before.has("stair.csv"):
            continue
        worst = before.csv("stair.csv").set_index("target_qps")["max_ms"]

        def change(frame: pd.DataFrame, worst: pd.Series = worst) -> pd.DataFrame:
            same = frame["target_qps"].map(worst)
            frame["max_ms"] = same.fillna(frame["max_ms"])
            return frame
        changed += edit_csv(after[0].dir / "stair.csv", change)
    return changed


def changes_never_arrive(run: Run) -> int:
    return sum(edit_figures(c, lambda f: f.update(function_synced=0))
               for c in run.cells if c.figure("function_changes", optional=True))


def tuned_like_untuned(run: Run) -> int:
    """dnsdist tuned answers and fails as untuned does."""
    base = run.cells_where(variant="untuned") or run.cells_where(variant="baseline")
    tuned = run.cells_where(variant="tuned")
    if not base or not tuned:
        return 0
    same = {k: base[0].figures[k] for k in ("qps", "failures_per_s") if k in base[0].figures}
    return edit_figures(tuned[0], lambda f: f.update(same))


def dnsperf_passes(run: Run, cache: str) -> list[Cell]:
    """The resolver's dnsperf passes of one cache state (resperf ramps have no -q)."""
    return [c for c in run.cells_where(cache=cache) if "outstanding" in c.params]


def warm_like_cold(run: Run) -> int:
    """The warm pass answers as the cold one at every -q."""
    changed = 0
    for warm in dnsperf_passes(run, "warm"):
        cold = run.cells_where(cache="cold", outstanding=warm.params["outstanding"])
        if cold:
            same = {k: cold[0].figures[k] for k in ("qps", "qps_trials") if k in cold[0].figures}
            changed += edit_figures(warm, lambda f, same=same: f.update(same))
    return changed


def warm_flat_in_q(run: Run) -> int:
    """Every warm -q answers as the smallest -q."""
    warm = sorted(dnsperf_passes(run, "warm"), key=lambda c: int(c.params["outstanding"]))
    if len(warm) < 2:
        return 0
    same = {k: warm[0].figures[k] for k in ("qps", "qps_trials") if k in warm[0].figures}
    return sum(edit_figures(c, lambda f: f.update(same)) for c in warm[1:])


def profiles_like_default(run: Run) -> int:
    """Every profile's trials answer as the default's of the same round did (the same qps and
    latency): round by round, so the altered profile has the default's spread, not twenty
    copies of one round (which would differ from the default by that round's luck)."""
    defaults = {str(c.params.get("round")): c for c in run.cells_where(profile="default")
                if "phase" not in c.params and c.has("trials.csv")}
    changed = 0
    for cell in run.cells:
        source = defaults.get(str(cell.params.get("round")))
        if cell.params.get("profile") in (None, "default") or "phase" in cell.params \
                or source is None:
            continue
        default = source.csv("trials.csv")
        measures = [m for m in ("qps", "sent", "lost", "avg_latency_ms") if m in default.columns]

        def change(frame: pd.DataFrame, default: pd.DataFrame = default,
                   measures: list[str] = measures) -> pd.DataFrame:
            frame[measures] = frame[measures].astype(float)
            for load, rows in frame.groupby("load_pct"):
                same = default[default["load_pct"] == load][measures].to_numpy()
                if len(same):
                    frame.loc[rows.index, measures] = np.resize(same, (len(rows), len(measures)))
            return frame
        changed += edit_csv(cell.dir / "trials.csv", change)
    return changed


ALTERATIONS: dict[str, tuple[Alteration, ...]] = {
    "F3.default.tw-ceiling": (time_wait_halved, time_wait_doubled),
    # failures from a TIME_WAIT at half the range: not the ceiling
    "F3.default.connect-failures": (no_connect_failures, time_wait_halved),
    "F3.default.failure-time": (no_connect_failures, failures_late),
    "F3.seed-range.exhaustion": (seed_range_no_failures,),
    "F3.xot.reuse": (tls_opens_every_zone, tls_three_times_slower),
    "F3.wide-ports.no-failures": (wide_ports_failures,),
    "F3.wide-ports.faster": (wide_ports_never_finishes,),
    "F3.tw-buckets.no-failures": (tw_buckets_failures,),
    "F3.tw-buckets.tw-capped": (time_wait_over_the_cap,),
    "F3.tld.repeatable": (tld_times_spread,),
    "F3.smallest.delay": (smallest_takes_half_a_second, smallest_clock_artefact),
    "F3.sweep.nonlinear": (sweep_linear,),
    "F1.capacity-drop": (after_records_like_before,),
    "F1.tuning-helps": (tuning_like_untuned,),
    "F1.latency-grows": (after_latency_like_before,),
    "F1.function-sync": (changes_never_arrive,),
    "F2.qps-gain": (tuned_like_untuned,),
    "F2.failures-drop": (tuned_like_untuned,),
    "F4.warm-over-cold": (warm_like_cold,),
    "F4.warm-scales-with-q": (warm_flat_in_q,),
    "F5.tso-win-divisor": (profiles_like_default,),
    "F5.abort-on-overflow": (profiles_like_default,),
}


def alter_and_judge(run_dir: Path, tmp: Path) -> dict[str, str]:
    """{claim_id: status} of every claim of the run's experiment that has alterations, each
    judged on copies of the run with its effect removed or reversed (see the docstring)."""
    run_dir = Path(run_dir)
    experiment = load_run(run_dir).experiment
    statuses: dict[str, str] = {}
    for claim_id in experiment_claims(experiment):
        for alteration in ALTERATIONS.get(claim_id, ()):
            copy = Path(tmp) / f"{claim_id}-{alteration.__name__}" / run_dir.name
            shutil.copytree(run_dir, copy, ignore=shutil.ignore_patterns("logs", "report"))
            if alteration(load_run(copy)) == 0:
                continue
            verdicts = analyse(copy, update_index=False)["verdicts"]
            status = next((v["status"] for v in verdicts if v["claim_id"] == claim_id), "")
            if statuses.get(claim_id) != REPRODUCED:
                statuses[claim_id] = (status if status == REPRODUCED or claim_id not in statuses
                                      else statuses[claim_id])
    return statuses
