"""`dnslab experiment run|list`: run an experiment file end to end, or list the known ones."""

from __future__ import annotations

import sys

import typer

from dnslab import experiment as runner

app = typer.Typer(help="Run experiments (experiments/<name>.yaml).", no_args_is_help=True)


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def run(ctx: typer.Context,
        name: str = typer.Argument("", help="experiment name, e.g. xfr-30k-zones")) -> None:
    """Run NAME with KEY=VALUE overrides (ZONES=10000 SECONDARY=knot SCALE=ci KEEP=1 ...)."""
    command = ["make", "experiment", f"EXP={name}", *ctx.args] if ctx.args or name else sys.argv
    runner.run_experiment(name, list(ctx.args), command=command)


@app.command(name="list")
def list_() -> None:
    """The known experiments with their one-line descriptions."""
    for name in runner.known_experiments():
        spec = runner.load_spec(name)
        print(f"{name:<22} {', '.join(spec.findings):<8} {spec.description}")
