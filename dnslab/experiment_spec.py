"""Experiment files and their parameters: `experiments/<finding>/<name>.yaml` read into an
`ExperimentSpec`, `KEY=VALUE` overrides typed by the defaults they replace, a scale applied,
every value checked against its parameter's rule (`rules:` beside `params:`, one short line
each: dnslab/param_rules.py) before any work, and a resumed run's own parameters checked
against what is asked now. The runner (dnslab/experiment.py) runs what these give it.
`describe` says what an experiment is (`dnslab experiment show NAME`): its story, parameters
with their defaults, scales, rules and comments, the claims that judge it and the plots it
draws.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from dnslab import findings, param_rules, yamlfile
from dnslab.errors import LabError
from dnslab.param_rules import Rule
from dnslab.results import is_run, read_meta
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
    # parameter -> what it may be (`rules:`; every parameter of a finding's file has one)
    rules: dict[str, Rule] = field(default_factory=dict)
    # its procedure runs with the lab split across hosts (HOSTS=); the others refuse it
    across_hosts: bool = False
    # parameters that only choose what runs (which servers, profiles, cells; on which CPUs),
    # not how it is measured (`selectors:`): a run that sets any other away from the file's
    # value at its scale is a probe of other settings (dnslab/probes.py)
    selectors: list[str] = field(default_factory=list)

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
    spec.rules = {**_rules(defaults_file, defaults["params"], defaults.get("rules")),
                  **spec.rules}
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
    raw = yamlfile.load(path.read_text()) or {}
    return {**raw, "params": raw.get("params") or {}}


def _parse(name: str, path: Path, finding: findings.Finding | None) -> ExperimentSpec:
    try:
        raw = yamlfile.load(path.read_text()) or {}
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
    if "choices" in raw:
        raise LabError(f"{path}: choices: is now rules:, one rule per parameter",
                       hint="rules: {transports: each one of tcp, tls, ...} (the forms: "
                            "docs/architecture.md, Experiment files)")
    params = raw.get("params") or {}
    rules = _rules(path, params, raw.get("rules"), every=finding is not None)
    selectors = raw.get("selectors") or []
    if not isinstance(selectors, list) or any(k not in params for k in selectors):
        raise LabError(f"{path}: selectors: is a list of parameters of params:",
                       hint="selectors: [servers, profiles] (the parameters that only choose "
                            "what runs)")
    return ExperimentSpec(name=name, path=path, description=raw.get("description", ""),
                          topology=str(raw["topology"]), procedure=str(raw["procedure"]),
                          finding=finding, claims=list(raw.get("claims") or []),
                          plots=list(raw.get("plots") or []), params=params,
                          scales=raw.get("scales", {}), rules=rules,
                          across_hosts=bool(raw.get("across_hosts", False)),
                          selectors=[str(k) for k in selectors])


def load_copy(spec: ExperimentSpec, path: Path) -> ExperimentSpec:
    """The same experiment read from a copy of its file (the one a run folder keeps)."""
    return _parse(spec.name, path, spec.finding)


def _rules(path: Path, params: dict[str, Any], raw: Any, every: bool = True) -> dict[str, Rule]:
    """A file's `rules:`, parsed: each names a parameter, and (`every`) each parameter has
    one; a rule that is no rule is one line naming the file and the parameter."""
    raw = raw or {}
    if not isinstance(raw, dict):
        raise LabError(f"{path}: rules: is a map of parameter to rule",
                       hint="rules: {zones: int >= 1, ...}")
    unknown = [k for k in raw if k not in params]
    if unknown:
        raise LabError(f"{path}: a rule for {', '.join(unknown)}, which is no parameter",
                       hint="rules: name parameters of params:")
    missing = [k for k in params if k not in raw]
    if every and missing:
        raise LabError(f"{path}: parameter {', '.join(missing)} has no rule",
                       hint="rules: <parameter>: <rule> for each, e.g. int >= 1, number 0..1, "
                            "one of a, b (docs/architecture.md, Experiment files)")
    rules = {}
    for key, text in raw.items():
        try:
            rules[key] = param_rules.parse(str(text))
        except param_rules.RuleError as exc:
            raise LabError(f"{path}: the rule of {key}: {exc}",
                           hint="see dnslab/param_rules.py for the forms a rule takes") from None
    return rules


def all_specs() -> list[ExperimentSpec]:
    return [load_spec(name) for name in known_experiments()]


class _NotTyped(ValueError):
    """A command-line value that does not read as its default's type."""


