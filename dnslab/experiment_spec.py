"""Experiment files and their parameters: `experiments/<finding>/<name>.yaml` read into an
`ExperimentSpec`, `KEY=VALUE` overrides typed by the defaults they replace, a scale applied,
every value checked against what it may be (`check_params`: the file's `choices:`, sysctl
profiles by name) before any work, and a resumed run's own parameters checked against what
is asked now. The runner (dnslab/experiment.py) runs what these give it. `describe` says
what an experiment is (`dnslab experiment show NAME`): its story, parameters with their
defaults, scales, choices and comments, the claims that judge it and the plots it draws.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from dnslab import findings
from dnslab.errors import LabError
from dnslab.results import is_run, read_meta
from dnslab.sysctl import known_profiles
from dnslab.topology import Topology

RESERVED = {"RUNTIME", "KEEP", "SCALE", "LAB", "ALLOW_HOST_SYSCTLS", "RESUME", "HOSTS",
            "GENERATOR_HOST", "SERVER_HOST"}
# another name for a parameter, where the experiment has no parameter of that name itself
# (PROFILE=default for PROFILES=; dnsdist-listeners' own PROFILE= stays its own)
ALIASES = {"profile": "profiles"}


def parameter_key(given: str, params: dict[str, Any]) -> str:
    key = given.lower()
    return key if key in params else ALIASES.get(key, key)


@dataclass
class ExperimentSpec:
    name: str
    path: Path
    description: str
    topology: str
    procedure: str
    # the finding whose package holds the file; None for a file of the user's own
    finding: findings.Finding | None
    claims: list[str]
    plots: list[str]
    params: dict[str, Any]
    scales: dict[str, dict[str, Any]]
    # parameter -> the values it may take: a list, or {role: <role>} (a server kind the
    # topology has a node of in that role)
    choices: dict[str, Any] = field(default_factory=dict)
    # its procedure runs with the lab split across hosts (HOSTS=); the others refuse it
    across_hosts: bool = False

    @property
    def package(self) -> str:
        """Where its procedure is found: the finding's package, or the shared procedures."""
        return self.finding.package if self.finding else findings.OWN_PROCEDURES[1]

    @property
    def procedure_module(self) -> str:
        """The procedure's module, within the finding's package (`xfr.cold_start` ->
        `experiments.f3_xfr.xfr`), or `experiments/procedures/` for a file of one's own."""
        return f"{self.package}.{self.procedure.rpartition('.')[0]}"

    @property
    def procedure_folder(self) -> Path:
        return self.finding.path if self.finding else findings.OWN_PROCEDURES[0]


def known_experiments() -> list[str]:
    return findings.known_experiments()


def load_spec(name: str) -> ExperimentSpec:
    """An experiment of a finding by name, or (a path: `mine.yaml`) a file of one's own."""
    if not name:
        raise LabError("no experiment named", hint="EXP=<name>; known: "
                       + ", ".join(known_experiments()))
    if findings.is_own_file(name):
        return load_own(Path(name))
    path = findings.experiment_file(name)
    finding = findings.finding_of(name)
    assert finding is not None  # experiment_file found it there
    return _parse(name, path, finding)


def load_own(path: Path) -> ExperimentSpec:
    """A user's own experiment file: it names a shared procedure (experiments/procedures/)
    and a topology (a lab name, or a file path taken from the experiment file's folder);
    it has no claims, and its name (the file's stem) is no finding's experiment, so its runs
    (results/<stem>/) are never judged as one."""
    if not path.is_file():
        raise LabError(f"no experiment file {path}",
                       hint="EXP= is an experiment's name (dnslab experiment list) or the path "
                       "of a .yaml file of your own")
    name = path.stem
    if findings.base_experiment(name) is not None:
        raise LabError(f"{path}: its name {name!r} is taken by a finding's experiment",
                       hint="rename your file (its stem names the runs' folder)")
    spec = _parse(name, path.resolve(), None)
    if spec.claims:
        raise LabError(f"{path}: claims: {', '.join(spec.claims)} in a file of your own",
                       hint="claims belong to a finding's package (README, Extending); "
                       "remove claims:")
    defaults_file = procedure_defaults(spec)
    if not defaults_file.is_file():
        known = sorted(p.stem for p in findings.OWN_PROCEDURES[0].glob("*.yaml"))
        raise LabError(f"{path}: procedure {spec.procedure!r} is no shared procedure",
                       hint="procedure: <module>.<function> of experiments/procedures/ "
                       f"(modules: {', '.join(known)})")
    defaults = _read_defaults(defaults_file)
    unknown = [k for k in spec.params if k not in defaults["params"]]
    if unknown:
        raise LabError(f"{path}: {', '.join(unknown)} is no parameter of {spec.procedure}",
                       hint="parameters: " + ", ".join(defaults["params"]))
    spec.params = {**defaults["params"], **spec.params}
    spec.choices = {**(defaults.get("choices") or {}), **spec.choices}
    scales = {scale: dict(values) for scale, values in (defaults.get("scales") or {}).items()}
    for scale, values in spec.scales.items():
        scales.setdefault(scale, {}).update(values)
    spec.scales = scales
    spec.plots = spec.plots or list(defaults.get("plots") or [])
    spec.description = spec.description or str(defaults.get("description", ""))
    beside = path.resolve().parent / spec.topology
    if beside.is_file():
        spec.topology = str(beside)
    return spec


