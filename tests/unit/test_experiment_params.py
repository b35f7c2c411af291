"""Every parameter is checked before any work: a value outside its choices (the experiment
file's `choices:`, a sysctl profile by name, a server kind of the run's lab), an unknown
RUNTIME, is one line before the procedure runs and before a run folder exists; a run the
procedure itself refuses before its first cell leaves no folder. And `dnslab experiment
show NAME` says what an experiment is."""

from __future__ import annotations

from pathlib import Path

import pytest

from dnslab import experiment, experiment_spec, paths, topology
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


@pytest.mark.parametrize("name", experiment_spec.known_experiments())
def test_every_experiments_defaults_and_scales_pass_their_own_checks(name: str) -> None:
    spec = experiment_spec.load_spec(name)
    lab = topology.load(spec.topology)
    for scale in (None, *spec.scales):
        experiment_spec.check_params(spec, experiment_spec.resolve_params(spec, {}, scale), lab)


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
    assert refused.value.hint == "SECONDARY from: bind, knot, nsd, pdns"


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


def test_choices_for_no_parameter_are_a_one_line_error(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from dnslab import findings

    folder = tmp_path / "z_made_up"
    folder.mkdir()
    (folder / findings.MANIFEST).write_text("id: Z1\ntitle: t\nseed: '0'\nsource: s\n")
    (folder / "made-up.yaml").write_text(
        "topology: xfr\nprocedure: p.run\nparams: {transports: [tcp]}\n"
        "choices: {transport: [tcp, tls]}\n")
    monkeypatch.setattr(findings, "ROOTS", [(tmp_path, "nowhere")])
    findings.refresh()
    try:
        with pytest.raises(LabError, match="choices for transport, which is no parameter"):
            experiment_spec.load_spec("made-up")
    finally:
        monkeypatch.undo()
        findings.refresh()


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


def test_show_gives_each_parameter_its_comment_and_choices() -> None:
    text = render_show("xfr-30k-zones", width=100)
    lines = text.splitlines()
    at = lines.index("  SECONDARY=bind")
    assert lines[at + 1] == "      choices: bind, knot, nsd, pdns (the secondary kinds of lab xfr)"
    at = next(i for i, line in enumerate(lines) if line.startswith("  FAILURE_AT_S=38.0"))
    assert lines[at] == "  FAILURE_AT_S=38.0   [ci: 0.5]"
    assert "the seed's first failure, 38 s" in lines[at + 1]
    assert any("wide-ports (sysctl profiles" in line for line in lines)
