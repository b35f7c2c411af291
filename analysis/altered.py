"""Altered-data check: take a real run folder, rewrite the raw files its procedures wrote so
that a claim's effect is removed or reversed, analyse the copy again, and see what the claim
says. A claim that stays "reproduced" on data without its effect passes by accident.

Each finding's package says how its effects are removed: its `altered.py` holds small
functions named for what they do to the data (`Run` -> how many files they changed; 0: the
run has no data for it, and it is not counted) and `ALTERATIONS`, {claim_id: alterations},
built on the helpers here. `alterations()` collects every finding's, as the plot registry
collects `plots.py`; a key that names no claim of its finding is a LabError.

`alter_and_judge(run_dir, tmp)` copies the run once per alteration of every claim its
experiment names (daemon logs left out: the analysis never reads them), applies the
alteration, judges the copy (`analysis.pipeline.judge`: derived figures and claims, no plots
or report, which say nothing about a status and took most of the time) and returns
{claim_id: status}: "reproduced" when any alteration of the claim left it reproduced, else the
status of its first alteration.
"""

from __future__ import annotations

import copy
import shutil
from collections.abc import Callable
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.claim import REPRODUCED
from analysis.pipeline import judge
from analysis.rundata import Cell, Run, load_run
from analysis.verdicts import experiment_claims
from dnslab import findings, results
from dnslab.errors import LabError

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


def copy_file(source: Cell, target: Cell, name: str) -> int:
    if not (source.dir / name).is_file() or not target.dir.is_dir():
        return 0
    shutil.copyfile(source.dir / name, target.dir / name)
    return 1


# --- every finding's alterations -------------------------------------------------------------

def alterations() -> dict[str, tuple[Alteration, ...]]:
    """{claim_id: alterations} from every finding package's `altered.py`."""
    found: dict[str, tuple[Alteration, ...]] = {}
    for finding in findings.all_findings():
        module = finding.module("altered")
        if module is None:
            continue
        claims = {c for e in finding.experiments for c in experiment_claims(e)}
        for claim_id, funcs in getattr(module, "ALTERATIONS", {}).items():
            if claim_id not in claims:
                raise LabError(f"{finding.path / 'altered.py'}: ALTERATIONS names {claim_id!r}, "
                               f"which no experiment of {finding.id} judges",
                               hint="known: " + ", ".join(sorted(claims)))
            found[claim_id] = tuple(funcs)
    return found


def alter_and_judge(run_dir: Path, tmp: Path) -> dict[str, str]:
    """{claim_id: status} of every claim of the run's experiment that has alterations, each
    judged on copies of the run with its effect removed or reversed (see the docstring)."""
    run_dir = Path(run_dir)
    experiment = load_run(run_dir).experiment
    statuses: dict[str, str] = {}
    table = alterations()
    for claim_id in experiment_claims(experiment):
        for alteration in table.get(claim_id, ()):
            copy = Path(tmp) / f"{claim_id}-{alteration.__name__}" / run_dir.name
            shutil.copytree(run_dir, copy, ignore=shutil.ignore_patterns("logs", "report"))
            if alteration(load_run(copy)) == 0:
                continue
            verdicts = judge(load_run(copy)).verdicts  # plots and report say nothing here
            status = next((v["status"] for v in verdicts if v["claim_id"] == claim_id), "")
            if statuses.get(claim_id) != REPRODUCED:
                statuses[claim_id] = (status if status == REPRODUCED or claim_id not in statuses
                                      else statuses[claim_id])
    return statuses
