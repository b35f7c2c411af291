"""The campaign without a lab: the runner is replaced by one that writes synthetic run folders,
so the plan, the ETA, the state file and resuming after an interruption are tested as they
are."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from types import SimpleNamespace

import pytest

from analysis.synthetic import CellData, write_run
from dnslab import campaign
from dnslab.errors import LabError


def plan_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "campaign.yaml"
    path.write_text(text)
    return path


PLAN = """steps:
  - {experiment: xfr-smallest, minutes: 2}
  - {experiment: tcp-sysctl, overrides: {PROFILES: "default,diiner", LOADS: "150"}, minutes: 70}
  - {experiment: resolver-cache, minutes: 18}
"""


class FakeRunner:
    """Writes a complete run per call (or raises KeyboardInterrupt on the named one, after
    its runner made an incomplete folder, as a Ctrl-C would)."""

    def __init__(self, root: Path, interrupt: str | None = None):
        self.root, self.interrupt, self.calls = root, interrupt, []

    def __call__(self, name: str, args: list[str]) -> SimpleNamespace:
        self.calls.append((name, list(args)))
        if name == self.interrupt:
            self.interrupt = None
            write_run(self.root, name, [CellData({"x": 1}, finished=False)], complete=False,
                      run_id="29990101T000000Z-intr",
                      started=dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds"))
            raise KeyboardInterrupt
        path = write_run(self.root, name, [CellData({"x": 1}, {"v": 1})])
        return SimpleNamespace(path=path)


def test_plan_eta_state_and_book(tmp_path: Path) -> None:
    said: list[str] = []
    runner = FakeRunner(tmp_path)
    ended: list[campaign.Campaign] = []
    done = campaign.run_campaign(runner, root=tmp_path, plan=plan_file(tmp_path, PLAN),
                                 say=said.append, at_end=ended.append)
    assert said[0].startswith(f"campaign {done.dir} (full scale): 3 of 3 experiments")
    assert "about 1 h 30 min" in said[0]  # 2 + 70 + 18 minutes from the plan
    assert any("PROFILES=default,diiner LOADS=150" in line for line in said)
    assert [c[0] for c in runner.calls] == ["xfr-smallest", "tcp-sysctl", "resolver-cache"]
    assert runner.calls[1][1] == ["PROFILES=default,diiner", "LOADS=150"]
    assert [s["status"] for s in done.state["steps"]] == ["complete"] * 3
    assert ended == [done] and len(done.runs()) == 3
    again = campaign.Campaign.reopen(done.dir)
    assert again.state == done.state


def test_ci_scale_drops_the_full_scale_overrides(tmp_path: Path) -> None:
    runner = FakeRunner(tmp_path)
    said: list[str] = []
    campaign.run_campaign(runner, root=tmp_path, scale="ci", runtime="netns",
                          plan=plan_file(tmp_path, PLAN), say=said.append)
    assert runner.calls[1] == ("tcp-sysctl", ["SCALE=ci", "RUNTIME=netns"])
    # the first campaign's runs are at scale ci here too: the second ETA is timed by them
    assert "about 6 min" in said[0]


def test_an_interrupted_campaign_resumes_where_it_stopped(tmp_path: Path) -> None:
    runner = FakeRunner(tmp_path, interrupt="tcp-sysctl")
    plan = plan_file(tmp_path, PLAN)
    with pytest.raises(KeyboardInterrupt):
        campaign.run_campaign(runner, root=tmp_path, plan=plan, say=lambda _: None)
    folder = next((tmp_path / "campaign").iterdir())
    state = campaign.Campaign.reopen(folder).state
    assert [s["status"] for s in state["steps"]] == ["complete", "running", "pending"]

    runner.calls.clear()
    said: list[str] = []
    done = campaign.run_campaign(runner, root=tmp_path, resume=folder, plan=plan,
                                 say=said.append)
    assert "2 of 3 experiments" in said[0]
    name, args = runner.calls[0]
    assert name == "tcp-sysctl" and args == [
        f"RESUME={tmp_path / 'tcp-sysctl' / '29990101T000000Z-intr'}"]
    assert [c[0] for c in runner.calls] == ["tcp-sysctl", "resolver-cache"]
    assert [s["status"] for s in done.state["steps"]] == ["complete"] * 3


def test_a_plan_step_that_is_no_experiment_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(LabError) as exc:
        campaign.load_plan(plan_file(tmp_path, "steps:\n  - {experiment: xfr-30k-zone}\n"))
    assert "xfr-30k-zones" in (exc.value.hint or "")
    with pytest.raises(LabError):
        campaign.Campaign.reopen(tmp_path / "nowhere")


def test_a_plan_step_whose_override_breaks_a_rule_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(LabError) as refused:
        campaign.load_plan(plan_file(tmp_path, "steps:\n  - {experiment: tcp-sysctl, "
                                                "overrides: {LOADS: '150,0'}}\n"))
    assert refused.value.message.endswith("step tcp-sysctl: LOADS=150,0: must be one or more "
                                          "(comma separated) integers >= 1 (0 is not)")


def test_the_repository_plan_covers_every_experiment() -> None:
    from dnslab import findings

    steps = campaign.load_plan()
    assert {s.experiment for s in steps} == set(findings.known_experiments())
    assert all(s.minutes > 0 for s in steps)


def test_plan_only_prints_the_plan_and_runs_nothing(tmp_path: Path) -> None:
    runner = FakeRunner(tmp_path)
    said: list[str] = []
    assert campaign.run_campaign(runner, root=tmp_path, plan=plan_file(tmp_path, PLAN),
                                 say=said.append, plan_only=True) is None
    assert said[0] == "plan (full scale): 3 experiments, about 1 h 30 min"
    assert not runner.calls and not (tmp_path / "campaign").exists()
