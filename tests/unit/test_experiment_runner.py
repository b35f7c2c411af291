"""The experiment runner without a lab: spec loading, parameter overrides, result layout."""

from __future__ import annotations

import os

import pytest

from analysis.rundata import load_run
from dnslab import experiment, experiment_spec, paths, results
from dnslab.errors import LabError
from dnslab.results import SCHEMA_VERSION
from dnslab.runtime.base import LabState


def test_every_experiment_file_loads_with_a_story_and_a_ci_scale():
    names = experiment_spec.known_experiments()
    assert "xfr-30k-zones" in names
    for name in names:
        spec = experiment_spec.load_spec(name)
        assert spec.description and spec.finding.id
        assert spec.path.read_text().startswith("#"), f"{name}: top comment tells the story"
        assert "ci" in spec.scales, f"{name} needs a SCALE=ci variant"
        experiment.procedure(spec)  # the procedure it names exists


def test_unknown_experiment_lists_known_ones():
    with pytest.raises(LabError) as exc:
        experiment_spec.load_spec("nope")
    assert "xfr-30k-zones" in (exc.value.hint or "")


def test_overrides_are_typed_by_their_defaults():
    spec = experiment_spec.load_spec("xfr-30k-zones")
    params = experiment_spec.resolve_params(
        spec, {"ZONES": "10000", "SECONDARY": "knot", "PROFILE": "default,wide-ports"}, None)
    assert params["zones"] == 10000
    assert params["secondary"] == "knot"
    assert params["profiles"] == ["default", "wide-ports"]


def test_scale_then_command_line():
    spec = experiment_spec.load_spec("xfr-30k-zones")
    params = experiment_spec.resolve_params(spec, {"ZONES": "500"}, "ci")
    assert params["zones"] == 500
    assert params["failure_at_s"] == spec.scales["ci"]["failure_at_s"]


@pytest.mark.parametrize("overrides, message", [
    ({"ZONEZ": "1"}, "no parameter 'ZONEZ'"),
    ({"ZONES": "many"}, "ZONES=many: must be an integer from 1 to 1000000"),
])
def test_bad_overrides_get_one_clear_error(overrides, message):
    spec = experiment_spec.load_spec("xfr-30k-zones")
    with pytest.raises(LabError, match=message):
        experiment_spec.resolve_params(spec, overrides, None)


def test_unknown_scale_is_refused():
    spec = experiment_spec.load_spec("xfr-30k-zones")
    with pytest.raises(LabError, match="no scale"):
        experiment_spec.resolve_params(spec, {}, "huge")


def test_parse_overrides_needs_key_value():
    assert experiment_spec.parse_overrides(["A=1", "B=x=y"]) == {"A": "1", "B": "x=y"}
    with pytest.raises(LabError):
        experiment_spec.parse_overrides(["oops"])


def test_runs_get_their_own_folder_and_keep_interrupted_cells(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "RESULTS", tmp_path)
    spec = experiment_spec.load_spec("xfr-30k-zones")
    params = experiment_spec.resolve_params(spec, {}, "ci")
    first = experiment.Run(spec, params, "netns", False, ["make", "experiment"], "ci")
    second = experiment.Run(spec, params, "netns", False, ["make", "experiment"], "ci")
    assert first.path != second.path and first.path.parent == second.path.parent
    with pytest.raises(KeyboardInterrupt):
        with first.cell("profile=default", {"profile": "default"}) as cell:
            cell.figures["partial"] = 1
            raise KeyboardInterrupt
    first.finish(complete=False)
    meta = results.read_meta(first.path)
    assert meta["complete"] is False and meta["ended"]
    assert meta["cells"]["profile=default"]["status"] == "interrupted"
    assert meta["kernel"] and meta["git"] and meta["command"] == ["make", "experiment"]
    cell = results.read_cell(first.path / "cells" / "profile=default")
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
    # brought up by a process that is still alive (this one): a lab in use, never cleared
    LabState(lab="xfr", runtime="netns", topology="topologies/xfr.clab.yml",
             root=str(tmp_path / "labs" / "xfr"), owner_pid=os.getpid()).save()
    with pytest.raises(LabError) as refused:
        experiment.run_experiment("xfr-30k-zones", ["SCALE=ci", "RUNTIME=netns"])
    assert "already up" in str(refused.value)
    assert f"state folder {tmp_path / 'labs' / 'xfr'}" in str(refused.value)
    assert "make lab down LAB=xfr" in refused.value.hint
    assert not (tmp_path / "results").exists()


