"""`dnslab reproduce [SCALE=ci] [RUNTIME=...] [RESUME=results/campaign/<id>] [PLAN_ONLY=1]`:
every finding's experiments as one campaign (`dnslab.campaign`), each analysed when it ends,
then the findings book (`python -m analysis book`) in the campaign's folder."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import typer

from dnslab import campaign, paths
from dnslab import experiment as runner
from dnslab.commands.experiment import analyse
from dnslab.errors import LabError
from dnslab.experiment_spec import parse_overrides

KEYS = {"SCALE", "RUNTIME", "RESUME", "PLAN_ONLY"}


def build_book(done: campaign.Campaign) -> None:
    code = subprocess.run([sys.executable, "-m", "analysis", "book",
                           *map(str, done.runs()), "--out", str(done.dir / "book")]).returncode
    if code != 0:
        print(f"the book failed (exit {code}); the runs are kept (hint: make book "
              f"RUNS=\"{' '.join(map(str, done.runs()))}\")", file=sys.stderr)


def reproduce(ctx: typer.Context) -> None:
    """Run every finding's experiments (experiments/campaign.yaml), then build the book."""
    given = parse_overrides(list(ctx.args))
    unknown = sorted(set(given) - KEYS)
    if unknown:
        raise LabError(f"reproduce takes {', '.join(sorted(KEYS))}, not {', '.join(unknown)}",
                       hint="per-experiment parameters live in experiments/campaign.yaml")
    run(given)


def run(given: dict[str, str], run_fn: campaign.RunFn = runner.run_experiment,
        root: Path | None = None) -> campaign.Campaign | None:
    """The campaign `make reproduce` runs, with `given` its KEY=VALUE arguments; `run_fn`
    runs one experiment (the integration tests pass one that reuses their session's runs)."""
    resume = Path(given["RESUME"]) if given.get("RESUME") else None
    return campaign.run_campaign(run_fn, root=root or paths.RESULTS,
                                 scale=given.get("SCALE") or None, runtime=given.get("RUNTIME"),
                                 resume=resume, after_run=analyse, at_end=build_book,
                                 plan_only=given.get("PLAN_ONLY", "") not in ("", "0"))
