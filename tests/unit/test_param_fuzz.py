"""Bad input is refused by rule, not by luck: for every parameter of every experiment (each
finding's, and each shared procedure's defaults through a file of one's own), bad values
generated from the parameter's declared rule (out of range, zero, negative, the wrong type,
an empty list, an unknown choice, an overlong string, a value its rule forbids in combination
with another parameter) are each refused by the CLI in one line, exit status 2, no traceback,
no run folder and no lab, in well under a second. Nothing is listed by hand here: a new
experiment, parameter or rule is covered as it is added."""

from __future__ import annotations

import ast
import math
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from dnslab import cli, experiment, experiment_spec, findings, param_rules, paths
from dnslab import lab as lab_engine
from dnslab.param_rules import Bound, Form, Rule

SLOW_S = 0.5  # "well under a second": the in-process check, without the interpreter's start
OVERLONG = "x" * 5000


@dataclass(frozen=True)
class Case:
    experiment: str  # a finding's experiment, or a shared procedure's module (own file)
    key: str
    value: str  # as typed on the command line
    why: str
    other: str = ""  # the parameter a combination case is bound to

    @property
    def id(self) -> str:
        return f"{self.experiment}-{self.key}-{self.why}"


def own_file_text(procedure_yaml: Path) -> str:
    """An experiment file of one's own that takes every default of a shared procedure."""
    return (f"description: fuzzed\ntopology: reference\n"
            f"procedure: {procedure_function(procedure_yaml)}\n")


def procedure_function(procedure_yaml: Path) -> str:
    """`<module>.<function>` of the procedure whose defaults the file holds: the function
    of its module that takes the run and returns nothing."""
    module = procedure_yaml.with_suffix(".py")
    for node in ast.parse(module.read_text()).body:
        args = node.args.args if isinstance(node, ast.FunctionDef) else []
        if (len(args) == 1 and getattr(args[0].annotation, "id", "") == "Run"
                and isinstance(node.returns, ast.Constant) and node.returns.value is None):
            return f"{procedure_yaml.stem}.{node.name}"
    raise AssertionError(f"{module}: no procedure")


def specs() -> Iterator[tuple[str, experiment_spec.ExperimentSpec]]:
    """(what EXP= names, its spec) for every finding's experiment and every shared
    procedure (its defaults, through a file of one's own that sets none)."""
    for name in experiment_spec.known_experiments():
        yield name, experiment_spec.load_spec(name)
    for defaults in sorted(findings.OWN_PROCEDURES[0].glob("*.yaml")):
        with tempfile.TemporaryDirectory() as folder:
            own = Path(folder) / f"fuzz-{defaults.stem}.yaml"
            own.write_text(own_file_text(defaults))
            yield f"procedure:{defaults.stem}", experiment_spec.load_spec(str(own))


# --- bad values, from the rule ---------------------------------------------------------------

def outside(bound: Bound, limit: float, integer: bool) -> float:
    """A value just outside one bound."""
    step = 1 if integer else 0.5
    return {">=": limit - step, ">": limit, "<=": limit + step, "<": limit}[bound.op]


def typed(value: float, integer: bool) -> str:
    return str(int(value)) if integer or float(value).is_integer() else str(value)


