"""Findings are packages found by folder: the five real ones, and a sixth one in the tests'
fixtures (`tests/fixtures/f6_example/`) that the engine and the analysis pick up with no edit
anywhere else: its experiment file loads, its procedure resolves, and a run of it gets its
claims, its plot, its derive hook and its altered data."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.pipeline import analyse
from dnslab import experiment, experiment_spec, findings, paths
from dnslab.errors import LabError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture
def sixth_finding(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(findings, "ROOTS", [*findings.ROOTS, (FIXTURES, "tests.fixtures")])
    findings.refresh()
    yield findings.finding("F6")
    findings.refresh()


def test_the_five_findings_are_their_folders():
    found = {f.id: f for f in findings.all_findings()}
    assert list(found) == ["F1", "F2", "F3", "F4", "F5"]
    for finding in found.values():
        assert finding.path.parent == paths.EXPERIMENTS
        assert finding.experiments, f"{finding.id} has no experiment file"
        for name in finding.experiments:
            spec = experiment_spec.load_spec(name)
            assert spec.finding == finding
            assert spec.claims and all(c.startswith(finding.id + ".") for c in spec.claims)
            assert spec.plots, f"{name} names no plot"
    assert findings.finding_of("xfr-30k-zones-ci").id == "F3"  # a variant name
    assert findings.base_experiment("tcp-fallback-cache") == "tcp-fallback-cache"
    assert findings.finding_of("no-such-thing") is None


def test_an_unknown_experiment_is_one_line_with_the_known_ones():
    with pytest.raises(LabError) as exc:
        findings.experiment_file("xfr-30k-zone")
    assert "xfr-30k-zones" in (exc.value.hint or "")


def test_a_sixth_finding_is_one_folder(sixth_finding, tmp_path):
    assert sixth_finding.experiments == ("echo-speed",)
    spec = experiment_spec.load_spec("echo-speed")
    assert spec.finding.id == "F6" and spec.claims == ["F6.fast-echo"]
    assert experiment.procedure(spec).__name__ == "measure"

    from tests.fixtures.f6_example.fixtures import echo_run

    fast_run = echo_run(tmp_path / "fast", [0.4, 0.6, 0.5])
    fast = analyse(fast_run, update_index=False)
    assert [(v["claim_id"], v["status"]) for v in fast["verdicts"]] == [
        ("F6.fast-echo", "reproduced")]
    assert "3 cells derived" in fast["verdicts"][0]["measured"]  # the derive hook ran first
    assert fast["analysis"]["plots"] == ["report/echo_latency.png"]
    assert not fast["analysis"]["errors"]

    slow = analyse(echo_run(tmp_path / "slow", [0.4, 1.6]), update_index=False)
    assert slow["verdicts"][0]["status"] == "not_reproduced"

    from analysis.altered import alter_and_judge, alterations

    assert "F6.fast-echo" in alterations()
    assert alter_and_judge(fast_run, tmp_path / "altered") == {
        "F6.fast-echo": "not_reproduced"}  # its altered.py, with no edit to analysis/


def test_an_alteration_of_no_claim_of_its_finding_is_one_line(sixth_finding, monkeypatch):
    from analysis.altered import alterations

    module = sixth_finding.module("altered")
    assert module is not None
    monkeypatch.setitem(module.ALTERATIONS, "F6.fast-echoo", ())
    with pytest.raises(LabError) as exc:
        alterations()
    assert "F6.fast-echoo" in str(exc.value) and "F6.fast-echo" in (exc.value.hint or "")
