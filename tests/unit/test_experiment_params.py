"""Every parameter is checked before any work: a value its rule refuses (the experiment
file's `rules:`: a range, a choice, a sysctl profile by name, a server kind of the run's
lab, a bound on another parameter), an unknown RUNTIME, is one line before the procedure
runs and before a run folder exists; a run the procedure itself refuses before its first
cell leaves no folder. Every parameter of every experiment declares its rule, and every
default and scale keeps to it. And `dnslab experiment show NAME` says what an experiment
is. (tests/unit/test_param_fuzz.py throws bad values at every parameter.)"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dnslab import experiment, experiment_spec, findings, paths, topology
from dnslab.commands.experiment import render_show
from dnslab.errors import LabError


@pytest.fixture
def no_lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Results and lab state in tmp_path, no lab up; the procedure records that it ran."""
    from dnslab import lab as lab_engine

    monkeypatch.setattr(paths, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(paths, "LABS_STATE", tmp_path / "labs")
    monkeypatch.setattr(lab_engine, "leftovers", lambda lab=None: [])
    ran: list[str] = []
    monkeypatch.setattr(experiment, "procedure", lambda spec: lambda run: ran.append(run.path))
    return ran


def every_spec() -> list[experiment_spec.ExperimentSpec]:
    """Every finding's experiment, and every shared procedure's defaults (as a file of
    one's own that sets none of them takes them)."""
    specs = [experiment_spec.load_spec(name) for name in experiment_spec.known_experiments()]
    for defaults in sorted(findings.OWN_PROCEDURES[0].glob("*.yaml")):
        raw = experiment_spec._read_defaults(defaults)
        specs.append(experiment_spec.ExperimentSpec(
            name=defaults.stem, path=defaults, description="", topology="reference",
            procedure=f"{defaults.stem}.run", finding=None, claims=[], plots=[],
            params=raw["params"], scales=raw.get("scales") or {},
            rules=experiment_spec._rules(defaults, raw["params"], raw.get("rules"))))
    return specs


SPECS = every_spec()


@pytest.mark.parametrize("spec", SPECS, ids=[s.name for s in SPECS])
def test_every_experiments_defaults_and_scales_pass_their_own_checks(
        spec: experiment_spec.ExperimentSpec) -> None:
    assert set(spec.rules) == set(spec.params), "every parameter declares its rule"
    lab = topology.load(spec.topology)
    for scale in (None, *spec.scales):
        experiment_spec.check_params(spec, experiment_spec.resolve_params(spec, {}, scale), lab)


@pytest.mark.parametrize("spec", SPECS, ids=[s.name for s in SPECS])
def test_each_rule_says_the_type_its_default_has(spec: experiment_spec.ExperimentSpec) -> None:
    """A value on the command line is read as its default's type: a rule that says another
    would promise what the parameter cannot take (0.5 for an integer's default)."""
    for key, default in spec.params.items():
        kinds = {f.kind for f in spec.rules[key].forms}
        element = {f.element.kind for f in spec.rules[key].forms if f.element is not None}
        if isinstance(default, bool):
            assert kinds == {"bool"}, key
        elif isinstance(default, int):
            assert "int" in kinds and "number" not in kinds, key
        elif isinstance(default, float):
            assert "number" in kinds and "int" not in kinds, key
        elif isinstance(default, list):
            assert "each" in kinds, key
            if default and isinstance(default[0], int):
                assert element <= {"int"}, key
        elif isinstance(default, dict):
            assert kinds & {"map", "sysctls", "wan", "each"}, key
        else:
            assert not kinds & {"bool", "each", "map", "sysctls", "wan"}, key


@pytest.mark.parametrize("spec", SPECS, ids=[s.name for s in SPECS])
def test_the_rules_read_beside_the_defaults(spec: experiment_spec.ExperimentSpec) -> None:
    """`rules:` lists the parameters in the order of `params:`, one line each."""
    assert list(spec.rules) == list(spec.params)
    text = spec.path.read_text().split("\nrules:", 1)[1].split("\nscales:", 1)[0]
    for key in spec.params:
        assert f"\n  {key}: " in text, key


@pytest.mark.parametrize("name, args, said", [
    # refused once the calibration cold start had run (the procedure checked it per profile)
    ("xfr-30k-zones", ["PROFILES=default,wide-port"], "'wide-port' is not a choice"),
    ("xfr-zone-sweep", ["PROFILES=nope"], "'nope' is not a choice"),
    ("tcp-sysctl", ["PROFILES=default,diner"], "'diner' is not a choice"),
    ("dnsdist-listeners", ["PROFILE=tuned"], "'tuned' is not a choice"),
    ("tcp-fallback", ["TUNED_PROFILE=mobile"], "'mobile' is not a choice"),
    # a kind the lab has, in the role the parameter names
    ("xfr-30k-zones", ["SECONDARY=unbound"], "lab 'xfr' has no such secondary"),
    ("tcp-sysctl", ["SERVER=pdns"], "lab 'tcpauth' has no such primary"),
    ("tcp-fallback", ["SERVERS=bind,bind9"], "'bind9' is not a choice"),
    ("xfr-30k-zones", ["TRANSPORTS=tcp,quic"], "'quic' is not a choice"),
    ("xfr-30k-zones", ["TRANSPORTS="], "choose at least one"),
    ("dnsdist-listeners", ["GENERATOR=flamethrower"], "'flamethrower' is not a choice"),
    ("tcp-fallback-cache", ["DISTS=pareto"], "'pareto' is not a choice"),
    # refused once cell 1 had started (the lab's up chose the runtime)
    ("xfr-30k-zones", ["RUNTIME=bogus"], "unknown runtime 'bogus'"),
])
def test_a_bad_value_is_refused_before_any_work_and_leaves_no_folder(
        no_lab: list[str], name: str, args: list[str], said: str) -> None:
    with pytest.raises(LabError, match=said) as refused:
        experiment.run_experiment(name, ["SCALE=ci", *args])
    assert refused.value.hint, "the one line says how to fix it"
    assert no_lab == [], "the procedure never ran"
    assert not paths.RESULTS.exists(), "no run folder for a refused run"


def test_the_choices_hint_names_what_may_be_given(no_lab: list[str]) -> None:
    with pytest.raises(LabError) as refused:
        experiment.run_experiment("xfr-30k-zones", ["SCALE=ci", "SECONDARY=unbound"])
    # the lab's secondaries (a kind alone: its default version), then the other versions a
    # run may name (it adds their nodes)
    assert refused.value.hint == ("SECONDARY from: bind, knot, nsd, pdns, bind@9.16, bind@9.20, "
                                  "knot@3.4, nsd@4.12, pdns@4.9")


def test_an_empty_primary_means_the_labs_first(no_lab: list[str]) -> None:
    experiment.run_experiment("xfr-tld", ["SCALE=ci", "RUNTIME=netns", "PRIMARY="])
    assert len(no_lab) == 1


def test_a_run_the_procedure_refuses_before_its_first_cell_leaves_no_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dnslab import lab as lab_engine

    monkeypatch.setattr(paths, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(paths, "LABS_STATE", tmp_path / "labs")
    monkeypatch.setattr(lab_engine, "leftovers", lambda lab=None: [])

    def refuses(run: experiment.Run) -> None:
        raise LabError("PORT_RANGE='1 2 3' is not a port range", hint="PORT_RANGE=auto")

    monkeypatch.setattr(experiment, "procedure", lambda spec: refuses)
    with pytest.raises(LabError, match="not a port range"):
        experiment.run_experiment("xfr-30k-zones", ["SCALE=ci", "RUNTIME=netns"])
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").rglob("*"))

    def fails_in_a_cell(run: experiment.Run) -> None:
        with run.cell("profile=default", {"profile": "default"}):
            raise LabError("the primary exited while loading its zones", hint="its log")

    monkeypatch.setattr(experiment, "procedure", lambda spec: fails_in_a_cell)
    with pytest.raises(LabError, match="exited"):
        experiment.run_experiment("xfr-30k-zones", ["SCALE=ci", "RUNTIME=netns"])
    kept = list((tmp_path / "results" / "xfr-30k-zones").iterdir())
    assert len(kept) == 1 and (kept[0] / "cells" / "profile=default").is_dir()  # a result


@pytest.mark.parametrize("rules, said", [
    ("rules:\n  transports: each one of tcp, tls\n  transport: one of tcp",
     "a rule for transport, which is no parameter"),
    ("rules: {}", "parameter transports has no rule"),
    ("rules:\n  transports: each one", "the rule of transports: 'one' is no rule"),
    ("rules:\n  transports: int >= one two", "the rule of transports: .* is no bound"),
    ("choices: {transports: [tcp, tls]}", "choices: is now rules:"),
])
def test_a_file_whose_rules_are_wrong_is_a_one_line_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rules: str, said: str) -> None:
    folder = tmp_path / "z_made_up"
    folder.mkdir()
    (folder / findings.MANIFEST).write_text("id: Z1\ntitle: t\nseed: '0'\nsource: s\n")
    (folder / "made-up.yaml").write_text(
        f"topology: xfr\nprocedure: p.run\nparams: {{transports: [tcp]}}\n{rules}\n")
    monkeypatch.setattr(findings, "ROOTS", [(tmp_path, "nowhere")])
    findings.refresh()
    try:
        with pytest.raises(LabError, match=said) as refused:
            experiment_spec.load_spec("made-up")
        assert refused.value.hint and "\n" not in refused.value.message
    finally:
        monkeypatch.undo()
        findings.refresh()


# the inputs issue 42 found accepted, refused late or in several lines: each is one line from
# the CLI (the process `make experiment` runs), status 2, in under a second, no run folder
ISSUE_42 = [
    ("tcp-fallback", "STAIR_STEP=0", "STAIR_STEP=0: must be an integer >= 1"),
    ("tcp-fallback", "STEP_S=-1", "STEP_S=-1: must be an integer >= 1"),
    ("tcp-fallback", "BURST_S=-5", "BURST_S=-5: must be an integer >= 0"),
    ("xfr-30k-zones", "REPETITIONS=0", "REPETITIONS=0: must be an integer >= 1"),
    ("tcp-sysctl", "TRIAL_S=0", "TRIAL_S=0: must be an integer >= 1"),
    ("transport-cost", "CLIENTS=0", "CLIENTS=0: must be an integer >= 1"),
    ("resolver-cache", "OUTSTANDING=-1", "OUTSTANDING=-1: must be one or more"),
    ("xfr-30k-zones", "ZONES=-5", "ZONES=-5: must be an integer from 1 to 1000000"),
]


@pytest.mark.parametrize("name, arg, said", ISSUE_42, ids=[a for _, a, _ in ISSUE_42])
def test_the_inputs_of_issue_42_are_one_line_in_under_a_second(
        tmp_path: Path, name: str, arg: str, said: str) -> None:
    env = {**os.environ, "DNSLAB_RESULTS": str(tmp_path / "results")}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "dnslab.cli", "experiment", "run", name, arg],
                          capture_output=True, text=True, env=env, timeout=30)
    took = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [proc.stderr.strip()], proc.stderr
    assert proc.stderr.startswith(f"error: {said}") and "(hint: " in proc.stderr
    assert not (tmp_path / "results").exists()
    # the CPU the command took (about 0.3 s, the interpreter's start and imports most of
    # it); the clock on a machine other jobs share may say more, never several seconds
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    assert cpu < 1.0 and took < 5.0, f"{cpu:.2f} s of CPU, {took:.2f} s"


