"""The analysis reads runs only through the results contract the runner writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analysis.rundata import load_run
from dnslab.errors import LabError
from dnslab.results import SCHEMA_VERSION, RunWriter
from tests.fixtures.runs import build_standard


def test_fixture_runs_carry_the_schema_version_and_read_back(tmp_path: Path) -> None:
    root = build_standard(tmp_path)
    metas = sorted(root.glob("*/*/meta.json"))
    assert len(metas) == 11
    for meta in metas:
        data = json.loads(meta.read_text())
        assert data["schema_version"] == SCHEMA_VERSION
        run = load_run(meta.parent)
        assert run.cells, meta
        for cell in run.cells:
            assert cell.dir.is_dir()


def test_unknown_schema_version_is_refused_with_one_line(tmp_path: Path) -> None:
    run_dir = build_standard(tmp_path) / "xfr-30k-zones" / "20250101T000000Z-good"
    meta = json.loads((run_dir / "meta.json").read_text())
    meta["schema_version"] = SCHEMA_VERSION + 1
    (run_dir / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(LabError) as info:
        load_run(run_dir)
    line = info.value.one_line()
    assert "\n" not in line and f"schema_version {SCHEMA_VERSION + 1}" in line
    assert "hint:" in line


def test_schema_1_runs_written_before_the_contract_still_read(tmp_path: Path) -> None:
    """The runner's layout before the contract: no schema_version, no sysctls_requested."""
    run_dir = build_standard(tmp_path) / "xfr-30k-zones" / "20250101T000000Z-good"
    meta = json.loads((run_dir / "meta.json").read_text())
    del meta["schema_version"]
    for cell in meta["cells"].values():
        del cell["sysctls_requested"]
    (run_dir / "meta.json").write_text(json.dumps(meta))
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
