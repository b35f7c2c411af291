"""Shared by the integration tests: the runtimes they run on (each test that takes `runtime`
runs on netns and on clab, unless it names fewer), a results folder of their own, the
figures of every cell of a finished run (read through the results contract), and the run's
analysis, checked against the run's own data."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from analysis import run_analysis
from analysis.rundata import load_run
from dnslab import experiment, paths

RUNTIMES = ["netns", "clab"]


@pytest.fixture(scope="session")
def clab_ready() -> None:
    """Make the clab runtime usable as CI must, by itself: containerlab built (make
    containerlab), a Docker engine answering (scripts/start-dockerd.sh, stopped by .ci/run)
    and the node images built. Fails, never skips, when that does not work: both runtimes
    are part of the suite."""
    from dnslab.runtime import clab_unusable_reason

    for script in ("build-containerlab.sh", "start-dockerd.sh", "build-images.sh"):
        proc = subprocess.run([str(paths.REPO / "scripts" / script)], capture_output=True,
                              text=True, timeout=1800)
        if proc.returncode != 0:
            pytest.fail(f"scripts/{script} failed:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    reason = clab_unusable_reason()
    if reason is not None:
        pytest.fail(f"the clab runtime cannot run here: {reason}")


@pytest.fixture(params=RUNTIMES)
def runtime(request) -> str:
    """The runtime a test runs on: each such test runs once per runtime."""
    if request.param == "clab":
        request.getfixturevalue("clab_ready")
    return request.param


_RUNS: dict[tuple[str, tuple[str, ...]], experiment.Run] = {}


def run_once(name: str, args: list[str]) -> experiment.Run:
    """Run an experiment, or return the run this session already made with the same
    arguments (the parity test compares the runs the per-runtime tests made)."""
    key = (name, tuple(args))
    if key not in _RUNS:
        _RUNS[key] = experiment.run_experiment(name, list(args))
    return _RUNS[key]


def verdict_statuses(run: experiment.Run) -> dict[str, str]:
    """The verdicts of a run, analysing it first when nothing has yet (the runner does not)."""
    path = run.path / "summary.json"
    summary = json.loads(path.read_text()) if path.exists() else analysed(run)
    return {v["claim_id"]: v["status"] for v in summary["verdicts"]}


@pytest.fixture
def results(tmp_path, monkeypatch):
    """Runs of this test go to a temporary results folder, never the user's results/."""
    monkeypatch.setattr(paths, "RESULTS", tmp_path)
    return tmp_path


def cell_figures(run: experiment.Run) -> dict[str, dict]:
    """cell id -> figures of a run that completed with every cell complete."""
    loaded = load_run(run.path)
    assert loaded.complete is True
    for cell in loaded.cells:
        assert cell.status == "complete", cell.id
    return {cell.id: cell.figures for cell in loaded.cells}


def analysed(run: experiment.Run) -> dict[str, Any]:
    """Analyse a real run folder and check what a speaker relies on: claims were judged on
    this run's data (no data errors; every judged verdict says what it measured, every
    not-applicable one why), and the report shows, per cell and node, the sysctls read back."""
    summary = run_analysis(run.path, update_index=False)
    assert summary["analysis"]["errors"] == [], summary["analysis"]["errors"]
    assert summary["verdicts"], "no claim covers this experiment"
    for v in summary["verdicts"]:
        assert v["status"] != "error", v
        if v["status"] in ("reproduced", "not_reproduced"):
            assert v["measured"], v
        else:
            assert v["detail"], v
    loaded = load_run(run.path)
    html = (run.path / "report" / "report.html").read_text()
    assert "Sysctls requested and read back" in html
    for cell in loaded.cells:
        if "sysctls" not in loaded.meta["cells"][cell.id]:
            continue  # a cell that brought no lab up (a model, a simulation)
        read_back = loaded.sysctls_for(cell.id)
        assert any(read_back.values()), f"cell {cell.id}: no sysctls read back"
        for node, keys in loaded.sysctls_requested_for(cell.id).items():
            for key in keys:
                assert key in read_back.get(node, {}), f"{cell.id}/{node}: {key} not read back"
                assert key in html
    return summary
