"""The README's experiment file of one's own ("Your own question") runs end to end on both
runtimes, as a user types it: its topology file beside it, `EXP=<path>`, SCALE=ci. Every
server it names and dnsperf's ceiling answer over UDP and TCP (losing at most 0.1 %), and
the run's report draws the plots the file names and says which dnsperf ran (one that
receives answers over 16 KiB: from the tools image on clab, on netns the host's or, on
Debian 12, the root file system's).

Run under the machine-wide lock: `flock /tmp/dnslab-labs.lock pytest -m integration
tests/integration/test_own_experiment.py`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from analysis import run_analysis
from analysis.rundata import load_run
from dnslab import paths
from dnslab.runtime.rootfs import version_at_least
from dnslab.servers.manifest import manifest
from tests.integration.conftest import run_once
from tests.integration.test_lab_netns import nothing_left

pytestmark = pytest.mark.integration


def readme_files(folder: Path) -> Path:
    """The section's topology and experiment files, written beside each other."""
    section = (paths.REPO / "README.md").read_text().split("## Your own question", 1)[1] \
        .split("\n## ", 1)[0]
    blocks = re.findall(r"```yaml\n(.*?)```", section, re.S)
    (folder / "mine.clab.yml").write_text(next(b for b in blocks if b.startswith("name: mine")))
    experiment = folder / "mine-compare.yaml"
    experiment.write_text(next(b for b in blocks if "procedure:" in b))
    return experiment


def test_the_readmes_own_experiment_runs_and_draws_its_plots(runtime, results, tmp_path):
    experiment = readme_files(tmp_path)
    run = run_once(str(experiment), ["SCALE=ci", f"RUNTIME={runtime}"])
    loaded = load_run(run.path)
    assert loaded.complete and loaded.meta["findings"] == []
    assert (run.path / "mine-compare.yaml").is_file()
    servers = ["nsd", "knot", "bind"]
    cells = {c.params["server"]: c for c in loaded.cells}
    assert list(cells) == [*servers, "ceiling"]
    for name, cell in cells.items():
        assert cell.status == "complete", name
        for transport in ("udp", "tcp"):
            assert cell.figures[f"qps_{transport}"] > 500, (name, transport, cell.figures)
            # closed loop at saturation: UDP may drop a few in a socket buffer, never many
            answered = cell.figures[f"qps_{transport}"] * loaded.params["duration_s"]
            assert cell.figures[f"lost_{transport}"] <= 0.001 * answered, (name, transport)
    # what else the machine ran, each second: the report says how busy it was
    header = (cells["nsd"].dir / "monitor" / "cores.csv").read_text().splitlines()[0]
    assert header.endswith(",other_pct"), header
    summary = run_analysis(run.path, update_index=False)
    assert summary["analysis"]["errors"] == [], summary["analysis"]["errors"]
    assert summary["verdicts"] == []
    assert summary["analysis"]["plots"] == ["report/compare_qps.png",
                                            "report/compare_latency.png"], summary["analysis"]
    report = (run.path / "report" / "report.html").read_text()
    assert "of a core on average" in report
    dnsperf = loaded.meta["generators"]["dnsperf"]
    assert version_at_least(dnsperf["version"], "2.13.1") and dnsperf["node"] == "client"
    suite = manifest("tools").image.suite
    assert dnsperf["runs_from"].startswith("image dnslab/tools:") if runtime == "clab" else \
        dnsperf["runs_from"] == "host package" or \
        dnsperf["runs_from"].startswith(f"{suite} root file system (")
    assert f"{dnsperf['version']} (node client, {dnsperf['runs_from']})" in report
    nothing_left("mine")


def test_the_readmes_version_question_compares_bind_918_and_920_over_dot(runtime, results,
                                                                        tmp_path):
    """README: "BIND 9.18 vs 9.20 over UDP, TCP and DoT, one core each" is the same file with
    SERVERS=bind@9.18,bind@9.20 TRANSPORTS=udp,tcp,dot: the run adds a bind@9.20 node beside
    `bind` (netns: from a Debian 13 root file system; clab: its image), each answers over
    every transport, dnsperf's ceiling too, and the run records which BIND each node ran."""
    section = (paths.REPO / "README.md").read_text().split("## Your own question", 1)[1]
    assert "SERVERS=bind@9.18,bind@9.20 TRANSPORTS=udp,tcp,dot" in section
    experiment = readme_files(tmp_path)
    run = run_once(str(experiment), ["SCALE=ci", f"RUNTIME={runtime}",
                                     "SERVERS=bind@9.18,bind@9.20", "TRANSPORTS=udp,tcp,dot"])
    loaded = load_run(run.path)
    assert loaded.complete
    cells = {c.params["server"]: c for c in loaded.cells}
    assert list(cells) == ["bind@9.18", "bind@9.20", "ceiling"]
    assert (cells["bind@9.18"].params["node"], cells["bind@9.20"].params["node"]) == (
        "bind", "bind920")
    for name, cell in cells.items():
        for transport in ("udp", "tcp", "dot"):
            assert cell.figures[f"qps_{transport}"] > 100, (name, transport, cell.figures)
    ran = loaded.meta["node_versions"]
    assert ran["bind"]["runs"] == "bind@9.18" and ran["bind920"]["runs"] == "bind@9.20"
    assert ran["bind920"]["version"] == manifest("bind").versions["9.20"].version
    summary = run_analysis(run.path, update_index=False)
    assert summary["analysis"]["errors"] == [], summary["analysis"]["errors"]
    nothing_left("mine")
