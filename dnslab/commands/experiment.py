"""`dnslab experiment run|list|show`: run an experiment file end to end, list the known ones,
or show what one is (its story, parameters with defaults, scales and rules, its claims and
plots).

The flow goes one way: the runner writes the run folder (dnslab.results), then this command
hands the folder to the analysis as a separate process (`python -m analysis run <folder>`).
The engine never imports the analysis; a failed analysis loses nothing, it can be re-run
with `make analysis RUN=<folder>`.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import typer

from dnslab import experiment as runner
from dnslab import experiment_spec, paths, topology

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


@app.command()
def show(name: str = typer.Argument("", help="experiment name, e.g. tcp-fallback")) -> None:
    """What NAME is: its story, parameters (defaults, scales, rules), claims and plots."""
    print(render_show(name))


def render_show(name: str, width: int | None = None) -> str:
    """The text `dnslab experiment show NAME` prints."""
    spec = experiment_spec.load_spec(name)
    about = experiment_spec.describe(spec, topology.load(spec.topology))
    width = width or min(shutil.get_terminal_size((100, 24)).columns, 100)
    finding = spec.finding
    where = spec.path.relative_to(paths.REPO) if spec.path.is_relative_to(paths.REPO) \
        else spec.path
    about_finding = (f"finding {finding.id} (seed {finding.seed}): {finding.title}" if finding
                     else "an experiment file of your own: no finding, no claims")
    out = [f"{spec.name}: {spec.description}", about_finding,
           f"file {where}, lab {spec.topology}, procedure {spec.procedure}", "", *about.story,
           ""]
    scales = ", ".join(["full (default)", *spec.scales])
    out.append(f"Parameters (KEY=VALUE on the command line; SCALE= one of: {scales}):")
    for info in about.parameters:
        line = f"  {info.key.upper()}={experiment_spec.as_typed(info.default)}"
        for scale, value in info.scales.items():
            line += f"   [{scale}: {experiment_spec.as_typed(value)}]"
        out.append(line)
        said = [f"may be: {info.rule}"] if info.rule else []
        said += [info.comment] if info.comment else []
        for text in said:
            out += textwrap.wrap(text, width, initial_indent="      ", subsequent_indent="      ",
                                 break_on_hyphens=False)
    out += ["", "Claims (judged by the analysis after the run):"]
    out += _columns(about.claims) or ["  none: claims belong to a finding's package"]
    out += ["", "Plots (in the run's report):"]
    out += _columns(about.plots)
    exp = spec.name if finding else where
    out += ["", f"Run it: make experiment EXP={exp} [SCALE=ci] [KEY=VALUE ...]"]
    return "\n".join(out)


def _columns(rows: list[tuple[str, str]]) -> list[str]:
    wide = max((len(name) for name, _ in rows), default=0)
    return [f"  {name:<{wide}}  {title}".rstrip() for name, title in rows]
