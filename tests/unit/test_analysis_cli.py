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
    assert "3 reproduced" in proc.stdout and "4 lab checks hold" in proc.stdout
    assert "7 reproduced" not in proc.stdout


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
    proc = cli("compare", "--results", str(results), a, "xfr-tld/20250105T000000Z-tld")
    assert proc.returncode == 2 and proc.stderr.startswith("error: no plot applies")
