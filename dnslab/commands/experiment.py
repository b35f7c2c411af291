"""`dnslab experiment run|list`: run an experiment file end to end, or list the known ones.

The flow goes one way: the runner writes the run folder (dnslab.results), then this command
hands the folder to the analysis as a separate process (`python -m analysis run <folder>`).
The engine never imports the analysis; a failed analysis loses nothing, it can be re-run
with `make analysis RUN=<folder>`.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import typer

from dnslab import experiment as runner
from dnslab import experiment_spec

app = typer.Typer(help="Run experiments (experiments/<finding>/<name>.yaml).", no_args_is_help=True)


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def run(ctx: typer.Context,
        name: str = typer.Argument("", help="experiment name, e.g. xfr-30k-zones")) -> None:
    """Run NAME with KEY=VALUE overrides (ZONES=10000 SECONDARY=knot SCALE=ci KEEP=1 ...)."""
    command = ["make", "experiment", f"EXP={name}", *ctx.args] if ctx.args or name else sys.argv
    run_ = runner.run_experiment(name, list(ctx.args), command=command)
    analyse(run_.path)


def analyse(run_dir: Path) -> int:
    """Run the analysis on a finished run folder; its exit status (0 = verdicts written)."""
    code = subprocess.run([sys.executable, "-m", "analysis", "run", str(run_dir)]).returncode
    if code not in (0, 1):  # 1: verdicts written, some data missing (printed above)
        print(f"analysis failed (exit {code}); the run is kept "
              f"(hint: make analysis RUN={run_dir})", file=sys.stderr)
    return code


@app.command(name="list")
def list_() -> None:
    """The known experiments with their one-line descriptions."""
    for name in experiment_spec.known_experiments():
        spec = experiment_spec.load_spec(name)
        print(f"{name:<22} {spec.finding.id:<8} {spec.description}")
