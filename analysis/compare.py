"""Draw the same figures for several runs side by side (before/after tuning, BIND vs Knot).

Output goes to `results/compare/<UTC time>/`: one PNG + SVG per plot that applies to every
run, and `compare.md` with the runs' verdicts next to each other.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

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
    lines += ["", "## Verdicts", "", "| claim | " + " | ".join(r.label for r in runs) + " |",
              "|---" * (len(runs) + 1) + "|"]
    verdicts = [_verdicts(r) for r in runs]
    for claim_id in dict.fromkeys(c for v in verdicts for c in v):
        lines.append(f"| {claim_id} | " + " | ".join(v.get(claim_id, "") for v in verdicts)
                     + " |")
    (out / "compare.md").write_text("\n".join(lines) + "\n")
    return out


def _verdicts(run: Run) -> dict[str, str]:
    import json

    path = run.dir / "summary.json"
    try:
        data = json.loads(path.read_text()) if path.is_file() else {}
    except json.JSONDecodeError:
        data = {}
    return {v["claim_id"]: f"{v['status']}: {v.get('measured') or v.get('detail') or ''}"
            for v in data.get("verdicts") or []}
