"""Shared by the experiment integration tests: a results folder of their own, and the figures
of every cell of a finished run."""

from __future__ import annotations

import json

import pytest

from dnslab import experiment, paths


@pytest.fixture
def results(tmp_path, monkeypatch):
    """Runs of this test go to a temporary results folder, never the user's results/."""
    monkeypatch.setattr(paths, "RESULTS", tmp_path)
    return tmp_path


def cell_figures(run: experiment.Run) -> dict[str, dict]:
    """cell id -> figures of a run that completed with every cell complete."""
    summary = json.loads((run.path / "summary.json").read_text())
    assert summary["complete"] is True
    for cell in summary["cells"].values():
        assert cell["status"] == "complete"
    return {cid: cell["figures"] for cid, cell in summary["cells"].items()}
