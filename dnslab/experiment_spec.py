"""Experiment files and their parameters: `experiments/<finding>/<name>.yaml` read into an
`ExperimentSpec`, `KEY=VALUE` overrides typed by the defaults they replace, a scale applied,
and a resumed run's own parameters checked against what is asked now. The runner
(dnslab/experiment.py) runs what these give it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from dnslab import findings
from dnslab.errors import LabError
from dnslab.results import is_run, read_meta

RESERVED = {"RUNTIME", "KEEP", "SCALE", "LAB", "ALLOW_HOST_SYSCTLS", "RESUME", "HOSTS",
            "GENERATOR_HOST", "SERVER_HOST"}
ALIASES = {"profile": "profiles"}


@dataclass
class ExperimentSpec:
    name: str
    path: Path
    description: str
    topology: str
    procedure: str
    finding: findings.Finding
    claims: list[str]
    plots: list[str]
    params: dict[str, Any]
    scales: dict[str, dict[str, Any]]
    # its procedure runs with the lab split across hosts (HOSTS=); the others refuse it
    across_hosts: bool = False

    @property
    def procedure_module(self) -> str:
        """The procedure's module, within the finding's package (`xfr.cold_start` ->
        `experiments.f3_xfr.xfr`)."""
        return f"{self.finding.package}.{self.procedure.rpartition('.')[0]}"


def known_experiments() -> list[str]:
    return findings.known_experiments()


def load_spec(name: str) -> ExperimentSpec:
    if not name:
        raise LabError("no experiment named", hint="EXP=<name>; known: "
                       + ", ".join(known_experiments()))
    path = findings.experiment_file(name)
    finding = findings.finding_of(name)
    assert finding is not None  # experiment_file found it there
    try:
        raw = yaml.safe_load(path.read_text()) or {}
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else "?"
        raise LabError(f"{path}:{line}: experiment file does not parse: {exc.problem}",
                       hint="fix the YAML at that line") from None
    missing = [k for k in ("topology", "procedure", "params") if k not in raw]
    if missing:
        raise LabError(f"{path}: missing {', '.join(missing)}",
                       hint="see docs/architecture.md for the experiment file format")
    return ExperimentSpec(name=name, path=path, description=raw.get("description", ""),
                          topology=raw["topology"], procedure=raw["procedure"],
                          finding=finding, claims=list(raw.get("claims") or []),
                          plots=list(raw.get("plots") or []), params=raw["params"],
                          scales=raw.get("scales", {}),
                          across_hosts=bool(raw.get("across_hosts", False)))


def all_specs() -> list[ExperimentSpec]:
    return [load_spec(name) for name in known_experiments()]


def _coerce(key: str, text: str, default: Any) -> Any:
    try:
        if isinstance(default, bool):
            if text.lower() in ("1", "true", "yes", "on"):
                return True
            if text.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError(text)
        if isinstance(default, int):
            return int(text)
        if isinstance(default, float):
            return float(text)
        if isinstance(default, dict):
            value = yaml.safe_load(text) if text.strip() else {}
            if not isinstance(value, dict):
                raise ValueError(text)
            return value
        if isinstance(default, list):
            items = [t.strip() for t in text.split(",") if t.strip()]
            if default and isinstance(default[0], int):
                return [int(t) for t in items]
            return items
    except (ValueError, yaml.YAMLError):
        raise LabError(f"{key.upper()}={text!r} is not a valid {type(default).__name__}",
                       hint=f"the default is {default!r}") from None
    return text


def resolve_params(spec: ExperimentSpec, overrides: dict[str, str],
                   scale: str | None) -> dict[str, Any]:
    """Defaults, then the scale's values, then the command line's KEY=VALUE."""
    params = dict(spec.params)
    if scale and scale != "full":
        if scale not in spec.scales:
            raise LabError(f"experiment {spec.name!r} has no scale {scale!r}",
                           hint="scales: full, " + ", ".join(spec.scales))
        params.update(spec.scales[scale])
    for raw_key, text in overrides.items():
        key = ALIASES.get(raw_key.lower(), raw_key.lower())
        if key not in params:
            raise LabError(f"experiment {spec.name!r} has no parameter {raw_key!r}",
                           hint="parameters: " + ", ".join(k.upper() for k in params))
        params[key] = _coerce(key, text, spec.params.get(key, params[key]))
    return params


def resume_params(spec: ExperimentSpec, folder: Path, overrides: dict[str, str],
                  scale: str | None) -> tuple[Path, dict[str, Any], str | None]:
    """The folder, parameters and scale of an interrupted run to continue: its own, always
    (a KEY=VALUE that changes one would mix two experiments in one folder)."""
    folder = folder if folder.is_absolute() else (Path.cwd() / folder)
    if not is_run(folder):
        raise LabError(f"RESUME={folder}: no meta.json there",
                       hint="RESUME=results/<experiment>/<run-id> of an interrupted run")
    meta = read_meta(folder)
    if meta.get("experiment") != spec.name:
        raise LabError(f"RESUME={folder} is a run of {meta.get('experiment')!r}, "
                       f"not {spec.name!r}", hint=f"EXP={meta.get('experiment')}")
    if meta.get("complete"):
        raise LabError(f"RESUME={folder}: that run is complete", hint="nothing to resume")
    stored_scale = None if meta.get("scale") in (None, "full") else meta.get("scale")
    if scale and scale != (stored_scale or "full"):
        raise LabError(f"SCALE={scale} differs from the run's scale {meta.get('scale')}",
                       hint="leave SCALE out when resuming")
    asked = resolve_params(spec, overrides, stored_scale)
    changed = [k for k in overrides if asked.get(ALIASES.get(k.lower(), k.lower()))
               != meta["params"].get(ALIASES.get(k.lower(), k.lower()))]
    if changed:
        raise LabError(f"a resumed run keeps its parameters; {', '.join(changed)} differ",
                       hint="leave KEY=VALUE out when resuming, or start a new run")
    return folder, dict(meta["params"]), stored_scale


def parse_overrides(args: list[str]) -> dict[str, str]:
    overrides = {}
    for arg in args:
        if "=" not in arg:
            raise LabError(f"argument {arg!r} is not KEY=VALUE", hint="e.g. ZONES=10000")
        key, value = arg.split("=", 1)
        overrides[key.strip()] = value
    return overrides
