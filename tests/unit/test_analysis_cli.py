"""`python -m analysis run|runs|compare` and the SQLite run index."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from analysis import index, run_analysis
from dnslab.results import run_dirs
from tests.fixtures.runs import build_standard

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def results(tmp_path: Path) -> Path:
    return build_standard(tmp_path / "results")


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "analysis", *args], capture_output=True,
                          text=True, cwd=REPO, timeout=300)


def test_run_on_missing_folder_prints_one_line(tmp_path: Path) -> None:
    proc = cli("run", str(tmp_path / "nope"))
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: no run folder")
    assert "Traceback" not in proc.stderr


def test_run_with_missing_data_file_exits_1_without_traceback(results: Path) -> None:
    proc = cli("run", "--no-index", str(results / "xfr-30k-zones" / "20250103T000000Z-missing"))
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines and all(line.startswith("error: ") for line in lines)
    assert any("monitor/sec.csv" in line for line in lines)
    assert "report:" in proc.stdout


def test_index_lists_runs_with_verdicts(results: Path) -> None:
    run_analysis(results / "xfr-30k-zones" / "20250101T000000Z-good")
    index.update(results)
    rows = {r["path"]: r for r in index.list_runs(results)}
    assert len(rows) == len(run_dirs(results))
    good = rows["xfr-30k-zones/20250101T000000Z-good"]
    # the seed's exact range and XoT: neither in the synthetic run (no such cells); of the
    # seven that held, three are reproductions and four checks of the lab, counted apart
    assert [v["status"] for v in good["verdicts"]].count("reproduced") == 7
    assert [v["kind"] for v in good["verdicts"] if v["status"] == "reproduced"].count(
        "reproduction") == 3
    assert [label for label, _, _ in index.verdict_counts(good["verdicts"])][:1] == [
        "3 reproduced"]
    assert "4 lab checks hold" in [label for label, _, _ in
                                   index.verdict_counts(good["verdicts"])]
    assert rows["xfr-30k-zones/20250104T000000Z-interrupted"]["complete"] == 0
    # a deleted run disappears on rebuild
    shutil.rmtree(results / "xfr-tld")
    index.update(results)
    with sqlite3.connect(results / "index.sqlite") as con:
        paths = [p for (p,) in con.execute("SELECT path FROM runs")]
    assert not any(p.startswith("xfr-tld/") for p in paths)
    proc = cli("runs", "--results", str(results), "--experiment", "xfr-30k-zones")
    assert proc.returncode == 0, proc.stderr
    table = proc.stdout.split("census of")[0]
    assert "3 reproduced" in table and "4 lab checks hold" in table
    assert "7 reproduced" not in table
    # the census: every claim and check judged, or not applicable for a setting (no cell ran
    # the seed's range, no TLS cells), per finding
    census = index.census(good["verdicts"])
    assert census["F3"]["judged"] == 7 and census["F3"]["setting"] == 2
    assert census["F3"]["machine"] == 0
    assert index.census_text(census["F3"]) == ("7 judged (7 reproduced or holding); not "
                                               "applicable: 2 setting")
    assert "F3: 7 judged (7 reproduced or holding); not applicable: 2 setting" in " ".join(
        proc.stdout.split())


def test_the_census_counts_judged_and_each_cause_of_not_applicable() -> None:
    verdicts = [{"finding": "F2", "status": "not_applicable", "cause": "machine"},
                {"finding": "F2", "status": "reproduced"},
                {"finding": "F3", "status": "inconclusive"},
                {"finding": "F3", "status": "not_reproduced"},
                {"finding": "F3", "status": "not_applicable", "cause": "setting"},
                {"finding": "F3", "status": "not_applicable"},  # a summary without causes
                {"claim_id": "F6.tcp-cost", "status": "error"}]
    counted = index.census(verdicts)
    assert index.census_text(counted["F2"]) == ("1 judged (1 reproduced or holding); not "
                                                "applicable: 1 machine")
    assert index.census_text(counted["F3"]) == (
        "2 judged (1 not reproduced or failing, 1 inconclusive); not applicable: "
        "1 setting, 1 unclassified")
    assert index.census_text(counted["F6"]) == "0 judged; 1 incomplete or in error"


def test_an_index_from_before_the_kind_column_is_rebuilt(results: Path) -> None:
    """The index is a cache: one written without `verdicts.kind` is dropped and rebuilt from
    the run folders, not an error."""
    with sqlite3.connect(results / "index.sqlite") as con:
        con.executescript("CREATE TABLE verdicts (path TEXT, claim_id TEXT, finding TEXT, "
                          "title TEXT, status TEXT, published TEXT, measured TEXT, "
                          "tolerance TEXT, detail TEXT, PRIMARY KEY (path, claim_id));")
    con.close()
    run_analysis(results / "xfr-30k-zones" / "20250101T000000Z-good")
    index.update(results)
    rows = {r["path"]: r for r in index.list_runs(results)}
    kinds = {v["kind"] for v in rows["xfr-30k-zones/20250101T000000Z-good"]["verdicts"]}
    assert kinds == {"reproduction", "calibration", "lab_check"}


def test_compare_draws_side_by_side(results: Path, tmp_path: Path) -> None:
    a, b = "xfr-30k-zones/20250101T000000Z-good", "xfr-30k-zones/20250102T000000Z-noexhaust"
    run_analysis(results / a)
    run_analysis(results / b)
    proc = cli("compare", "--results", str(results), a, b, "--out", str(tmp_path / "cmp"))
    assert proc.returncode == 0, proc.stderr
    folder = Path(proc.stdout.strip())
    assert folder == tmp_path / "cmp"
    assert {p.name for p in folder.glob("*.png")} == {
        "time_wait.png", "zones_served.png", "connect_failures.png"}
    md = (folder / "compare.md").read_text()
    assert "| F3.default.connect-failures | reproduced:" in md
    assert "not_applicable: precondition unmet" in md
    assert "| the runs |" in md and "same verdict" in md
    proc = cli("compare", "--results", str(results), a, "xfr-tld/20250105T000000Z-tld")
    assert proc.returncode == 2 and proc.stderr.startswith("error: no plot applies")


def test_two_runs_agree_when_no_verdict_flips() -> None:
    from analysis.compare import agreement

    def v(status: str, low: float | None = None, high: float | None = None) -> dict:
        return {"status": status, "intervals": [] if low is None else [
            {"what": "XoT/TCP", "low": low, "high": high}]}

    assert agreement([v("reproduced"), v("reproduced")]) == "same verdict"
    assert agreement([v("reproduced"), v("not_reproduced")]) == "FLIP"
    assert agreement([v("inconclusive", 0.87, 1.37), v("not_reproduced", 1.10, 1.30)]) == (
        "no flip, intervals overlap")
    assert agreement([v("inconclusive", 0.87, 1.05), v("not_reproduced", 1.10, 1.30)]) == (
        "no flip, intervals apart")
    assert agreement([v("reproduced"), v("not_applicable")]) == "differs"


def _v(claim: str, status: str, cause: str | None = None,
       unmet: str = "absent") -> dict[str, str]:
    return {"claim_id": claim, "finding": claim.split(".")[0], "status": status,
            **({"cause": cause, "unmet": unmet} if cause else {})}


def test_each_claims_latest_evidence_is_the_newest_full_run_that_judged_it() -> None:
    """A run of three profiles cannot undo what an earlier run of three others judged: where
    the newest full run says "not applicable", the newest full run that judged the claim
    speaks for it; a SCALE=ci run never does, and a claim no full run judged keeps its
    "not applicable"."""
    runs = [  # oldest first
        ("tcp-sysctl", True, "tcp-sysctl/1-old", [_v("F5.tso", "not_reproduced"),
                                                  _v("F5.sack", "reproduced"),
                                                  _v("F5.lost", "not_applicable", "setting")]),
        ("tcp-sysctl", False, "tcp-sysctl/2-ci", [_v("F5.lost", "reproduced"),
                                                  _v("F5.sack", "not_reproduced")]),
        ("tcp-sysctl", True, "tcp-sysctl/3-new", [_v("F5.tso", "not_applicable", "setting"),
                                                  _v("F5.sack", "inconclusive"),
                                                  _v("F5.lost", "not_applicable", "setting")]),
        ("tcp-sysctl", False, "tcp-sysctl/4-ci", [_v("F5.tso", "reproduced")]),
        ("xfr-tld", False, "xfr-tld/1-ci", [_v("F3.tld", "reproduced")]),
    ]
    got = {(v["claim_id"], v["status"], label) for v, label in index.latest_evidence(runs)}
    assert got == {("F5.tso", "not_reproduced", "tcp-sysctl/1-old"),
                   ("F5.sack", "inconclusive", "tcp-sysctl/3-new"),
                   ("F5.lost", "not_applicable", "tcp-sysctl/3-new"),
                   ("F3.tld", "reproduced", "xfr-tld/1-ci")}
    counted = index.census(v for v, _ in index.latest_evidence(runs))
    assert index.census_text(counted["F5"]) == (
        "2 judged (1 not reproduced or failing, 1 inconclusive); not applicable: 1 setting")
    # an older rule never speaks for the current one; an error stays an error
    changed = [("b", True, "b/1", [_v("F1.x", "reproduced"), _v("F1.y", "reproduced")]),
               ("b", True, "b/2", [{**_v("F1.x", "not_applicable", "setting"),
                                    "tolerance": "a new band"}, _v("F1.y", "error")])]
    assert [(v["status"], label) for v, label in index.latest_evidence(changed)] == [
        ("not_applicable", "b/2"), ("error", "b/2")]
    # a precondition the newest run measured unmet (a failed calibration, a busy machine)
    # is its own evidence: an older judged verdict does not replace it
    measured = [("c", True, "c/1", [_v("F4.w", "not_reproduced")]),
                ("c", True, "c/2", [_v("F4.w", "not_applicable", "setting", "measured")])]
    assert [(v["status"], label) for v, label in index.latest_evidence(measured)] == [
        ("not_applicable", "c/2")]
    # with no full run the newest at any scale speaks, older ones not at all
    only_ci = [("a", False, "a/1", [_v("F1.x", "reproduced")]),
               ("a", False, "a/2", [_v("F1.x", "not_applicable", "setting")])]
    assert [(v["status"], label) for v, label in index.latest_evidence(only_ci)] == [
        ("not_applicable", "a/2")]


def test_make_runs_names_a_probe_and_counts_the_run_on_the_files_settings(
        tmp_path: Path) -> None:
    """A full-scale tcp-sysctl run on the file's settings, then a probe of QUERIES_PER_CONN=1:
    the census counts the first run's verdicts and the listing names the probe with what it
    changed."""
    from dnslab.experiment_spec import load_spec, resolve_params
    from experiments.f5_tcp_sysctl import fixtures as f5_fx

    spec = load_spec("tcp-sysctl")
    own = resolve_params(spec, {}, None)
    root = tmp_path / "results"
    for run_id, params in (("20250101T000000Z-0own", own),
                           ("20250102T000000Z-0probe", {**own, "queries_per_conn": 1})):
        folder = f5_fx.tcp_sysctl_run(root, gain={"tso-win-divisor-1": 0.85}, run_id=run_id,
                                      meta={"scale": "full", "params": params})
        shutil.copy(spec.path, folder / spec.path.name)  # as every run keeps its file
        run_analysis(folder, update_index=False)
    # the probe's own report says so, the other's does not
    reports = {f.name: (f / "report" / "summary.md").read_text()
               for f in run_dirs(root, "tcp-sysctl")}
    assert ("**A probe of other settings**: QUERIES_PER_CONN=1 (the file's 100); "
            in reports["20250102T000000Z-0probe"])
    assert "probe" not in reports["20250101T000000Z-0own"]
    proc = cli("runs", "--results", str(root))
    assert proc.returncode == 0, proc.stderr
    said = " ".join(proc.stdout.split())
    assert "(runs 20250101T000000Z-0own)" in said, said
    assert ("probe (settings changed, not only what runs; counted only where its experiment "
            "has no full run on its file's settings): tcp-sysctl/20250102T000000Z-0probe "
            "(QUERIES_PER_CONN=1 (the file's 100))") in said, said