def _interrupted_run(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "RESULTS", tmp_path)
    spec = experiment_spec.load_spec("xfr-30k-zones")
    params = experiment_spec.resolve_params(spec, {}, "ci")
    run = experiment.Run(spec, params, "netns", False, ["make", "experiment"], "ci")
    run.plan(2, per_cell_s=1)
    with run.cell("profile=default", {"profile": "default"}) as cell:
        cell.figures["tw_peak"] = 7
    with pytest.raises(KeyboardInterrupt):
        with run.cell("profile=wide-ports", {"profile": "wide-ports"}) as cell:
            (cell.path / "half.csv").write_text("t\n1\n")
            raise KeyboardInterrupt
    run.finish(complete=False)
    return spec, run


def test_a_resumed_run_keeps_finished_cells_and_sets_unfinished_ones_aside(tmp_path,
                                                                           monkeypatch):
    spec, first = _interrupted_run(tmp_path, monkeypatch)
    folder, params, scale = experiment_spec.resume_params(spec, first.path, {}, None)
    assert folder == first.path and params == first.params and scale == "ci"
    again = experiment.Run(spec, params, "netns", False, ["make", "experiment"], scale,
                           resume=folder)
    assert again.run_id == first.run_id and again.path == first.path
    assert again.finished("profile=default") == {"tw_peak": 7}
    assert again.finished("profile=wide-ports") is None
    with pytest.raises(LabError, match="never run again"):
        with again.cell("profile=default", {"profile": "default"}):
            pass
    with again.cell("profile=wide-ports", {"profile": "wide-ports"}) as cell:
        cell.figures["tw_peak"] = 9
    again.finish(complete=True)
    cells = first.path / "cells"
    assert (cells / "profile=wide-ports.attempt-1" / "half.csv").exists()  # never deleted
    meta = results.read_meta(first.path)
    assert meta["complete"] is True and len(meta["resumed"]) == 1
    assert meta["resumed"][0]["git"]["commit"] and meta["resumed"][0]["kernel"]
    assert meta["cells"]["profile=wide-ports"]["attempts"] == [
        {"path": "cells/profile=wide-ports.attempt-1", "status": "interrupted"}]
    assert list(meta["cells"]) == ["profile=default", "profile=wide-ports"]
    assert meta["cells"]["profile=default"]["status"] == "complete"
    kept = results.read_cell(cells / "profile=default")
    assert kept["figures"] == {"tw_peak": 7}  # the finished cell was not touched


def test_resume_refuses_other_experiments_changed_parameters_and_finished_runs(
        tmp_path, monkeypatch):
    spec, first = _interrupted_run(tmp_path, monkeypatch)
    with pytest.raises(LabError, match="keeps its parameters"):
        experiment_spec.resume_params(spec, first.path, {"ZONES": "5"}, None)
    with pytest.raises(LabError, match="is a run of 'xfr-30k-zones'"):
        experiment_spec.resume_params(experiment_spec.load_spec("xfr-tld"), first.path, {}, None)
    with pytest.raises(LabError, match="no meta.json"):
        experiment_spec.resume_params(spec, tmp_path / "nothing", {}, None)
    first.finish(complete=True)
    with pytest.raises(LabError, match="complete"):
        experiment_spec.resume_params(spec, first.path, {}, None)


