"""The analysis reads runs only through the results contract the runner writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.rundata import load_run
from dnslab import results
from dnslab.errors import LabError
from dnslab.results import SCHEMA_VERSION, RunWriter
from tests.fixtures.runs import build_standard


def test_fixture_runs_carry_the_schema_version_and_read_back(tmp_path: Path) -> None:
    root = build_standard(tmp_path)
    run_dirs = results.run_dirs(root)
    assert len(run_dirs) == 11
    for run_dir in run_dirs:
        assert results.read_meta(run_dir)["schema_version"] == SCHEMA_VERSION
        run = load_run(run_dir)
        assert run.cells, run_dir
        for cell in run.cells:
            assert cell.dir.is_dir()


def test_unknown_schema_version_is_refused_with_one_line(tmp_path: Path) -> None:
    run_dir = build_standard(tmp_path) / "xfr-30k-zones" / "20250101T000000Z-good"
    RunWriter(run_dir, results.read_meta(run_dir)).record("schema_version", SCHEMA_VERSION + 1)
    with pytest.raises(LabError) as info:
        load_run(run_dir)
    line = info.value.one_line()
    assert "\n" not in line and f"schema_version {SCHEMA_VERSION + 1}" in line
    assert "hint:" in line


def test_schema_1_runs_written_before_the_contract_still_read(tmp_path: Path) -> None:
    """The runner's layout before the contract: no schema_version, no sysctls_requested."""
    run_dir = build_standard(tmp_path) / "xfr-30k-zones" / "20250101T000000Z-good"
    writer = RunWriter(run_dir, results.read_meta(run_dir))
    del writer.meta["schema_version"]
    for cell in writer.meta["cells"].values():
        del cell["sysctls_requested"]
    writer.save_meta()
    run = load_run(run_dir)
    cell = run.cells[0]
    assert run.sysctls_requested_for(cell.id) == {}
    assert cell.sysctl("sec", "net.ipv4.ip_local_port_range") == "60900 60999"


def test_writer_never_overwrites_a_run(tmp_path: Path) -> None:
    RunWriter.create(tmp_path, "x", "20250101T000000Z-0001", {})
    with pytest.raises(LabError) as info:
        RunWriter.create(tmp_path, "x", "20250101T000000Z-0001", {})
    assert "never overwritten" in info.value.one_line()


def test_sysctls_requested_and_read_back_are_kept_per_cell_and_node(tmp_path: Path) -> None:
    writer = RunWriter.create(tmp_path, "x", "r1", {"params": {}})
    writer.start_cell("profile=a", {"profile": "a"}, "t0")
    writer.record_sysctls("profile=a", read_back={"n1": {"net.core.somaxconn": "4096"}},
                          requested={"n1": {"net.core.somaxconn": "65535"}})
    writer.write_cell("profile=a", {"qps": 1}, "complete")
    run = load_run(writer.dir)
    assert run.sysctls_for("profile=a") == {"n1": {"net.core.somaxconn": "4096"}}
    assert run.sysctls_requested_for("profile=a") == {"n1": {"net.core.somaxconn": "65535"}}


def test_the_writers_field_methods_save_and_the_readers_find_runs_and_cells(
        tmp_path: Path) -> None:
    writer = RunWriter.create(tmp_path, "exp", "20250101T000000Z-aaaa", {"params": {}})
    writer.start_cell("profile=default", {"profile": "default"}, started="t0")
    writer.record("runtime", "netns")
    writer.merge("images", {"a": "dnslab/a:1"})
    writer.merge("images", {"b": "dnslab/b:2"})
    writer.append("warnings", "first")
    writer.record_cell("profile=default", "wan", {"sec": {"delay_ms": 5}})
    writer.write_cell("profile=default", {"qps": 1}, "complete")
    (writer.dir / "cells" / "unfinished").mkdir()
    meta = results.read_meta(writer.dir)
    assert meta["runtime"] == "netns" and meta["warnings"] == ["first"]
    assert meta["images"] == {"a": "dnslab/a:1", "b": "dnslab/b:2"}
    assert meta["cells"]["profile=default"]["wan"] == {"sec": {"delay_ms": 5}}
    assert results.run_dirs(tmp_path) == results.run_dirs(tmp_path, "exp") == [writer.dir]
    assert results.run_dirs(tmp_path, "other") == [] and results.is_run(writer.dir)
    assert [c["figures"] for c in results.iter_cells(writer.dir)] == [{"qps": 1}]
    RunWriter(writer.dir, meta).record("schema_version", SCHEMA_VERSION + 1)
    assert results.peek_meta(writer.dir)["runtime"] == "netns"
    assert results.peek_meta(tmp_path) == {} and not results.is_run(tmp_path)
