"""Whether a run asked its experiment's own question: a full-scale run that set a parameter
away from its experiment file's value (other than the file's `selectors:`, which only choose
which cells run and where) and from the value `make reproduce`'s plan gives it
(experiments/campaign.yaml, which says why it departs) is a *probe* of other settings
(QUERIES_PER_CONN=1, TRIALS=5). The book and `make runs`' census take a probe only where its
experiment has no full run on its own settings; `make runs` and the probe's report say what
it changed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from dnslab import campaign, experiment_spec
from dnslab.errors import LabError
from dnslab.results import is_full_scale


def changed_settings(run_dir: Path, meta: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """{KEY: (the run's value, the file's)} of the parameters a run changed (the module
    docstring). Judged against the copy of the file the run keeps (a default changed since is
    not the run's doing; without a copy, nothing is known changed); a parameter added since is
    left out. A run of a file of one's own, or of an experiment no longer known: none."""
    try:
        spec = experiment_spec.load_spec(str(meta.get("experiment") or ""))
    except LabError:
        return {}
    if spec.finding is None:
        return {}
    copy = Path(run_dir) / spec.path.name
    if not copy.is_file():
        return {}
    try:
        kept = experiment_spec.load_copy(spec, copy)
    except LabError:  # a file of an older format: today's rules read what it says
        kept = spec
    scale = meta.get("scale")
    try:
        own = experiment_spec.resolve_params(kept, {}, None if scale in (None, "full")
                                             else str(scale))
    except LabError:
        return {}
    planned = _planned(kept) if scale in (None, "full") else {}
    params = meta.get("params") or {}
    selectors = set(spec.selectors) | set(kept.selectors)
    return {k.upper(): (params[k], own[k]) for k in sorted(params)
            if k in own and k not in selectors and params[k] != own[k]
            and not (k in planned and params[k] == planned[k])}


def _planned(spec: experiment_spec.ExperimentSpec) -> dict[str, Any]:
    """The values `make reproduce`'s plan sets for the experiment ({} without a step that
    sets any, or a plan that does not read)."""
    try:
        steps = [s for s in campaign.load_plan() if s.experiment == spec.name and s.overrides]
    except LabError:
        return {}
    planned: dict[str, Any] = {}
    for step in steps:
        try:
            params = experiment_spec.resolve_params(spec, step.overrides, None)
        except LabError:
            continue
        keys = (experiment_spec.parameter_key(k, params) for k in step.overrides)
        planned |= {key: params[key] for key in keys}
    return planned


def changed_text(changed: dict[str, tuple[Any, Any]]) -> str:
    """"QUERIES_PER_CONN=1 (the file's 100), LOADS=150 (the file's 10,100,150)": the
    settings a probe changed as they are typed, each with the file's value."""
    def typed(value: Any) -> str:
        if isinstance(value, list):
            return ",".join(map(str, value))
        if isinstance(value, dict):
            return yaml.safe_dump(value, default_flow_style=True).strip()
        return str(value)
    return ", ".join(f"{key}={typed(ran)} (the file's {typed(own)})"
                     for key, (ran, own) in changed.items())


def counts_as_full(run_dir: Path, meta: dict[str, Any]) -> bool:
    """A run the book and the census take as its experiment's full run: at full scale (or the
    seed's) and on its experiment's own settings (`changed_settings`)."""
    return is_full_scale(meta) and not changed_settings(run_dir, meta)
