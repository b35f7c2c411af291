"""A campaign: every finding's experiments, one after another, then the findings book.

The plan is data (`experiments/campaign.yaml`: each step an experiment, the overrides it runs
with at full scale and the minutes it is expected to take). A campaign has a folder of its own,
`results/campaign/<id>/`, whose `campaign.json` keeps, per step, its status and its run
folder, written before and after each step: after Ctrl-C, a crash or a reboot,
`RESUME=results/campaign/<id>` skips the finished steps and continues an interrupted one with
the experiment runner's own `RESUME=` (in its own run folder, as always). Each experiment's
run folder stays where the runner puts it. At the start the plan is printed with an ETA per
step: the duration of that experiment's last complete run at the same scale on this machine
when the results have one, else the plan's estimate (SCALE=ci: a few minutes in all).

The engine never imports the analysis: `run_campaign` takes what to do after each run and at
the end (the command passes `python -m analysis ...` subprocesses).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from dnslab import experiment_spec, findings, paths, results, topology
from dnslab.errors import LabError

PLAN = paths.EXPERIMENTS / "campaign.yaml"
STATE = "campaign.json"
CI_MINUTES = 2.0  # a step at SCALE=ci without a run to time it by
DONE, RUNNING, PENDING = "complete", "running", "pending"


@dataclass(frozen=True)
class Step:
    experiment: str
    overrides: dict[str, str] = field(default_factory=dict)
    minutes: float = 0.0

    def args(self, scale: str | None, runtime: str | None) -> list[str]:
        args = [f"{k}={v}" for k, v in self.overrides.items()] if not scale else []
        if scale:
            args.append(f"SCALE={scale}")
        if runtime:
            args.append(f"RUNTIME={runtime}")
        return args


def load_plan(path: Path = PLAN) -> list[Step]:
    """The campaign's steps; a step naming no known experiment is a one-line error."""
    try:
        raw = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise LabError(f"{path}: cannot read the campaign plan ({exc})",
                       hint="see experiments/campaign.yaml for the format") from None
    steps = []
    known = findings.known_experiments()
    for entry in raw.get("steps") or []:
        name = str(entry.get("experiment", ""))
        if name not in known:
            raise LabError(f"{path}: step {name!r} is no experiment",
                           hint="known experiments: " + ", ".join(known))
        overrides = {str(k): str(v) for k, v in (entry.get("overrides") or {}).items()}
        _check_overrides(path, name, overrides)
        steps.append(Step(name, overrides, float(entry.get("minutes") or 0)))
    if not steps:
        raise LabError(f"{path}: the plan has no steps", hint="list steps: [{experiment: ...}]")
    return steps


def _check_overrides(path: Path, name: str, overrides: dict[str, str]) -> None:
    """A step's overrides keep to its experiment's rules: said before the campaign starts,
    not hours later when the step does."""
    spec = experiment_spec.load_spec(name)
    try:
        params = experiment_spec.resolve_params(spec, overrides, None)
        experiment_spec.check_params(spec, params, topology.load(spec.topology))
    except LabError as exc:
        raise LabError(f"{path}: step {name}: {exc.message}", hint=exc.hint) from None


def _parse_time(text: Any) -> dt.datetime | None:
    try:
        return dt.datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None


def measured_minutes(root: Path, experiment: str, scale: str) -> float | None:
    """How long the last complete run of `experiment` at `scale` took here (None: no run)."""
    for folder in reversed(results.run_dirs(root, experiment)):
        meta = results.peek_meta(folder)
        if meta.get("complete") and str(meta.get("scale") or "full") == scale:
            start, end = _parse_time(meta.get("started")), _parse_time(meta.get("ended"))
            if start and end and end > start:
                return (end - start).total_seconds() / 60
    return None


def eta(steps: list[Step], root: Path, scale: str | None) -> list[tuple[Step, float, str]]:
    """Per step: minutes expected and where the figure comes from."""
    out = []
    for step in steps:
        measured = measured_minutes(root, step.experiment, scale or "full")
        if measured is not None:
            out.append((step, measured, "its last run here"))
        else:
            out.append((step, CI_MINUTES if scale else step.minutes, "plan estimate"))
    return out


def format_minutes(minutes: float) -> str:
    hours, mins = divmod(round(minutes), 60)
    return f"{hours} h {mins:02d} min" if hours else f"{mins} min"