def test_the_topology_is_parsed_once_per_run_and_every_cell_gets_it(tmp_path, monkeypatch):
    from dnslab import lab as lab_engine
    from dnslab import topology
    from dnslab.runtime.netns import NetnsRuntime

    monkeypatch.setattr(paths, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(paths, "LABS_STATE", tmp_path / "labs")
    parsed = []
    real_load = topology.load
    monkeypatch.setattr(topology, "load", lambda source: parsed.append(source) or
                        real_load(source))
    brought_up = []

    def fake_up(lab, runtime, data, hold, quiet, **across_hosts):
        brought_up.append(lab)
        state = LabState(lab=lab.name, runtime=runtime, topology=str(lab.path),
                         root=str(tmp_path / "labs" / lab.name))
        return lab_engine.Lab(None, state, NetnsRuntime())

    monkeypatch.setattr(lab_engine, "up", fake_up)
    monkeypatch.setattr(lab_engine, "down", lambda lab=None: [])
    monkeypatch.setattr(lab_engine, "leftovers", lambda lab=None: [])

    def two_cells(run: experiment.Run) -> None:
        for profile in ("default", "wide-ports"):
            with run.cell(f"profile={profile}", {"profile": profile}) as cell:
                cell.up(experiment.LabData(zones=[], health_zone="."))

    monkeypatch.setattr(experiment, "procedure", lambda spec: two_cells)
    run = experiment.run_experiment("xfr-30k-zones", ["SCALE=ci", "RUNTIME=netns"])
    assert parsed == ["xfr"]
    assert brought_up == [run.topology, run.topology]
    assert isinstance(run.topology, topology.Topology) and run.topology.name == "xfr"


def test_a_warning_is_said_and_kept_in_the_runs_meta(tmp_path, monkeypatch, capsys):
    from dnslab import results

    monkeypatch.setattr(paths, "RESULTS", tmp_path)
    spec = experiment_spec.load_spec("tcp-sysctl")
    params = experiment_spec.resolve_params(spec, {}, "ci")
    run = experiment.Run(spec, params, "netns", False, ["make", "experiment"], "ci")
    run.warn("tcp-sysctl: not saturated")
    run.warn("second")
    assert "tcp-sysctl: not saturated" in capsys.readouterr().err
    assert results.read_meta(run.path)["warnings"] == ["tcp-sysctl: not saturated", "second"]


# --- the ETA each cell prints ---------------------------------------------------------------

def test_eta_of_equal_cells_is_the_mean_of_the_cells_timed_so_far():
    from dnslab.experiment import time_left

    timed = {"a": 100.0, "b": 140.0}
    assert time_left(6, 200.0, ["a", "b"], timed) == pytest.approx(4 * 120.0)


def test_eta_after_a_short_ceiling_cell_is_not_the_ceilings_pace_times_the_cells_left():
    """tcp-fallback SERVERS=bind916 (run 20261125T204012Z-54c4): a ceiling cell (560 s
    planned, 382 s real) then long stair cells (1,680 s planned each). The mean of the cells
    done said "ETA 31m51s" with 77 minutes to go; by each cell's estimate at the pace seen
    it is 83 minutes."""
    from dnslab.experiment import time_left

    def estimate(cell_id: str) -> float:
        return 560.0 if cell_id.startswith("server=ceiling") else 1680.0
    planned_mean = (2 * 560 + 4 * 1680) / 6
    ceiling = "server=ceiling,records=before"
    left = time_left(6, planned_mean, [ceiling], {ceiling: 382.0}, estimate)
    assert left == pytest.approx((4 * 1680 + 560) * 382 / 560)
    assert left > 2.5 * 5 * 382  # the old mean-of-cells-done ETA

    stair = "server=bind916,records=before,tuning=untuned"
    slow = time_left(6, planned_mean, [ceiling, stair], {ceiling: 560.0, stair: 3360.0},
                     estimate)
    assert slow == pytest.approx((3 * 1680 + 560) * (560 + 3360) / (560 + 1680))


def test_eta_of_a_resumed_run_counts_the_cells_done_before_and_times_only_this_sessions():
    from dnslab.experiment import time_left

    left = time_left(4, 100.0, ["old-1", "old-2", "new"], {"new": 50.0})
    assert left == pytest.approx(1 * 100.0 * 0.5)


def test_a_project_without_git_records_no_commit(monkeypatch, tmp_path):
    """A project unpacked from an archive onto a host without git (a fresh Debian has none):
    the run records no commit instead of failing."""
    monkeypatch.setenv("PATH", str(tmp_path))
    assert experiment._git_revision() == {"commit": None, "dirty": False}
