"""Altered data: real run folders with each claim's effect removed or reversed in the raw files
the procedures wrote (each finding's `altered.py`, run by `analysis.altered`), analysed again:
nothing may stay "reproduced".

The runs: every run this pytest session made (`conftest.run_once`; an xfr-30k-zones SCALE=ci
run on netns is made if the session has none, and later tests reuse it), or the run folders
under DNSLAB_ALTERED_RUNS (a run folder or a results tree, e.g. a campaign's) when set.

    flock /tmp/dnslab-labs.lock .venv/bin/pytest -q -m integration \
        tests/integration/test_altered_data.py
    DNSLAB_ALTERED_RUNS=results/xfr-30k-zones .venv/bin/pytest -q -m integration \
        tests/integration/test_altered_data.py
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from analysis.altered import alter_and_judge, alterations
from analysis.claim import REPRODUCED
from analysis.verdicts import experiment_claims
from dnslab import results as results_contract
from tests.integration import conftest

pytestmark = pytest.mark.integration


def run_folders(results: Path) -> list[Path]:
    """The run folders to alter: DNSLAB_ALTERED_RUNS's, else this session's runs."""
    given = os.environ.get("DNSLAB_ALTERED_RUNS")
    if given:
        root = Path(given)  # a run folder, an experiment's folder or a results tree
        folders = ([root] if results_contract.is_run(root)
                   else results_contract.run_dirs(root) or results_contract.run_dirs(
                       root.parent, root.name))
        if not folders:
            pytest.fail(f"DNSLAB_ALTERED_RUNS={given}: no run folder under it")
        return folders
    if not any(key[0] == "xfr-30k-zones" for key in conftest._RUNS):
        conftest.run_once("xfr-30k-zones", ["SCALE=ci", "RUNTIME=netns"])
    return [run.path for run in conftest._RUNS.values()]


def test_no_claim_stays_reproduced_once_its_effect_is_gone(results: Path,
                                                          tmp_path: Path) -> None:
    altered_any = False
    table = alterations()
    for folder in run_folders(results):
        meta = results_contract.read_meta(folder)
        if not meta.get("complete") or not any(
                c in table for c in experiment_claims(str(meta.get("experiment")))):
            continue
        statuses = alter_and_judge(folder, tmp_path / folder.name)
        altered_any = altered_any or bool(statuses)
        stayed = {c: s for c, s in statuses.items() if s == REPRODUCED}
        assert not stayed, f"{folder}: still reproduced with the effect removed: {stayed}"
    assert altered_any, "no run with claims to alter"
