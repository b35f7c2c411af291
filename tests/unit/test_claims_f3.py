"""F3: what the run really set is said where a reader looks - meta.json's profile description
(the runner) and the verdicts' conditions (the analysis, from the cells' read-back sysctls,
so runs from before the runner said it are described correctly too)."""

from __future__ import annotations

from pathlib import Path

from analysis.rundata import load_run
from analysis.verdicts import evaluate
from dnslab import experiment, experiment_spec, paths, results
from experiments.f3_xfr import fixtures as f3_fx

RANGE_KEY = "net.ipv4.ip_local_port_range"


def test_profile_description_says_what_the_experiment_set(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(paths, "RESULTS", tmp_path)
    spec = experiment_spec.load_spec("xfr-30k-zones")
    run = experiment.Run(spec, experiment_spec.resolve_params(spec, {}, "ci"), "netns", False,
                         ["make", "experiment"], "ci")
    run.profile("default")
    run.profile_extended("default", "sec-bind", {RANGE_KEY: "32768 60999"})
    run.profile_extended("default", "sec-bind", {RANGE_KEY: "20000 37004"})
    run.profile("default")  # each cell loads the profile again: what was set stays said
    run.profile_extended("default", "sec-bind", {RANGE_KEY: "20000 37004"})
    run.profile_extended("wide-ports", "sec-bind", {})
    meta = results.read_meta(run.path)
    default = meta["profiles"]["default"]
    assert default["description"] == (
        "kernel defaults (nothing set), except what the experiment set: "
        f"{RANGE_KEY} = 32768 60999 / 20000 37004 on sec-bind")
    assert default["set_by_experiment"] == {"sec-bind": {RANGE_KEY: ["32768 60999",
                                                                      "20000 37004"]}}
    assert default["profile_description"] == "kernel defaults (nothing set)"
    assert "set_by_experiment" not in meta["profiles"].get("wide-ports", {})


def test_an_old_run_is_described_by_its_read_back_range(tmp_path: Path) -> None:
    """A run written before meta.json said what it set (no port_range_choice, the profile
    'nothing set'): the range read back on the secondary still reaches the verdict."""
    cells = [f3_fx.xfr_cell("default", 17005, zones=150, rate=10.0, seed=1)]
    run_dir = f3_fx.xfr_30k(tmp_path, cells)
    verdicts, errors = evaluate(load_run(run_dir))
    assert errors == []
    conditions = {v["claim_id"]: v["conditions"] for v in verdicts}
    assert any(c.startswith("range scaled to 17,005 ports for ")
               for c in conditions["F3.default.tw-ceiling"]), conditions
    # the seed's own range is no change
    seed_dir = f3_fx.xfr_30k(tmp_path / "seed", [f3_fx.xfr_cell("default", 28232, zones=150)])
    verdicts, _ = evaluate(load_run(seed_dir))
    assert not any("range scaled" in c for v in verdicts for c in v["conditions"])


def test_report_describes_each_profile_as_run_from_what_was_read_back(tmp_path: Path) -> None:
    from analysis.report import _profiles_as_run

    cell = f3_fx.xfr_cell("default", 17005, zones=150)
    cell.sysctls["sec"]["net.ipv6.conf.all.disable_ipv6"] = "1"
    cell.sysctls["pri"]["net.ipv6.conf.all.disable_ipv6"] = "1"
    run_dir = f3_fx.xfr_30k(tmp_path, [cell])
    results.RunWriter(dir=run_dir, meta=results.read_meta(run_dir)).merge("profiles", {
        "default": {"description": "kernel defaults (nothing set)", "sysctls": {}},
        "unused": {"description": "not run", "sysctls": {}}})
    described = dict(_profiles_as_run(load_run(run_dir)))
    assert described["profile default as run"] == (
        "kernel defaults (nothing set), plus (read back): net.ipv4.ip_local_port_range = "
        "32769 60999 on pri; net.ipv4.ip_local_port_range = 43995 60999 on sec")
    # set alike on every node (tcp_max_tw_buckets, disable_ipv6 here): the lab's baseline
    assert described["profile unused as run"] == "not run"