@dataclass
class Campaign:
    """The campaign's folder and its state file."""

    dir: Path
    state: dict[str, Any]

    @classmethod
    def create(cls, root: Path, steps: list[Step], scale: str | None,
               runtime: str | None) -> Campaign:
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
        folder = Path(root) / "campaign" / stamp
        folder.mkdir(parents=True, exist_ok=False)
        state = {"started": stamp, "scale": scale or "full", "runtime": runtime,
                 "steps": [{"experiment": s.experiment, "overrides": s.overrides,
                            "status": PENDING, "run": None, "started": None} for s in steps]}
        campaign = cls(folder, state)
        campaign.save()
        return campaign

    @classmethod
    def reopen(cls, folder: Path) -> Campaign:
        path = Path(folder) / STATE
        if not path.is_file():
            raise LabError(f"RESUME={folder}: no {STATE} there",
                           hint="RESUME=results/campaign/<id> of an interrupted campaign")
        return cls(Path(folder), json.loads(path.read_text()))

    def save(self) -> None:
        tmp = self.dir / (STATE + ".tmp")
        tmp.write_text(json.dumps(self.state, indent=1) + "\n")
        tmp.replace(self.dir / STATE)

    def runs(self) -> list[Path]:
        return [Path(s["run"]) for s in self.state["steps"] if s.get("run")]


def _interrupted_run(root: Path, experiment: str, since: str | None) -> Path | None:
    """The run folder a step started before it was interrupted (its runner made it)."""
    for folder in reversed(results.run_dirs(root, experiment)):
        meta = results.peek_meta(folder)
        if since and str(meta.get("started", "")) >= since and not meta.get("complete"):
            return folder
    return None


RunFn = Callable[[str, list[str]], Any]  # dnslab.experiment.run_experiment


def run_campaign(run_fn: RunFn, *, root: Path, scale: str | None = None,
                 runtime: str | None = None, resume: Path | None = None,
                 after_run: Callable[[Path], Any] = lambda path: None,
                 at_end: Callable[[Campaign], Any] = lambda c: None,
                 say: Callable[[str], None] = print, plan: Path = PLAN,
                 plan_only: bool = False) -> Campaign | None:
    """Run the plan's steps (or the rest of an interrupted campaign), then `at_end`;
    `plan_only`: print the plan and its ETA, run nothing."""
    if resume is not None:
        campaign = Campaign.reopen(resume)
        scale = None if campaign.state["scale"] == "full" else campaign.state["scale"]
        runtime = campaign.state.get("runtime")
        by_name = {s.experiment: s for s in load_plan(plan)}
        steps = [by_name.get(s["experiment"]) or Step(s["experiment"], s["overrides"])
                 for s in campaign.state["steps"]]
    elif plan_only:
        steps = load_plan(plan)
        timing = eta(steps, root, scale)
        say(f"plan ({scale or 'full'} scale): {len(steps)} experiments, about "
            f"{format_minutes(sum(m for _, m, _ in timing))}")
        for step, minutes, source in timing:
            extra = " ".join(f"{k}={v}" for k, v in step.overrides.items()) if not scale else ""
            say(f"  {step.experiment:<20} {extra:<48} ~{format_minutes(minutes)} ({source})")
        return None
    else:
        steps = load_plan(plan)
        campaign = Campaign.create(root, steps, scale, runtime)
    todo = [(i, s) for i, s in enumerate(steps) if campaign.state["steps"][i]["status"] != DONE]
    timing = eta([s for _, s in todo], root, scale)
    say(f"campaign {campaign.dir} ({scale or 'full'} scale): {len(todo)} of {len(steps)} "
        f"experiments to run, about {format_minutes(sum(m for _, m, _ in timing))}")
    for step, minutes, source in timing:
        extra = " ".join(f"{k}={v}" for k, v in step.overrides.items()) if not scale else ""
        say(f"  {step.experiment:<20} {extra:<48} ~{format_minutes(minutes)} ({source})")
    for n, ((index, step), (_, minutes, _)) in enumerate(zip(todo, timing, strict=True), 1):
        entry = campaign.state["steps"][index]
        args = step.args(scale, runtime)
        previous = entry.get("run") or (
            _interrupted_run(root, step.experiment, entry.get("started"))
            if entry["status"] == RUNNING else None)
        if previous is not None:
            args.append(f"RESUME={previous}")
            args = [a for a in args if a.split("=")[0] in ("RESUME", "RUNTIME")]
        left = sum(m for _, m, _ in timing[n - 1:])
        say(f"[{n}/{len(todo)}] {step.experiment}{' (resumed)' if previous else ''}: "
            f"~{format_minutes(minutes)}, campaign ETA {format_minutes(left)}")
        entry.update(status=RUNNING, started=dt.datetime.now(dt.UTC).isoformat(
            timespec="milliseconds"))
        campaign.save()
        run = run_fn(step.experiment, args)
        entry.update(status=DONE, run=str(Path(run.path).resolve()))
        campaign.save()
        after_run(Path(run.path))
    at_end(campaign)
    return campaign
