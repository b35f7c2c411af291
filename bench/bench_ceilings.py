"""Benchmark: for each load experiment, the generator's ceiling next to the server's capacity.

Reads the newest run (or the runs given) of every load experiment under results/ and prints,
per record set or variant, the load generator's own ceiling measured in that run on that
run's CPU placement (the `server=ceiling` / `variant=ceiling` cells) beside each server
cell's capacity (stair capacity, or answered qps for a flood), with the share of the
ceiling it reached. A share of 90 % or more means the cell measured the generator, not the
server. A ceiling printed as ">=N" never failed: the generator was not pushed to its limit.
It is a benchmark printout, not a verdict: the claims decide in analysis/.

resolver-cache's ceiling is per -q (the same one-pass dnsperf command against `dnsload
serve`), beside each cold and warm cell's qps.

A finding package that measures its generator's ceilings its own way brings its rows in a
`ceilings.py` of its own (`EXPERIMENTS`, `rows(run)` in this module's row shape; F6's
transport-cost: per server and transport): its newest runs are read too.

tcp-sysctl paces its trials (dnsperf -Q at each load's share of the capacity): its rows are
per load, the target beside dnsperf's ceiling at that target (the `phase=ceiling` cell:
the same command against `dnsload serve`) and each profile's median answered qps; a
ceiling below 90 % of the target marks the load generator-limited.

    python -m bench.bench_ceilings [RUN_DIR ...]
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dnslab import findings, paths, results
from dnslab.thresholds import GENERATOR_BOUND_SHARE

LOAD_EXPERIMENTS = ("tcp-fallback", "dnsdist-listeners", "tcp-sysctl", "resolver-cache")


def package_rows() -> dict[str, Callable[[Path], list[dict[str, Any]]]]:
    """experiment -> the `ceilings.rows` of the finding package that reads its runs."""
    found = {}
    for finding in findings.all_findings():
        module = finding.module("ceilings")
        if module is not None:
            found.update({name: module.rows for name in module.EXPERIMENTS})
    return found


def newest_run(experiment: str) -> Path | None:
    runs = results.run_dirs(paths.RESULTS, experiment)
    return runs[-1] if runs else None


def _cells(run: Path) -> list[dict[str, Any]]:
    return list(results.iter_cells(run))


def _is_ceiling(cell: dict[str, Any]) -> bool:
    params = cell.get("params", {})
    return (params.get("server") == "ceiling" or params.get("variant") == "ceiling"
            or params.get("phase") == "ceiling")


def paced_rows_for(run: Path) -> list[dict[str, Any]]:
    """tcp-sysctl: one row per profile and load: the target, dnsperf's ceiling at that
    target (None: no ceiling cell), the profile's median answered qps over its trials (in
    one cell per profile, or one per profile and round), its share of the ceiling, and
    whether the ceiling fell short of the target (generator-limited)."""
    meta = results.read_meta(run)
    cells = _cells(run)
    ceiling = next((c["figures"] for c in cells if _is_ceiling(c)), {})
    capacity = next((c["figures"].get("capacity_qps") for c in cells
                     if c.get("params", {}).get("phase") == "capacity"), None)
    loads = (meta.get("params") or {}).get("loads") or []
    trials: dict[str, dict[Any, list[float]]] = {}
    targets: dict[Any, Any] = {}
    for cell in cells:
        params = cell.get("params", {})
        if "phase" in params or "profile" not in params:
            continue
        figures = cell.get("figures", {})
        per_load = trials.setdefault(str(params["profile"]), {})
        for load in loads:
            targets.setdefault(load, figures.get(f"target_qps_l{load}"))
            each = figures.get(f"qps_trials_l{load}")
            if each is None and figures.get(f"qps_l{load}") is not None:
                each = [figures[f"qps_l{load}"]]  # a cell that kept only its median
            per_load.setdefault(load, []).extend(float(q) for q in each or [])
    rows = []
    for profile, per_load in trials.items():
        for load in loads:
            target, reached = targets.get(load), ceiling.get(f"ceiling_qps_l{load}")
            rate = statistics.median(per_load[load]) if per_load.get(load) else None
            rows.append({"experiment": meta["experiment"], "run": meta["run_id"],
                         "cell": f"profile={profile} @{load}%", "capacity": capacity,
                         "target": target, "ceiling": reached, "rate": rate,
                         "share": rate / reached if rate is not None and reached else None,
                         "generator_limited": bool(target and reached is not None
                                                   and reached < GENERATOR_BOUND_SHARE * target),
                         "placement": meta.get("placement")})
    return rows


def _rate(cell: dict[str, Any]) -> float | None:
    figures = cell.get("figures", {})
    for key in ("ceiling_qps", "capacity_qps", "qps"):
        if figures.get(key) is not None:
            return float(figures[key])
    return None


def _lower_bound(cell: dict[str, Any], meta: dict[str, Any]) -> bool:
    figures = cell.get("figures", {})
    if "capacity_qps" in figures:
        return figures.get("first_fail_qps") is None
    asked = (meta.get("params") or {}).get("flood_qps")
    offered = figures.get("offered_qps")
    return bool(asked and offered and offered >= 0.98 * float(asked))


def rows_for(run: Path) -> list[dict[str, Any]]:
    """One row per server cell: its rate, the ceiling of the same record set (or the run's
    one ceiling), and the share."""
    meta = results.read_meta(run)
    cells = _cells(run)
    ceilings = {c["params"].get("records"): _rate(c) for c in cells if _is_ceiling(c)}
    # a ceiling no step failed at (a stair that never broke, a flood that sent all it was
    # asked for) is only a lower bound of the generator's ceiling
    bounded = {c["params"].get("records"): _lower_bound(c, meta) for c in cells
               if _is_ceiling(c)}
    # resolver-cache: dnsperf's one-pass ceiling per -q (`ceiling_qps_q<q>`)
    per_q = next((c["figures"] for c in cells if _is_ceiling(c)
                  and isinstance(c["params"].get("outstanding"), list)), {})
    rows = []
    for cell in cells:
        if _is_ceiling(cell):
            continue
        ceiling = ceilings.get(cell["params"].get("records"), ceilings.get(None))
        if cell["params"].get("outstanding") is not None:
            ceiling = per_q.get(f"ceiling_qps_q{cell['params']['outstanding']}", ceiling)
        rate = _rate(cell)
        rows.append({"experiment": meta["experiment"], "run": meta["run_id"],
                     "cell": cell["cell_id"], "rate": rate, "ceiling": ceiling,
                     "share": rate / ceiling if rate is not None and ceiling else None,
                     "lower_bound": bounded.get(cell["params"].get("records"),
                                                bounded.get(None, False)),
                     "placement": meta.get("placement")})
    return rows


def _where(placement: dict[str, Any] | None) -> str:
    if not placement:
        return "not placed"
    return (f"gen {placement.get('generator_cpus')} / srv {placement.get('server_cpus')}"
            + (" shared" if placement.get("shared") else ""))


def _qps(value: float | None, missing: str = "-") -> str:
    return missing if value is None else f"{value:,.0f}"


def print_paced(run: Path) -> None:
    """tcp-sysctl's per-load table."""
    rows = paced_rows_for(run)
    if not rows:
        print(f"{run}: no profile cells")
    print(f"{'experiment/run':44} {'cell @load':44} {'capacity':>9} {'target':>9} "
          f"{'generator':>10} {'server qps':>10} {'share':>6}  placement")
    for row in rows:
        share = "-" if row["share"] is None else f"{row['share']:.0%}"
        flag = "  generator-limited" if row["generator_limited"] else ""
        print(f"{row['experiment'] + '/' + row['run']:44} {row['cell']:44} "
              f"{_qps(row['capacity']):>9} {_qps(row['target']):>9} "
              f"{_qps(row['ceiling'], 'not run'):>10} {_qps(row['rate']):>10} {share:>6}  "
              f"{_where(row['placement'])}{flag}")


