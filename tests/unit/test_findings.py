"""Findings are packages found by folder: every folder of `experiments/` with a finding.yaml,
and an example one in the tests' fixtures (`tests/fixtures/example_finding/`, id X1, outside
the real findings' F<N>) that the engine and the analysis pick up with no edit anywhere else:
its experiment file loads, its procedure resolves, and a run of it gets its claims, its plot,
its derive hook and its altered data."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from analysis.pipeline import analyse
from dnslab import experiment, experiment_spec, findings, paths
from dnslab.errors import LabError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture
def example_finding(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(findings, "ROOTS", [*findings.ROOTS, (FIXTURES, "tests.fixtures")])
    findings.refresh()
    yield findings.finding("X1")
    findings.refresh()


def manifests_in(folder: Path) -> dict[str, Path]:
    """{id: folder} of every finding.yaml one level below `folder`, read as plain YAML."""
    return {str(yaml.safe_load(m.read_text())["id"]): m.parent
            for m in sorted(folder.glob(f"*/{findings.MANIFEST}"))}


def test_the_findings_are_their_folders():
    found = {f.id: f for f in findings.all_findings()}
    folders = manifests_in(paths.EXPERIMENTS)
    assert folders, "experiments/ holds no finding.yaml"
    assert {i: f.path for i, f in found.items()} == folders
    assert list(found) == sorted(found)  # by id
    for finding in found.values():
        assert re.fullmatch(r"F\d+", finding.id), f"{finding.path}: id {finding.id!r} is not F<N>"
        assert finding.path.parent == paths.EXPERIMENTS
        assert finding.experiments, f"{finding.id} has no experiment file"
        for name in finding.experiments:
            spec = experiment_spec.load_spec(name)
            assert spec.finding == finding
            assert spec.claims and all(c.startswith(finding.id + ".") for c in spec.claims)
            assert spec.plots, f"{name} names no plot"
            assert findings.finding_of(f"{name}-ci") == finding  # a variant name
            assert findings.base_experiment(name) == name
    assert findings.finding_of("no-such-thing") is None


def test_an_experiment_named_after_another_is_not_its_variant(tmp_path, monkeypatch):
    for folder, stem in (("a_load", "load"), ("b_cache", "load-cache")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / findings.MANIFEST).write_text(
            f"id: Z{folder[0]}\ntitle: t\nseed: '0'\nsource: s\n")
        (tmp_path / folder / f"{stem}.yaml").write_text("params: {}\n")
    monkeypatch.setattr(findings, "ROOTS", [(tmp_path, "nowhere")])
    findings.refresh()
    try:
        assert findings.base_experiment("load-cache") == "load-cache"
        assert findings.finding_of("load-cache").id == "Zb"
        assert findings.finding_of("load-cache-ci").id == "Zb"
        assert findings.finding_of("load-ci").id == "Za"
    finally:
        monkeypatch.undo()
        findings.refresh()


def test_an_unknown_experiment_is_one_line_with_the_known_ones():
    known = findings.known_experiments()[0]
    with pytest.raises(LabError) as exc:
        findings.experiment_file(known[:-1])
    assert known in (exc.value.hint or "")


def test_the_example_finding_is_outside_the_real_ids() -> None:
    """A real finding's next id (F6, F7, ...) never collides with the tests' example."""
    example = manifests_in(FIXTURES)
    assert list(example) == ["X1"]
    assert not set(example) & set(manifests_in(paths.EXPERIMENTS))


def test_another_finding_is_one_folder(example_finding, tmp_path):
    assert example_finding.experiments == ("echo-speed",)
    spec = experiment_spec.load_spec("echo-speed")
    assert spec.finding.id == "X1" and spec.claims == ["X1.fast-echo"]
    assert experiment.procedure(spec).__name__ == "measure"

    from tests.fixtures.example_finding.fixtures import echo_run

    fast_run = echo_run(tmp_path / "fast", [0.4, 0.6, 0.5])
    fast = analyse(fast_run, update_index=False)
    assert [(v["claim_id"], v["status"]) for v in fast["verdicts"]] == [
        ("X1.fast-echo", "reproduced")]
    assert "3 cells derived" in fast["verdicts"][0]["measured"]  # the derive hook ran first
    assert fast["analysis"]["plots"] == ["report/echo_latency.png"]
    assert not fast["analysis"]["errors"]

    slow = analyse(echo_run(tmp_path / "slow", [0.4, 1.6]), update_index=False)
    assert slow["verdicts"][0]["status"] == "not_reproduced"

    from analysis.altered import alter_and_judge, alterations

    assert "X1.fast-echo" in alterations()
    assert alter_and_judge(fast_run, tmp_path / "altered") == {
        "X1.fast-echo": "not_reproduced"}  # its altered.py, with no edit to analysis/


def test_an_alteration_of_no_claim_of_its_finding_is_one_line(example_finding, monkeypatch):
    from analysis.altered import alterations

    module = example_finding.module("altered")
    assert module is not None
    monkeypatch.setitem(module.ALTERATIONS, "X1.fast-echoo", ())
    with pytest.raises(LabError) as exc:
        alterations()
    assert "X1.fast-echoo" in str(exc.value) and "X1.fast-echo" in (exc.value.hint or "")