def numeric_candidates(form: Form, params: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(value, why, other parameter) just outside each bound, and zero and -1."""
    integer = form.kind == "int"
    found = []
    for bound in form.bounds:
        limit = bound.limit(params)
        if limit is None:
            continue
        other = bound.operand if isinstance(bound.operand, str) else ""
        why = f"combination-{other}" if other else f"out-of-range-{bound.op}{limit:g}"
        found.append((typed(outside(bound, limit, integer), integer), why, other))
    found += [("0", "zero", ""), ("-1", "negative", "")]
    if not integer:
        found += [("inf", "infinite", ""), ("nan", "not-a-number", "")]
    return found


def form_candidates(form: Form, params: dict[str, Any]) -> list[tuple[str, str, str]]:
    if form.kind in param_rules.NUMERIC:
        return numeric_candidates(form, params)
    return {
        "one of": [("nosuch", "unknown-choice", "")],
        "role": [("nosuch", "unknown-kind", "")],
        "server node": [("nosuch", "unknown-node", "")],
        "profile": [("nosuch", "unknown-profile", "")],
        "cpus": [("abc", "not-cpus", ""), ("3-1", "backwards-cpus", "")],
        "dns name": [("a..b", "empty-label", ""), ("x" * 64 + ".test", "long-label", "")],
        "port range": [("5 3", "backwards-ports", ""), ("0 10", "port-zero", ""),
                       ("1 70000", "port-too-high", ""), ("1024", "one-port", "")],
        "query": [("www.example.test", "no-type", ""), ("a b c", "three-words", "")],
        "sysctls": [("{bad key: 1}", "bad-sysctl-key", ""),
                    ("{net.ipv4.tcp_tw_reuse: [1]}", "list-sysctl-value", "")],
        "wan": [("{root: {delay_ms: -1}}", "negative-delay", ""),
                ("{root: {loss_pct: 101}}", "loss-above-100", ""),
                ("{root: {nosuch: 1}}", "unknown-shape-key", ""),
                ("{root: 5}", "shape-not-a-map", "")],
    }.get(form.kind, [])


def allowed_by_form(rule: Rule, value: str, params: dict[str, Any]) -> bool:
    """The value is one of the rule's literals (a number, a word, empty), or a number inside
    one of its numeric forms' bounds (zero for `int >= 0`)."""
    for form in rule.forms:
        if form.kind == "literal":
            if form.words[0] == "empty" and value.strip() in ("", "{}"):
                return True
            if str(form.literal) == value or _same_number(form.literal, value):
                return True
        elif form.kind in param_rules.NUMERIC:
            try:
                number = float(value)
            except ValueError:
                continue
            if form.kind == "int" and not number.is_integer():
                continue
            if math.isfinite(number) and all(b.holds(number, params) for b in form.bounds):
                return True
    return False


def _same_number(literal: Any, value: str) -> bool:
    try:
        return isinstance(literal, int | float) and float(value) == literal
    except ValueError:
        return False


def bad_values(spec: experiment_spec.ExperimentSpec, key: str,
               params: dict[str, Any]) -> list[tuple[str, str, str]]:
    rule = spec.rules[key]
    default = spec.params[key]
    found: list[tuple[str, str, str]] = [(OVERLONG, "overlong", "")]
    if isinstance(default, bool):
        found.append(("maybe", "wrong-type", ""))
    elif isinstance(default, int):
        found += [("abc", "wrong-type", ""), ("1.5", "not-an-integer", "")]
    elif isinstance(default, float):
        found.append(("abc", "wrong-type", ""))
    elif isinstance(default, dict):
        found += [("[1, 2]", "a-list-for-a-map", ""), ("{a: [", "broken-yaml", "")]
    for form in rule.forms:
        if form.kind == "each":
            assert form.element is not None
            if isinstance(default, dict):
                keys = list(params[key]) or ["a"]
                found += [(f"{{{keys[0]}: {v}}}", f"map-value-{why}", other)
                          for v, why, other in form_candidates(form.element, params)
                          if "{" not in v and "," not in v]
                continue
            found.append(("", "empty-list", ""))
            valid = [str(v) for v in params[key]][:1]
            for value, why, other in form_candidates(form.element, params):
                if "," in value or "{" in value:
                    continue
                found.append((value, f"element-{why}", other))
                if valid:
                    found.append((",".join([*valid, value]), f"second-element-{why}", other))
        else:
            found += form_candidates(form, params)
            if form.kind in ("one of", "role", "profile", "cpus", "dns name", "port range"):
                found.append(("", "empty", ""))
    unique: dict[str, tuple[str, str, str]] = {}
    element = next((f.element for f in rule.forms if f.kind == "each"), None)
    for value, why, other in found:
        single = Rule(rule.text, (element,)) if element is not None and why.startswith(
            ("element-", "map-value-")) else rule
        if not allowed_by_form(single, value, params):
            unique.setdefault(value, (value, why, other))
    return list(unique.values())


def cases() -> list[Case]:
    found = []
    for name, spec in specs():
        params = experiment_spec.resolve_params(spec, {}, "ci" if "ci" in spec.scales else None)
        for key in spec.params:
            found += [Case(name, key, value, why, other)
                      for value, why, other in bad_values(spec, key, params)]
    return found


CASES = cases()


# --- the run --------------------------------------------------------------------------------

@pytest.fixture
def no_lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Results in tmp_path; anything that would start work fails the test."""
    monkeypatch.setattr(paths, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(paths, "LABS_STATE", tmp_path / "labs")

    def no(what: str):
        def refuse(*args: Any, **kwargs: Any) -> None:
            raise AssertionError(f"{what} was reached: the value was not refused first")
        return refuse

    monkeypatch.setattr(experiment, "procedure", no("the procedure's import"))
    for name in ("up", "get_runtime", "clear_stale", "leftovers"):
        monkeypatch.setattr(lab_engine, name, no(f"lab {name}"))
    return tmp_path


def exp_argument(case: Case, tmp_path: Path) -> str:
    if not case.experiment.startswith("procedure:"):
        return case.experiment
    defaults = findings.OWN_PROCEDURES[0] / f"{case.experiment.split(':', 1)[1]}.yaml"
    own = tmp_path / f"fuzz-{defaults.stem}.yaml"
    own.write_text(own_file_text(defaults))
    return str(own)


def test_the_cases_cover_every_parameter_of_every_experiment() -> None:
    covered = {(c.experiment, c.key) for c in CASES}
    every = {(name, key) for name, spec in specs() for key in spec.params}
    assert covered == every
    assert {c.why for c in CASES} >= {"overlong", "wrong-type", "zero", "negative",
                                       "empty-list", "unknown-choice"}
    assert any(c.other for c in CASES), "no combination is declared anywhere"


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_bad_value_is_one_line_and_status_2_before_any_work(
        case: Case, no_lab: Path, capsys: pytest.CaptureFixture[str]) -> None:
    exp = exp_argument(case, no_lab)
    name = case.key.upper()
    started, cpu_started = time.perf_counter(), time.process_time()
    code = cli.run(["experiment", "run", exp, "SCALE=ci", f"{name}={case.value}"])
    took, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert code == 2, f"{name}={case.value[:60]!r} ({case.why}) was accepted: {err}{out}"
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err + out
    line = lines[0]
    assert f"{name}=" in line, line
    assert any(said in line for said in ("must be", "is not a choice", "choose at least one")), \
        line
    if case.other:
        assert case.other.upper() in line, f"the combination's other parameter: {line}"
    assert len(line) < 600, "an overlong value is cut short"
    assert not paths.RESULTS.exists(), "a refused run leaves no folder"
    # the CPU it took (a few ms); the clock of a machine other jobs share may say more
    assert cpu < SLOW_S and took < 5 * SLOW_S, f"refused after {cpu:.2f} s CPU, {took:.2f} s"
