"""An experiment file of one's own (README "Your own question"): `EXP=<path>` names a file
outside every finding's package that names a shared procedure (experiments/procedures/),
takes that procedure's defaults, has no claims, and is refused in one line when it would be
mistaken for a finding's experiment; its runs get the plots it names, drawn and read."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from analysis.pipeline import analyse
from dnslab import paths
from dnslab.errors import LabError
from dnslab.experiment_spec import load_spec, resolve_params
from experiments.procedures.fixtures import compare_run

OWN = """description: two servers
topology: reference
procedure: compare.servers_by_transport
params: {servers: [nsd, knot]}
"""


def own_file(tmp_path: Path, text: str = OWN, name: str = "mine-compare.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_a_file_of_ones_own_takes_the_procedures_defaults_and_its_own_values(tmp_path):
    spec = load_spec(own_file(tmp_path))
    assert spec.finding is None and spec.claims == []
    assert spec.name == "mine-compare"
    assert spec.procedure_module == "experiments.procedures.compare"
    assert spec.params["servers"] == ["nsd", "knot"]
    assert spec.params["transports"] == ["udp", "tcp"]  # the procedure's default
    assert spec.plots == ["compare_qps", "compare_latency"]
    assert resolve_params(spec, {"REPETITIONS": "5"}, "ci")["repetitions"] == 5
    assert resolve_params(spec, {}, "ci")["duration_s"] == 2


@pytest.mark.parametrize(("text", "name", "said"), [
    (OWN, "tcp-sysctl.yaml", "is taken by a finding's experiment"),
    (OWN, "tcp-sysctl-mine.yaml", "is taken by a finding's experiment"),
    (OWN + "claims: [F5.tcp-sack]\n", "mine.yaml", "claims: F5.tcp-sack in a file of your own"),
    (OWN.replace("servers:", "serverz:"), "mine.yaml", "serverz is no parameter"),
    (OWN.replace("compare.", "nosuch."), "mine.yaml", "is no shared procedure"),
    (OWN.replace("topology: reference\n", ""), "mine.yaml", "missing topology"),
    ("[a, b]\n", "mine.yaml", "an experiment file is a mapping"),
])
def test_a_file_that_cannot_be_run_is_one_line_before_any_work(tmp_path, text, name, said):
    with pytest.raises(LabError) as caught:
        load_spec(own_file(tmp_path, text, name))
    assert said in caught.value.message and caught.value.hint
    assert "\n" not in caught.value.message


def test_a_path_that_is_no_file_says_what_exp_may_be(tmp_path):
    with pytest.raises(LabError, match="no experiment file") as caught:
        load_spec(str(tmp_path / "nothere.yaml"))
    assert "EXP=" in caught.value.hint


def test_a_topology_file_beside_the_experiment_file_is_found(tmp_path):
    (tmp_path / "mine.clab.yml").write_text("name: mine\n")
    spec = load_spec(own_file(tmp_path, OWN.replace("reference", "mine.clab.yml")))
    assert spec.topology == str(tmp_path / "mine.clab.yml")


def test_the_readmes_experiment_file_runs_its_lab_with_the_shared_procedure(tmp_path):
    section = (paths.REPO / "README.md").read_text().split("## Your own question", 1)[1] \
        .split("\n## ", 1)[0]
    blocks = re.findall(r"```yaml\n(.*?)```", section, re.S)
    topology_text = next(b for b in blocks if b.startswith("name: mine"))
    experiment_text = next(b for b in blocks if "procedure:" in b)
    (tmp_path / "mine.clab.yml").write_text(topology_text)
    spec = load_spec(own_file(tmp_path, experiment_text))
    assert spec.topology == str(tmp_path / "mine.clab.yml")
    assert spec.params["servers"] == ["nsd", "knot", "bind"]
    assert "EXP=mine-compare.yaml" in section


def test_a_run_gets_its_plots_and_no_verdicts_and_says_which_server_hit_the_ceiling(tmp_path):
    run = compare_run(tmp_path, {"nsd": {"udp": 47_000, "tcp": 30_000},
                                 "knot": {"udp": 74_000, "tcp": 33_000}},
                      ceiling={"udp": 77_000, "tcp": 92_000})
    summary = analyse(run, update_index=False)
    assert summary["verdicts"] == []
    assert "report/compare_latency.png" in summary["analysis"]["plots"]
    report = (run / "report" / "report.html").read_text().replace("&#39;", "'")
    said = json.dumps(summary) + report
    assert "knot over udp: 74,000 qps" in said and "generator-limited" in said
    assert "nsd over udp: 47,000 qps (median of 3), 60% of dnsperf's ceiling 78,540" in said
    assert "nsd over udp: 47,000 qps (median of 3), 60% of dnsperf's ceiling 78,540:" \
        not in said


def test_a_run_without_the_ceiling_says_its_figures_may_be_dnsperfs(tmp_path):
    run = compare_run(tmp_path, {"nsd": {"udp": 47_000, "tcp": 30_000}}, ceiling=None)
    summary = analyse(run, update_index=False)
    assert any("no generator ceiling in this run" in e for e in summary["analysis"]["errors"])
    assert "report/compare_qps.png" in summary["analysis"]["plots"]


def test_a_server_run_above_the_ceiling_says_the_ceiling_is_a_lower_bound(tmp_path):
    """The README's run 98dc on a busy machine: one NSD run at 94k, dnsperf's best at 77k."""
    run = compare_run(tmp_path, {"nsd": {"udp": 90_000, "tcp": 30_000}},
                      ceiling={"udp": 77_000, "tcp": 92_000})
    summary = analyse(run, update_index=False)
    report = (run / "report" / "report.html").read_text().replace("&#39;", "'")
    assert "beat the ceiling" in report and "lower bound" in report
    assert report.count("beat the ceiling") == 1  # TCP stayed under its ceiling
    assert summary["analysis"]["errors"] == []

