"""The experiment runner without a lab: spec loading, parameter overrides, result layout."""

from __future__ import annotations

import json

import pytest

from analysis.rundata import load_run
from dnslab import experiment, paths
from dnslab.errors import LabError
from dnslab.results import SCHEMA_VERSION
from dnslab.runtime.base import LabState


def test_every_experiment_file_loads_with_a_story_and_a_ci_scale():
    names = experiment.known_experiments()
    assert "xfr-30k-zones" in names
    for name in names:
        spec = experiment.load_spec(name)
        assert spec.description and spec.findings
        assert spec.path.read_text().startswith("#"), f"{name}: top comment tells the story"
        assert "ci" in spec.scales, f"{name} needs a SCALE=ci variant"
        experiment.procedure(spec)  # the procedure it names exists


def test_unknown_experiment_lists_known_ones():
    with pytest.raises(LabError) as exc:
        experiment.load_spec("nope")
    assert "xfr-30k-zones" in (exc.value.hint or "")


def test_overrides_are_typed_by_their_defaults():
    spec = experiment.load_spec("xfr-30k-zones")
    params = experiment.resolve_params(
        spec, {"ZONES": "10000", "SECONDARY": "knot", "PROFILE": "default,wide-ports"}, None)
    assert params["zones"] == 10000
    assert params["secondary"] == "knot"
    assert params["profiles"] == ["default", "wide-ports"]


def test_scale_then_command_line():
    spec = experiment.load_spec("xfr-30k-zones")
    params = experiment.resolve_params(spec, {"ZONES": "500"}, "ci")
    assert params["zones"] == 500
    assert params["port_range"] == spec.scales["ci"]["port_range"]


@pytest.mark.parametrize("overrides, message", [
    ({"ZONEZ": "1"}, "no parameter 'ZONEZ'"),
    ({"ZONES": "many"}, "not a valid int"),
])
def test_bad_overrides_get_one_clear_error(overrides, message):
    spec = experiment.load_spec("xfr-30k-zones")
    with pytest.raises(LabError, match=message):
        experiment.resolve_params(spec, overrides, None)


def test_unknown_scale_is_refused():
    spec = experiment.load_spec("xfr-30k-zones")
    with pytest.raises(LabError, match="no scale"):
        experiment.resolve_params(spec, {}, "huge")


def test_parse_overrides_needs_key_value():
    assert experiment.parse_overrides(["A=1", "B=x=y"]) == {"A": "1", "B": "x=y"}
    with pytest.raises(LabError):
        experiment.parse_overrides(["oops"])


def test_runs_get_their_own_folder_and_keep_interrupted_cells(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "RESULTS", tmp_path)
    spec = experiment.load_spec("xfr-30k-zones")
    params = experiment.resolve_params(spec, {}, "ci")
    first = experiment.Run(spec, params, "netns", False, ["make", "experiment"], "ci")
    second = experiment.Run(spec, params, "netns", False, ["make", "experiment"], "ci")
    assert first.path != second.path and first.path.parent == second.path.parent
    with pytest.raises(KeyboardInterrupt):
        with first.cell("profile=default", {"profile": "default"}) as cell:
            cell.figures["partial"] = 1
            raise KeyboardInterrupt
    first.finish(complete=False)
    meta = json.loads((first.path / "meta.json").read_text())
    assert meta["complete"] is False and meta["ended"]
    assert meta["cells"]["profile=default"]["status"] == "interrupted"
    assert meta["kernel"] and meta["git"] and meta["command"] == ["make", "experiment"]
    cell = json.loads((first.path / "cells" / "profile=default" / "cell.json").read_text())
    assert cell["figures"]["partial"] == 1 and cell["status"] == "interrupted"
    assert meta["schema_version"] == SCHEMA_VERSION and cell["schema_version"] == SCHEMA_VERSION
    # the runner writes the run; the analysis (a separate step) writes summary.json
    assert not (first.path / "summary.json").exists()
    run = load_run(first.path)
    assert [(c.id, c.status, c.figures) for c in run.cells] == [
        ("profile=default", "interrupted", {"partial": 1, "error": "KeyboardInterrupt"})]
    assert (first.path / "xfr.clab.yml").exists() and (first.path / "xfr-30k-zones.yaml").exists()


def test_experiment_refuses_a_lab_that_is_up_and_says_what_it_saw(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(paths, "LABS_STATE", tmp_path / "labs")
    LabState(lab="xfr", runtime="netns", topology="topologies/xfr.clab.yml",
             root=str(tmp_path / "labs" / "xfr")).save()
    with pytest.raises(LabError) as refused:
        experiment.run_experiment("xfr-30k-zones", ["SCALE=ci", "RUNTIME=netns"])
    assert "already up" in str(refused.value)
    assert f"state folder {tmp_path / 'labs' / 'xfr'}" in str(refused.value)
    assert "make lab down LAB=xfr" in refused.value.hint
    assert not (tmp_path / "results").exists()