def test_a_bound_on_another_parameter_names_it_with_its_value(no_lab: list[str]) -> None:
    with pytest.raises(LabError) as refused:
        experiment.run_experiment("tcp-fallback", ["SCALE=ci", "WARMUP_S=4"])
    assert refused.value.message == "WARMUP_S=4: must be an integer >= 0 and < STEP_S (4)"
    with pytest.raises(LabError, match="STAIR_STOP=100: must be an integer >= STAIR_START"):
        experiment.run_experiment("tcp-fallback", ["STAIR_START=200", "STAIR_STOP=100"])
    # the parameter bound to is checked first: its own rule names the mistake
    with pytest.raises(LabError, match="^STEP_S=0: must be"):
        experiment.run_experiment("tcp-fallback", ["SCALE=ci", "STEP_S=0"])
    assert no_lab == []


def test_a_value_of_the_wrong_type_is_refused_by_its_rule(no_lab: list[str]) -> None:
    with pytest.raises(LabError) as refused:
        experiment.run_experiment("xfr-30k-zones", ["ZONES=lots"])
    assert refused.value.message == "ZONES=lots: must be an integer from 1 to 1000000"
    assert refused.value.hint == ("the default is ZONES=30000; make show EXP=xfr-30k-zones: "
                                  "every rule")
    with pytest.raises(LabError) as refused:
        experiment.run_experiment("xfr-30k-zones", ["ZONES=" + "9" * 5000])
    assert len(refused.value.message) < 200, "an overlong value is cut short"