def _coerce(text: str, default: Any) -> Any:
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
        raise _NotTyped(text) from None
    return text


def resolve_params(spec: ExperimentSpec, overrides: dict[str, str],
                   scale: str | None) -> dict[str, Any]:
    """Defaults, then the scale's values, then the command line's KEY=VALUE (each read as its
    default's type: a value that is not is refused by its rule)."""
    params = dict(spec.params)
    if scale and scale != "full":
        if scale not in spec.scales:
            raise LabError(f"experiment {spec.name!r} has no scale {scale!r}",
                           hint="scales: full, " + ", ".join(spec.scales))
        params.update(spec.scales[scale])
    for raw_key, text in overrides.items():
        key = parameter_key(raw_key, params)
        if key not in params:
            raise LabError(f"experiment {spec.name!r} has no parameter "
                           f"{param_rules.shown(raw_key)!r}",
                           hint="parameters: " + ", ".join(k.upper() for k in params))
        default = spec.params.get(key, params[key])
        try:
            params[key] = _coerce(text, default)
        except _NotTyped:
            rule = spec.rules.get(key)
            if rule is None:
                raise LabError(f"{key.upper()}={param_rules.shown(text)} is not a valid "
                               f"{type(default).__name__}",
                               hint=f"the default is {default!r}") from None
            raise param_rules.refusal(key, text, rule, rule_context(spec, params)) from None
    return params


def rule_context(spec: ExperimentSpec, params: dict[str, Any],
                 topology: Topology | None = None) -> param_rules.Context:
    return param_rules.Context(params=params, topology=topology,
                               experiment=spec.name if spec.finding else str(spec.path),
                               defaults=spec.params)


def check_params(spec: ExperimentSpec, params: dict[str, Any],
                 topology: Topology | None = None) -> None:
    """Every value against its parameter's rule (its range, its choices, the lab's server
    kinds, the parameters it is bound to), in the file's order: the first that breaks one
    is a one-line LabError naming the parameter, the value and what it may be, before the
    run starts anything."""
    context = rule_context(spec, params, topology)
    # a parameter others are bound to first: a bad STEP_S is named as such, not as the
    # WARMUP_S that must stay below it
    referred = {other for rule in spec.rules.values() for other in rule.refers_to}
    for key in sorted(params, key=lambda k: k not in referred):
        rule = spec.rules.get(key)
        if rule is not None:
            param_rules.check(key, params[key], rule, context)


def versioned_topology(spec: ExperimentSpec, params: dict[str, Any],
                       topology: Topology) -> Topology:
    """The lab with a node for every kind's version a parameter names that it has no node
    of (`SERVERS=bind@9.16,bind@9.20`: a BIND secondary per version), for each parameter
    whose rule is `<role> kind` or `each <role> kind`, or `server kind` (the version's node
    takes the role of the lab's node of that kind, a secondary before a primary; checked
    first: `check_params`)."""
    for key, rule in spec.rules.items():
        for form in rule.forms:
            element = form.element if form.kind == "each" else form
            if element is None or element.kind not in ("role", "server kind") \
                    or key not in params:
                continue
            value = params[key]
            names = [str(v) for v in (value if isinstance(value, list) else [value]) if v]
            if element.kind == "role":
                topology = topology.with_versions(element.words[0], names)
                continue
            for name in names:
                topology = topology.with_versions(topology.server_role(name), [name])
    return topology


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
    rule: str  # what it may be, in words ("" when the file gives no rule)
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


def _rule_text(spec: ExperimentSpec, key: str, topology: Topology | None) -> str:
    rule = spec.rules.get(key)
    if rule is None:
        return ""
    return param_rules.describe(rule, rule_context(spec, spec.params, topology), values=False)


def describe(spec: ExperimentSpec, topology: Topology | None = None) -> Description:
    comments = parameter_comments(spec.path)
    if spec.finding is None:  # a file of one's own: the shared procedure's defaults say more
        comments = {**parameter_comments(procedure_defaults(spec)),
                    **{k: v for k, v in comments.items() if v}}
    parameters = [
        ParameterInfo(key=key, default=default,
                      scales={scale: values[key] for scale, values in spec.scales.items()
                              if key in values},
                      rule=_rule_text(spec, key, topology), comment=comments.get(key, ""))
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
