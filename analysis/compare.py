"""Draw the same figures for several runs side by side (before/after tuning, BIND vs Knot).

Output goes to `results/compare/<UTC time>/`: one PNG + SVG per plot that applies to every
run, and `compare.md` with the runs' verdicts next to each other (each with its figures'
intervals) and, per claim, whether the runs agree (`agreement`): the same verdict, no flip
(the others inconclusive, with intervals that overlap or not), or a flip between reproduced
and not reproduced - what two runs of the same experiment must never show.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from analysis import plots
from analysis.rundata import Run, load_run
from dnslab import paths, results
from dnslab.errors import LabError


def resolve_run(arg: str, root: Path) -> Path:
    """A run given as a path, or as `<exp>/<run-id>` under the results root."""
    for candidate in (Path(arg), root / arg):
        if results.is_run(candidate):
            return candidate
    raise LabError(f"no run at {arg!r}",
                   hint="give a run folder or <experiment>/<run-id>; list them with "
                        "`python -m analysis runs`")


def compare(run_args: list[str], *, root: Path | None = None, out: Path | None = None,
            only: list[str] | None = None) -> Path:
    root = Path(root or paths.RESULTS)
    if len(run_args) < 2:
        raise LabError("compare needs at least two runs")
    runs: list[Run] = [load_run(resolve_run(a, root)) for a in run_args]
    registry = plots.load_all()
    shared = [n for n in plots.experiment_plots(runs[0].experiment)
              if all(n in plots.experiment_plots(r.experiment) for r in runs[1:])]
    specs = [registry[n] for n in shared if n in registry]
    if only:
        unknown = sorted(set(only) - set(plots.PLOTS))
        if unknown:
            raise LabError(f"unknown plot(s) {', '.join(unknown)}",
                           hint="known: " + ", ".join(sorted(plots.PLOTS)))
        specs = [s for s in specs if s.name in only]
    if not specs:
        raise LabError("no plot applies to all of these runs",
                       hint="compare runs of the same experiment (or of one family, e.g. xfr-*)")
    out = out or root / "compare" / datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    out.mkdir(parents=True, exist_ok=True)
    lines = ["# Comparison", "", *[f"- {r.label}: {plots.describe(r)}" for r in runs], ""]
    for spec in specs:
        result = plots.render(spec, runs, out)
        if result.png is not None:
            lines.append(f"![{spec.title}]({result.png.name})")
        else:
            lines.append(f"- {spec.title}: not drawn ({result.error or result.skipped})")
        lines += [f"  - note: {n}" for n in result.notes]
    lines += ["", "## Verdicts", "",
              "| claim | " + " | ".join(r.label for r in runs) + " | the runs |",
              "|---" * (len(runs) + 2) + "|"]
    verdicts = [_verdicts(r) for r in runs]
    for claim_id in dict.fromkeys(c for v in verdicts for c in v):
        found = [v.get(claim_id) for v in verdicts]
        lines.append(f"| {claim_id} | " + " | ".join(_cell(v) for v in found)
                     + f" | {agreement([v for v in found if v])} |")
    (out / "compare.md").write_text("\n".join(lines) + "\n")
    return out


def _cell(verdict: dict[str, Any] | None) -> str:
    if not verdict:
        return ""
    said = verdict.get("measured") or verdict.get("detail") or ""
    figures = "; ".join(i["text"] for i in verdict.get("intervals") or [] if i.get("text"))
    return (f"{verdict['status']}: {said}" + (f" [intervals: {figures}]" if figures else "")
            ).replace("|", "\\|")


def _overlap(a: dict[str, Any], b: dict[str, Any]) -> bool:
    low = [x for x in (a.get("low"), b.get("low")) if x is not None]
    high = [x for x in (a.get("high"), b.get("high")) if x is not None]
    return not low or not high or max(low) <= min(high)


def agreement(verdicts: list[dict[str, Any]]) -> str:
    """Whether runs of one claim agree: "same verdict"; "no flip, intervals overlap" (one
    verdict and inconclusive ones, the same figures' intervals overlapping); "no flip,
    intervals apart"; "FLIP" (reproduced in one, not reproduced in another); "differs"
    (not applicable, incomplete or an error beside a verdict)."""
    statuses = {str(v.get("status")) for v in verdicts}
    if len(statuses) <= 1:
        return "same verdict"
    if {"reproduced", "not_reproduced"} <= statuses:
        return "FLIP"
    if statuses <= {"reproduced", "not_reproduced", "inconclusive"}:
        figures: dict[str, list[dict[str, Any]]] = {}
        for v in verdicts:
            for interval in v.get("intervals") or []:
                figures.setdefault(str(interval.get("what")), []).append(interval)
        apart = any(not _overlap(a, b) for found in figures.values()
                    for i, a in enumerate(found) for b in found[i + 1:])
        return "no flip, intervals " + ("apart" if apart else "overlap")
    return "differs"


def _verdicts(run: Run) -> dict[str, dict[str, Any]]:
    path = run.dir / "summary.json"
    try:
        data = json.loads(path.read_text()) if path.is_file() else {}
    except json.JSONDecodeError:
        data = {}
    return {v["claim_id"]: v for v in data.get("verdicts") or []}
