"""One run's analysis end to end: the finding's derive hook, verdicts, plots, summary.json,
report, index entry. Nothing here names a finding or an experiment: the run's experiment
file and its finding's package say which claims, plots and derived figures apply.

Missing data never stops the analysis: a claim that needs a missing file gets status
`error` with a one-line message, a plot without data is listed as not drawn, and all those
lines are collected in `summary.json` under `analysis.errors` for the CLI to print.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from analysis import index, plots, report
from analysis.rundata import Run, load_run
from analysis.verdicts import evaluate, evaluate_by_version, version_view
from dnslab import findings
from dnslab.errors import LabError


@dataclasses.dataclass
class Judged:
    """A run's verdicts (its first version's where a kind ran in several, each version's in
    `by_version`) and the lines that say what could not be derived or collected."""
    verdicts: list[dict[str, Any]]
    by_version: dict[str, list[dict[str, Any]]]
    derived_errors: list[str]
    collect_errors: list[str]


def judge(run: Run) -> Judged:
    """The finding's derived figures, then its claims on the run: everything a verdict
    needs and nothing a reader sees (no plots, report or summary.json): `analyse` goes on from
    here, and judging altered copies of a run (`analysis.altered`) stops here."""
    derived_errors = []
    found = findings.finding_of(run.experiment)
    derived = found.module("derived") if found else None
    if derived is not None and hasattr(derived, "derive"):
        try:
            derived.derive(run)  # figures the claims quote (e.g. F5's stats.json)
        except LabError as exc:
            derived_errors.append(f"derive ({found.id}): {exc.message}")
    by_version, collect_errors = evaluate_by_version(run)
    if by_version:  # a kind in several versions: the run's verdicts are its first version's
        verdicts = next(iter(by_version.values()))
    else:
        verdicts, collect_errors = evaluate(run)
    return Judged(verdicts, by_version, derived_errors, collect_errors)


def analyse(run_dir: Path, *, update_index: bool = True) -> dict[str, Any]:
    run = load_run(run_dir)
    judged = judge(run)
    verdicts, by_version = judged.verdicts, judged.by_version
    derived_errors, collect_errors = judged.derived_errors, judged.collect_errors

    report_dir = run.dir / "report"
    if report_dir.exists():
        shutil.rmtree(report_dir)  # the folder is the analysis' own output
    try:
        specs = plots.plots_for(run)
    except LabError as exc:
        specs, derived_errors = [], [*derived_errors, exc.message]
    if by_version:  # each version's own figures: its cells are not another's repetitions
        rendered = []
        for key in by_version:
            view, slug = version_view(run, key), key.replace("@", "-")
            for spec in specs:
                titled = dataclasses.replace(spec, title=f"{spec.title} ({key})")
                drawn = plots.render(titled, [view], report_dir, stem=f"{spec.name}-{slug}")
                drawn.name = f"{spec.name}-{slug}"
                rendered.append(drawn)
    else:
        rendered = [plots.render(spec, [run], report_dir) for spec in specs]

    errors: list[str] = [*derived_errors, *collect_errors]
    errors += [f"{v['claim_id']}: {v['detail']}" for v in verdicts if v["status"] == "error"]
    for p in rendered:
        if p.error:
            errors.append(f"plot {p.name}: {p.error}")
        errors += [f"plot {p.name}: {n}" for n in p.notes]

    summary_path = run.dir / "summary.json"
    summary: dict[str, Any] = {
        "experiment": run.experiment,
        "run_id": run.run_id,
        "complete": run.complete,
    }
    summary["schema_version"] = run.meta.get("schema_version", 1)
    summary["cells"] = {c.id: {"params": c.params, "figures": c.figures, "status": c.status}
                        for c in run.cells}
    summary["verdicts"] = verdicts
    if by_version:  # a kind measured in several versions: each judged on its own
        summary["verdicts_by_version"] = by_version
    summary["analysis"] = {
        "generated": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "report": "report/report.html",
        "summary_md": "report/summary.md",
        "plots": [f"report/{p.png.name}" for p in rendered if p.png is not None],
        "errors": errors,
    }
    report.write(run, summary, rendered, report_dir)
    summary_path.write_text(json.dumps(summary, indent=1) + "\n")
    if update_index:
        try:
            index.update(run.dir.parent.parent, runs=[run.dir])
        except LabError as exc:
            summary["analysis"]["errors"].append(f"index: {exc.message}")
    return summary
