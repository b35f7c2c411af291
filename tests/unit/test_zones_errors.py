"""Bad input fails with one clear line (library: LabError; CLI: one `error:` line, status 2)."""

from __future__ import annotations

from pathlib import Path

import pytest

import zones
from dnslab.errors import LabError
from zones import cli, common


@pytest.mark.parametrize(
    ("generator", "params", "needle"),
    [
        ("small-zones", {"count": -1}, "count"),
        ("small-zones", {"count": 0}, "count"),
        ("small-zones", {"count": "many"}, "integer"),
        ("tld", {"records": -5}, "records"),
        ("3gpp", {"mcc": "44"}, "mcc"),
        ("3gpp", {"mnc": "01a"}, "mnc"),
        ("3gpp", {"profile": "during"}, "profile"),
        ("3gpp", {"capabilities": "nr,6g"}, "capability"),
        ("3gpp", {"tacs": -2}, "tacs"),
        ("internet", {"root_servers": ["8.8.8.8"]}, "outside lab"),
        ("internet", {"slds": 10, "names": 1000}, "names"),
        ("small-zones", {"colour": "red"}, "unknown parameter"),
        ("nonsense", {}, "unknown zone generator"),
    ],
)
def test_bad_parameters_raise_lab_error(generator: str, params: dict, needle: str,
                                        tmp_path: Path) -> None:
    with pytest.raises(LabError) as info:
        zones.ensure(generator, params, 1, out_root=tmp_path)
    line = info.value.one_line()
    assert needle in line and "\n" not in line
    assert not any(tmp_path.iterdir()), "nothing may be written for bad input"


def test_negative_seed_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(LabError, match="seed"):
        zones.ensure("small-zones", {"count": 5}, -1, out_root=tmp_path)


def test_size_too_large_for_the_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class Usage:
        total, used, free = 10**9, 10**9 - 10**6, 10**6  # 1 MB free

    monkeypatch.setattr(common.shutil, "disk_usage", lambda _p: Usage)
    with pytest.raises(LabError, match="MB are free"):
        zones.ensure("tld", {"records": 1_000_000}, 1, out_root=tmp_path)
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["small", "--count", "-3"], "count must be between"),
        (["3gpp", "--mcc", "4400"], "mcc must be exactly 3 digits"),
        (["3gpp", "--profile", "sideways"], "unknown 3gpp profile"),
        (["tld", "--records", "-1"], "records must be between"),
        (["internet", "--root-servers", "10.0.0.1"], "outside lab"),
        (["queries", "mobile", "--truncating", "1.5"], "truncating"),
        (["small", "--count", "ten"], "error:"),
    ],
)
def test_cli_prints_one_error_line(argv: list[str], needle: str, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    rc = cli.main([*argv, "--out-root", str(tmp_path)])
    err = capsys.readouterr().err.strip()
    assert rc == 2
    assert err.startswith("error:") and needle in err
    assert len(err.splitlines()) == 1


def test_cli_generates_and_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = cli.main(["small", "--count", "12", "--seed", "4", "--out-root", str(tmp_path)])
    assert rc == 0
    out = capsys.readouterr().out
    assert "small-zones-n12-s4" in out and "zones=12" in out
    assert len(list((tmp_path / "small-zones-n12-s4" / "zones").glob("*.zone"))) == 12
