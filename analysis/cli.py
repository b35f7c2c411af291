"""`python -m analysis`: analyse a run, list runs with their verdicts, compare runs.

    python -m analysis run results/xfr-30k-zones/<run-id>
    python -m analysis runs [--experiment xfr-30k-zones]
    python -m analysis compare <run> <run> [...] [--plot time_wait]
    python -m analysis book [<run> ...] [--out DIR]

Errors a user can fix print one line (no traceback) and exit with status 2; `run` exits 1
when the run had data problems (missing files), 0 otherwise.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from dnslab import paths
from dnslab.errors import LabError
from dnslab.probes import changed_settings, changed_text
from dnslab.results import is_full_scale
from dnslab.results import peek_meta as results_meta

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Claims, plots, reports and the run index for dnslab results.")
out = Console(highlight=False)
err = Console(stderr=True, highlight=False, soft_wrap=True)  # one line per error, unwrapped
STYLE = {"reproduced": "green", "not_reproduced": "red", "inconclusive": "magenta",
         "not_applicable": "dim", "incomplete": "yellow", "error": "bold red"}


def _fail(exc: LabError) -> None:
    err.print(exc.one_line(), markup=False)
    raise typer.Exit(2)


@app.command("run")
def run_cmd(
    run_dir: Annotated[Path, typer.Argument(help="results/<experiment>/<run-id>")],
    no_index: Annotated[bool, typer.Option("--no-index", help="do not update the index")] = False,
) -> None:
    """Evaluate the claims, draw the plots and write summary.json and report/ for one run."""
    from analysis import run_analysis

    try:
        summary = run_analysis(run_dir, update_index=not no_index)
    except LabError as exc:
        _fail(exc)
        return
    table = Table(title=f"{summary['experiment']} {summary['run_id']}"
                  + ("" if summary["complete"] else " (INCOMPLETE)"))
    for col in ("status", "claim", "measured"):
        table.add_column(col)
    for v in summary["verdicts"]:
        table.add_row(f"[{STYLE.get(v['status'], '')}]{v['status']}[/]", v["claim_id"],
                      v.get("measured") or v.get("detail") or "")
    if summary["verdicts"]:
        out.print(table)
    else:  # a run of a file of one's own: no finding, nothing to judge
        out.print(f"{summary['experiment']} {summary['run_id']}: no claims (no finding judges "
                  f"this experiment); its plots: {', '.join(summary['analysis']['plots'])}")
    for line in summary["analysis"]["errors"]:
        err.print(f"error: {line}", markup=False)
    out.print(f"report: {Path(run_dir) / summary['analysis']['report']}")
    if summary["analysis"]["errors"]:
        raise typer.Exit(1)


@app.command("runs")
def runs_cmd(
    results: Annotated[Path, typer.Option(help="results folder")] = paths.RESULTS,
    experiment: Annotated[str | None, typer.Option(help="only this experiment")] = None,
) -> None:
    """List runs (rebuilding results/index.sqlite) with their verdicts."""
    from analysis import index

    try:
        index.update(results)
        rows = index.list_runs(results, experiment)
    except LabError as exc:
        _fail(exc)
        return
    table = Table(title=f"runs in {results}")
    for col in ("run", "complete", "verdicts"):
        table.add_column(col)
    for row in rows:
        # checks of the lab are counted apart, never as reproductions
        text = ", ".join(f"[{STYLE.get(status, '')}]{label}[/]"
                         for label, status, _ in index.verdict_counts(row["verdicts"]))
        table.add_row(row["path"], "yes" if row["complete"] else "[yellow]no[/]",
                      text or "[dim]not analysed[/]")
    out.print(table)
    # judged / not applicable (machine) / not applicable (setting), per finding, of each
    # claim's latest evidence (as the book counts it): its experiment's newest complete
    # analysed run, full scale where there is one, or, where that run lacked the claim's
    # cells, the newest full run that judged it
    # a full-scale probe of other settings (QUERIES_PER_CONN=1) is listed, not counted
    counted = [row for row in rows if row["verdicts"] and row["complete"]]
    metas = {row["path"]: results_meta(results / row["path"]) for row in counted}
    full_scale = {path for path, meta in metas.items() if is_full_scale(meta)}
    probes = {path: changed_settings(results / path, metas[path]) for path in full_scale}
    evidence = index.latest_evidence(
        (row["experiment"], row["path"] in full_scale and not probes[row["path"]], row["path"],
         row["verdicts"]) for row in reversed(counted))  # oldest first
    totals = index.census(v for v, _ in evidence)
    if totals:
        out.print("census of each claim's latest evidence: its experiment's newest run, full "
                  "scale where there is one, or, where that run lacked the claim's cells, the "
                  "newest full run that judged it (claims, calibrations and lab checks):",
                  markup=False)
        for finding, counts in totals.items():
            # a probe speaks only where its experiment has no run on the file's settings
            runs = sorted({label.rsplit("/", 1)[-1] + (" (a probe)" if probes.get(label) else "")
                           for v, label in evidence if index.finding_of(v) == finding})
            out.print(f"  {finding}: {index.census_text(counts)} (runs {', '.join(runs)})",
                      markup=False)
    for path, changed in probes.items():
        if changed:
            out.print(f"probe (settings changed, not only what runs; counted only where its "
                      f"experiment has no full run on its file's settings): "
                      f"{path} ({changed_text(changed)})", markup=False)


@app.command("compare")
def compare_cmd(
    runs: Annotated[list[str], typer.Argument(help="two or more runs")],
    plot: Annotated[list[str] | None, typer.Option("--plot", help="only these plots")] = None,
    results: Annotated[Path, typer.Option(help="results folder")] = paths.RESULTS,
    out_dir: Annotated[Path | None, typer.Option("--out", help="output folder")] = None,
) -> None:
    """Draw the same figures for several runs side by side; prints the output folder."""
    from analysis.compare import compare

    try:
        folder = compare(runs, root=results, out=out_dir, only=plot or None)
    except LabError as exc:
        _fail(exc)
        return
    out.print(str(folder), markup=False)


@app.command("book")
def book_cmd(
    runs: Annotated[list[Path] | None, typer.Argument(help="run folders (default: the newest "
                                                      "complete run of each experiment)")] = None,
    results: Annotated[Path, typer.Option(help="results folder")] = paths.RESULTS,
    out_dir: Annotated[Path | None, typer.Option("--out", help="output folder (new)")] = None,
) -> None:
    """Build the findings book (index.html and a 16:9 deck.pdf) in a new folder."""
    from analysis import book

    try:
        folder = book.build(runs or None, results_root=results, out=out_dir)
    except LabError as exc:
        _fail(exc)
        return
    out.print(f"book: {folder / 'index.html'}\ndeck: {folder / 'deck.pdf'}", markup=False)


def main() -> None:
    app()