def main(argv: list[str]) -> int:
    by_package = package_rows()
    runs = [Path(a) for a in argv] or [r for e in (*LOAD_EXPERIMENTS, *by_package)
                                       if (r := newest_run(e))]
    if not runs:
        print("no load experiment runs under results/ (make experiment EXP=tcp-fallback ...)")
        return 0
    missing = [r for r in runs if not results.is_run(r)]
    if missing:
        print(f"error: {missing[0]} is not a run folder (no meta.json); hint: give "
              "results/<experiment>/<run-id> folders, or none for the newest runs")
        return 2
    for run in runs:
        if results.read_meta(run).get("experiment") == "tcp-sysctl":
            print_paced(run)
    runs = [r for r in runs
            if results.read_meta(r).get("experiment") != "tcp-sysctl"]
    if not runs:
        return 0
    print(f"{'experiment/run':44} {'cell':44} {'server qps':>10} {'generator':>10} "
          f"{'share':>6}  placement")
    for run in runs:
        experiment = findings.base_experiment(results.read_meta(run).get("experiment", ""))
        rows = by_package[experiment](run) if experiment in by_package else rows_for(run)
        if not rows:
            print(f"{run}: no cells")
        for row in rows:
            where = _where(row["placement"])
            rate = "-" if row["rate"] is None else f"{row['rate']:,.0f}"
            ceiling = "not run" if row["ceiling"] is None else (
                (">=" if row["lower_bound"] else "") + f"{row['ceiling']:,.0f}")
            share = "-" if row["share"] is None else f"{row['share']:.0%}"
            flag = "  generator-limited" if (row["share"] or 0) >= GENERATOR_BOUND_SHARE else ""
            print(f"{row['experiment'] + '/' + row['run']:44} {row['cell']:44} {rate:>10} "
                  f"{ceiling:>10} {share:>6}  {where}{flag}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