def procedure_defaults(spec: ExperimentSpec) -> Path:
    """The shared procedure's defaults (`experiments/procedures/<module>.yaml`)."""
    module = spec.procedure.rpartition(".")[0]
    return findings.OWN_PROCEDURES[0] / f"{module}.yaml"


def _read_defaults(path: Path) -> dict[str, Any]:
    raw = yaml.safe_load(path.read_text()) or {}
    return {**raw, "params": raw.get("params") or {}}


def _parse(name: str, path: Path, finding: findings.Finding | None) -> ExperimentSpec:
    try:
        raw = yaml.safe_load(path.read_text()) or {}
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else "?"
        raise LabError(f"{path}:{line}: experiment file does not parse: {exc.problem}",
                       hint="fix the YAML at that line") from None
    if not isinstance(raw, dict):
        raise LabError(f"{path}: an experiment file is a mapping",
                       hint="see docs/architecture.md for the experiment file format")
    required = ("topology", "procedure", "params") if finding else ("topology", "procedure")
    missing = [k for k in required if k not in raw]
    if missing:
        raise LabError(f"{path}: missing {', '.join(missing)}",
                       hint="see docs/architecture.md for the experiment file format")
    choices = raw.get("choices") or {}
    params = raw.get("params") or {}
    unknown = [k for k in choices if k not in params] if finding else []
    if unknown:
        raise LabError(f"{path}: choices for {', '.join(unknown)}, which is no parameter",
                       hint="choices: name parameters of params:")
    return ExperimentSpec(name=name, path=path, description=raw.get("description", ""),
                          topology=str(raw["topology"]), procedure=str(raw["procedure"]),
                          finding=finding, claims=list(raw.get("claims") or []),
                          plots=list(raw.get("plots") or []), params=params,
                          scales=raw.get("scales", {}), choices=choices,
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
        key = parameter_key(raw_key, params)
        if key not in params:
            raise LabError(f"experiment {spec.name!r} has no parameter {raw_key!r}",
                           hint="parameters: " + ", ".join(k.upper() for k in params))
        params[key] = _coerce(key, text, spec.params.get(key, params[key]))
    return params


def is_profile_parameter(key: str) -> bool:
    """`profile`, `profiles` and `<x>_profile` name sysctl profiles (experiments/profiles/)."""
    return key in ("profile", "profiles") or key.endswith("_profile")


def allowed_values(spec: ExperimentSpec, key: str, topology: Topology | None) -> list[str] | None:
    """What parameter `key` may be (None: anything its type allows)."""
    rule = spec.choices.get(key)
    if isinstance(rule, dict) and "role" in rule:
        if topology is None:
            return None
        return list(topology.nodes_by_server(str(rule["role"])))
    if rule is not None:
        return [str(v) for v in rule]
    if is_profile_parameter(key):
        return known_profiles()
    return None


def check_params(spec: ExperimentSpec, params: dict[str, Any],
                 topology: Topology | None = None) -> None:
    """Every parameter with a set of choices holds only those (a list parameter at least
    one): a one-line LabError naming the choices, before the run starts anything."""
    for key, value in params.items():
        allowed = allowed_values(spec, key, topology)
        if allowed is None:
            continue
        if isinstance(value, list):
            values, empty = [str(v) for v in value], not value
        else:
            # an empty scalar is "not set" (e.g. PRIMARY=: the lab's first primary)
            values, empty = ([str(value)] if str(value) else []), False
        bad = [v for v in values if v not in allowed]
        if bad or empty:
            where = (f" (lab {topology.name!r} has no such {spec.choices[key]['role']})"
                     if isinstance(spec.choices.get(key), dict) and topology else "")
            raise LabError(f"{key.upper()}={','.join(values)}: "
                           f"{repr(bad[0]) + ' is not a choice' if bad else 'choose at least one'}"
                           f"{where}", hint=f"{key.upper()} from: {', '.join(allowed)}")


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
    changed = [k for k in overrides if asked.get(parameter_key(k, asked))
               != meta["params"].get(parameter_key(k, asked))]
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


# --- what an experiment is, for `dnslab experiment show` ------------------------------------

@dataclass(frozen=True)
class ParameterInfo:
    key: str
    default: Any
    scales: dict[str, Any]  # scale -> its value, where a scale sets one
    choices: str  # what it may be, in words ("" when anything its type allows)
    comment: str  # the experiment file's comment on it


@dataclass(frozen=True)
class Description:
    spec: ExperimentSpec
    story: list[str]
    parameters: list[ParameterInfo]
    claims: list[tuple[str, str]]  # (id, title)
    plots: list[tuple[str, str]]  # (name, title)


def story(path: Path) -> list[str]:
    """The experiment file's top comment, as lines of text."""
    lines = []
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        lines.append(line[1:].removeprefix(" "))
    return lines


_PARAM_LINE = re.compile(r"^  ([A-Za-z_][\w-]*):(?P<rest>.*)$")


def parameter_comments(path: Path) -> dict[str, str]:
    """{parameter: its comment}: the comment lines just above it in `params:` and the one at
    the end of its line."""
    comments: dict[str, str] = {}
    pending: list[str] = []
    inside = False
    for line in path.read_text().splitlines():
        if not line.startswith(" "):
            inside = line.startswith("params:")
            pending = []
            continue
        if not inside:
            continue
        stripped = line.strip()
        if stripped.startswith("#"):
            pending.append(stripped[1:].strip())
            continue
        match = _PARAM_LINE.match(line)
        if match is None:
            continue  # a nested map's line
        rest = match.group("rest")
        tail = rest.split(" #", 1)[1].strip() if " #" in rest else ""
        comments[match.group(1)] = " ".join([*pending, tail]).strip()
        pending = []
    return comments


def decorated_titles(module: Path, decorator: str) -> dict[str, str]:
    """{first argument: title=} of every `@<decorator>("...", title="...")` in a module, read
    from its source (the engine never imports the analysis)."""
    if not module.is_file():
        return {}
    found = {}
    for node in ast.walk(ast.parse(module.read_text(), str(module))):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id == decorator and node.args
                and isinstance(node.args[0], ast.Constant)):
            continue
        title = next((k.value.value for k in node.keywords if k.arg == "title"
                      and isinstance(k.value, ast.Constant)), "")
        found[str(node.args[0].value)] = str(title)
    return found