@pytest.mark.parametrize("name", experiment_spec.known_experiments())
def test_show_says_the_story_every_parameter_the_claims_and_the_plots(name: str) -> None:
    spec = experiment_spec.load_spec(name)
    text = render_show(name, width=100)
    assert experiment_spec.story(spec.path)[0] in text
    for key, default in spec.params.items():
        assert f"  {key.upper()}={experiment_spec.as_typed(default)}" in text, key
    for scale, values in spec.scales.items():
        for key, value in values.items():
            assert f"[{scale}: {experiment_spec.as_typed(value)}]" in text, (scale, key)
    about = experiment_spec.describe(spec)
    for claim_id, title in about.claims:
        assert title, f"{claim_id}: no title found in its claims.py"
        assert claim_id in text and title in text
    for plot, title in about.plots:
        assert title, f"{plot}: no title found in a plots.py"
        assert plot in text
    assert f"make experiment EXP={name}" in text


def test_show_gives_each_parameter_its_comment_and_rule() -> None:
    text = render_show("xfr-30k-zones", width=100)
    lines = text.splitlines()
    at = lines.index("  SECONDARY=bind@9.20")
    assert lines[at + 1:at + 3] == [
        "      may be: a secondary kind of lab xfr (bind, knot, nsd, pdns, bind@9.16, bind@9.20, "
        "knot@3.4,", "      nsd@4.12, pdns@4.9)"]
    at = lines.index("  ZONES=30000   [ci: 1000]")
    assert lines[at + 1] == "      may be: an integer from 1 to 1000000"
    text = render_show("tcp-fallback", width=100)
    assert "      may be: an integer >= 0 and < STEP_S\n" in text
    at = next(i for i, line in enumerate(lines) if line.startswith("  FAILURE_AT_S=38.0"))
    assert lines[at] == "  FAILURE_AT_S=38.0   [ci: 0.5]"
    assert "the seed's first failure, 38 s" in lines[at + 2]
    at = lines.index("  PROFILES=default,wide-ports,tw-buckets-1000")
    assert lines[at + 1].startswith("      may be: one or more (comma separated) sysctl profiles (")
    assert "wide-ports)" in " ".join(lines[at + 1:at + 4])
