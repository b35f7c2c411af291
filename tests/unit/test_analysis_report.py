"""run_analysis end to end: summary.json verdicts, plots, HTML/Markdown report, real browser."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from analysis import run_analysis
from dnslab.results import run_dirs
from tests.fixtures.runs import build_standard


@pytest.fixture
def results(tmp_path: Path) -> Path:
    return build_standard(tmp_path / "results")


def test_run_analysis_writes_summary_plots_and_report(results: Path) -> None:
    run = results / "xfr-30k-zones" / "20250101T000000Z-good"
    summary = run_analysis(run)
    on_disk = json.loads((run / "summary.json").read_text())
    assert on_disk["verdicts"] == summary["verdicts"]
    assert len(summary["verdicts"]) == 9
    assert set(summary["verdicts"][0]) >= {"claim_id", "finding", "title", "status", "line",
                                           "conditions", "published", "measured",
                                           "tolerance", "detail"}
    assert summary["cells"]["profile=default"]["figures"]["zones"] == 150
    assert summary["schema_version"] == 2
    for name in ("time_wait", "zones_served", "connect_failures"):
        assert (run / "report" / f"{name}.png").stat().st_size > 10_000
        assert "<svg" in (run / "report" / f"{name}.svg").read_text()
    html = (run / "report" / "report.html").read_text()
    assert html.count('<tr class="verdict"') == 9
    assert html.count("data:image/png;base64,") == 3
    assert "../cells/profile%3Ddefault/xfr_events.csv" in html
    assert "net.ipv4.ip_local_port_range" in html
    md = (run / "report" / "summary.md").read_text()
    assert md.index("## Verdicts") < md.index("## Plots") < md.index("## Environment")
    assert "| ✔ reproduced | **Reproduced: " in md  # the slide line first
    assert "F3.default.connect-failures" in md
    # the census, and what a verdict rests on / what a not applicable one needs
    assert "- census F3: 7 judged (7 reproduced or holding); not applicable: 2 setting" in md
    assert "(needs a setting)" in md and "(rests on one measurement" in md
    assert "F3: 7 judged (7 reproduced or holding); not applicable: 2 setting" in html
    assert {v["cause"] for v in summary["verdicts"] if v["status"] == "not_applicable"} == {
        "setting"}
    assert (results / "index.sqlite").is_file()


def test_incomplete_run_is_flagged_in_report(results: Path) -> None:
    run = results / "xfr-30k-zones" / "20250104T000000Z-interrupted"
    summary = run_analysis(run)
    assert summary["complete"] is False
    html = (run / "report" / "report.html").read_text()
    assert 'id="incomplete"' in html
    assert "INCOMPLETE RUN" in (run / "report" / "summary.md").read_text()
    assert {v["status"] for v in summary["verdicts"]} == {"reproduced", "incomplete"}


def test_missing_file_reported_once_per_problem(results: Path) -> None:
    run = results / "xfr-30k-zones" / "20250103T000000Z-missing"
    summary = run_analysis(run)
    errors = summary["analysis"]["errors"]
    assert errors and all("\n" not in e for e in errors)
    assert any(e.startswith("plot time_wait: default: missing data file") for e in errors)
    # the other plots still exist, and the time_wait plot shows the remaining cells
    assert (run / "report" / "time_wait.png").is_file()
    assert 'id="errors"' in (run / "report" / "report.html").read_text()


def test_every_fixture_run_analyses(results: Path) -> None:
    for run_dir in run_dirs(results):
        summary = run_analysis(run_dir)
        assert summary["verdicts"], run_dir
        assert summary["analysis"]["plots"] or summary["experiment"] in (
            "tcp-fallback", "dnsdist", "resolver-cache", "tcp-sysctl"), run_dir


def test_f5_report_shows_the_generator_ceiling_beside_the_capacity(results: Path) -> None:
    run = results / "tcp-sysctl" / "20250111T000000Z-f5"
    summary = run_analysis(run)
    assert summary["cells"]["phase=ceiling"]["figures"]["ceiling_qps_l100"] == 20000
    html = (run / "report" / "report.html").read_text()
    assert "ceiling_qps_l100" in html and "phase=ceiling" in html
    assert (run / "report" / "trials_qps.png").stat().st_size > 10_000


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="needs chromium (apt-get install -y chromium)")
def test_report_renders_in_headless_chromium(results: Path, tmp_path: Path) -> None:
    run = results / "xfr-30k-zones" / "20250101T000000Z-good"
    run_analysis(run)
    url = (run / "report" / "report.html").resolve().as_uri()
    flags = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--no-first-run", f"--user-data-dir={tmp_path / 'chrome'}"]
    dom = subprocess.run([*flags, "--dump-dom", url], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert len(re.findall(r'<tr class="verdict"', dom)) == 9
    assert len(re.findall(r"<img ", dom)) == 3
    assert dom.count("✔ reproduced") == 7
    shot = tmp_path / "shot.png"
    subprocess.run([*flags, "--window-size=1280,2000", f"--screenshot={shot}", url],
                   capture_output=True, timeout=120, check=True)
    assert shot.stat().st_size > 50_000  # a rendered page, not a blank one


def test_fallback_plots_order_cells_as_the_run_did_not_alphabetically() -> None:
    from types import SimpleNamespace

    from experiments.f1_tcp_fallback.plots import _in_run_order

    # cells come back from the run folder sorted by name (records=after... first)
    cells = sorted((SimpleNamespace(params={"server": s, "records": r, "tuning": t})
                    for r in ("before", "after") for s in ("knot", "nsd")
                    for t in ("untuned", "tuned")), key=lambda c: str(c.params))
    params = {"servers": ["knot", "nsd"], "records": ["before", "after"],
              "tunings": ["untuned", "tuned"]}
    shown = [(c.params["server"], c.params["records"], c.params["tuning"])
             for c in _in_run_order(cells, params)]
    assert shown == [("knot", "before", "untuned"), ("knot", "before", "tuned"),
                     ("knot", "after", "untuned"), ("knot", "after", "tuned"),
                     ("nsd", "before", "untuned"), ("nsd", "before", "tuned"),
                     ("nsd", "after", "untuned"), ("nsd", "after", "tuned")]


def test_the_report_lists_what_the_run_chose_and_applied(tmp_path):
    from analysis.report import _chosen_in_run
    from analysis.rundata import Run

    meta = {"port_range_choice": {"bind,tcp": {"rule": "auto", "port_range": "20000 35199"}},
            "cells": {"cache=cold": {"wan": {"sld": {"backend": "nfqueue", "delay_ms": 40.0,
                                                     "readback": "-A OUTPUT -o eth1 ...",
                                                     "delayer_pid": 7}},
                                     "wan_counters": {"sld": {"dropped": 3}}},
                      "cache=warm": {}},
            "plan": {"cells": 2, "estimated_s": 60},
            "resumed": [{"at": "2026-11-23T15:00:00Z"}]}
    chosen = dict(_chosen_in_run(Run(tmp_path, meta)))
    assert chosen["port range (bind,tcp)"]["port_range"] == "20000 35199"
    assert chosen["WAN links (cache=cold)"] == {"sld": {"backend": "nfqueue", "delay_ms": 40.0,
                                                        "readback": "-A OUTPUT -o eth1 ..."}}
    assert chosen["WAN delayer counters (cache=cold)"] == {"sld": {"dropped": 3}}
    assert "WAN links (cache=warm)" not in chosen
    assert chosen["plan"]["cells"] == 2 and chosen["resumed"]["at"]


def test_sysctl_table_shows_a_profiles_rounds_once(tmp_path: Path) -> None:
    from analysis.report import _sysctl_table
    from analysis.rundata import load_run
    from tests.fixtures.runs import tcp_sysctl_run

    run = load_run(tcp_sysctl_run(tmp_path, gain={"diiner": 1.08, "tso-win-divisor-1": 0.9},
                                  trials=4, per_round=True))
    table = _sysctl_table(run)
    labels = [cell for cell, _node in table["columns"]]
    # the ceiling cell (no sysctls) shows nothing; each profile's 4 rounds are one column
    assert labels == ["profile=default,round=1 (+3 alike)", "profile=diiner,round=1 (+3 alike)",
                      "profile=tso-win-divisor-1,round=1 (+3 alike)"]
    abort = next(r for r in table["rows"] if r["key"] == "net.ipv4.tcp_abort_on_overflow")
    assert [v["value"] for v in abort["values"]] == ["0", "1", "0"] and abort["differs"]


def test_the_placement_summary_names_the_sides_the_run_placed(tmp_path: Path) -> None:
    from analysis.report import _placement
    from analysis.rundata import Run

    cells = {"secondary=bind": {"placement": {"primary": "0", "sec-bind": "1"},
                                "affinity": {"primary": "0", "sec-bind": "1"}}}
    transfer = _placement(Run(tmp_path, {"cells": cells, "placement": {
        "primary_cpus": "0", "secondary_cpus": "1", "shared": False, "host_cpus": 2}}))
    assert transfer["summary"] == ("secondary on CPU 1, the zone's primary on CPU 0 of 2 "
                                   "(disjoint)")
    assert transfer["rows"][0]["nodes"][1] == {"node": "sec-bind", "cpus": "1", "affinity": "1"}
    load = _placement(Run(tmp_path, {"cells": {}, "placement": {
        "generator_cpus": "1", "server_cpus": "0", "shared": True, "host_cpus": 2}}))
    assert load["summary"] == ("load generator on CPU 1, server under test on CPU 0 of 2 "
                               "(shared on purpose: SHARE_CORES)")


def test_the_environment_repeats_what_the_run_warned_about(tmp_path: Path) -> None:
    from analysis.report import _environment
    from analysis.rundata import Run

    said = "tcp-sysctl: at 120 % load (47,976 qps) the default profile answered 100% ..."
    items = _environment(Run(tmp_path, {"cells": {}, "warnings": [said]}))
    assert ("warning", said) in items
    assert not [k for k, _ in _environment(Run(tmp_path, {"cells": {}})) if k == "warning"]


def test_the_environment_names_the_load_generator_that_ran(tmp_path: Path) -> None:
    """dnsperf as it printed itself in the client node (a Debian 12 host's netns client runs
    Debian 13's from a root file system): the host's own 2.10 is said not to be it."""
    from analysis.report import _environment
    from analysis.rundata import Run

    meta = {"cells": {}, "versions": {"dnsperf": "2.10.0-2", "bind9": "1:9.18.49-1~deb12u3"},
            "generators": {"dnsperf": {"version": "2.14.0", "node": "client",
                                       "runs_from": "trixie root file system (debootstrap)"}}}
    items = dict(_environment(Run(tmp_path, meta)))
    assert items["load generator: dnsperf"] == \
        "2.14.0 (node client, trixie root file system (debootstrap))"
    assert items["version: dnsperf"].startswith("2.10.0-2 (the host's package, not the one")
    assert items["version: bind9"] == "1:9.18.49-1~deb12u3"
    meta["generators"]["dnsperf"]["runs_from"] = "host package"  # a Debian 13 host's own
    assert dict(_environment(Run(tmp_path, meta)))["version: dnsperf"] == "2.10.0-2"


def test_the_report_says_how_busy_the_machine_was_beside_the_lab(tmp_path: Path) -> None:
    """Run de8a's shape: its TLD transfers spread 53-87 s while ~80 % of a core ran other
    test suites; the report says so, and a quiet run says quiet."""
    from experiments.f3_xfr import fixtures as f3_fx

    def report_of(load: list[float]) -> str:
        run = f3_fx.write_xfr_run(tmp_path, "xfr-tld", f3_fx.timed_cells(
            {"bind": [22.0 + i / 10 for i in range(10)]}, other_load=load))
        run_analysis(run, update_index=False)
        return (run / "report" / "report.html").read_text()

    assert "used 77 % of a core on average (BUSY" in report_of([81.0, 85.0, 64.0] * 20)
    assert "used 5 % of a core on average (quiet)" in report_of([2.0, 9.0, 4.0] * 20)