def _choices_text(spec: ExperimentSpec, key: str, topology: Topology | None) -> str:
    rule = spec.choices.get(key)
    allowed = allowed_values(spec, key, topology)
    if allowed is None:
        return ""
    text = ", ".join(allowed)
    if isinstance(rule, dict) and "role" in rule:
        return f"{text} (the {rule['role']} kinds of lab {spec.topology})"
    if rule is None:
        return f"{text} (sysctl profiles, experiments/profiles/)"
    return text


def describe(spec: ExperimentSpec, topology: Topology | None = None) -> Description:
    comments = parameter_comments(spec.path)
    if spec.finding is None:  # a file of one's own: the shared procedure's defaults say more
        comments = {**parameter_comments(procedure_defaults(spec)),
                    **{k: v for k, v in comments.items() if v}}
    parameters = [
        ParameterInfo(key=key, default=default,
                      scales={scale: values[key] for scale, values in spec.scales.items()
                              if key in values},
                      choices=_choices_text(spec, key, topology), comment=comments.get(key, ""))
        for key, default in spec.params.items()]
    claim_titles: dict[str, str] = {}
    plot_titles: dict[str, str] = {}
    for found in findings.all_findings():
        claim_titles.update(decorated_titles(found.path / "claims.py", "claim"))
        plot_titles.update(decorated_titles(found.path / "plots.py", "plot"))
    plot_titles.update(decorated_titles(findings.OWN_PROCEDURES[0] / "plots.py", "plot"))
    return Description(spec=spec, story=story(spec.path), parameters=parameters,
                       claims=[(c, claim_titles.get(c, "")) for c in spec.claims],
                       plots=[(p, plot_titles.get(p, "")) for p in spec.plots])


def as_typed(value: Any) -> str:
    """A parameter's value as it is typed on the command line (KEY=VALUE)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    if isinstance(value, dict):
        return yaml.safe_dump(value, default_flow_style=True, width=10_000).strip() if value \
            else "{}"
    return "" if value is None else str(value)
