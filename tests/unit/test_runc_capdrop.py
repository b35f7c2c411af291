"""scripts/runc-capdrop: the capabilities a short bounding set lacks leave the OCI spec, nothing
else changes, and runc gets the arguments unchanged."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "runc-capdrop"


@pytest.fixture
def capdrop():
    loader = importlib.machinery.SourceFileLoader("runc_capdrop", str(SCRIPT))
    spec = importlib.util.spec_from_loader("runc_capdrop", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def status_file(tmp_path: Path, cap_bnd: str) -> str:
    path = tmp_path / "status"
    path.write_text(f"Name:\tx\nCapInh:\t0000000000000000\nCapBnd:\t{cap_bnd}\n")
    return str(path)


def test_the_missing_bits_name_the_capabilities(capdrop, tmp_path):
    # the CI host's bounding set: every capability but CAP_SYS_RESOURCE (bit 24)
    assert capdrop.missing_capabilities(status_file(tmp_path, "000001fffeffffff")) == {
        "CAP_SYS_RESOURCE"}
    assert capdrop.missing_capabilities(status_file(tmp_path, "000001ffffffffff")) == set()


def privileged_process() -> dict:
    caps = ["CAP_CHOWN", "CAP_SYS_RESOURCE", "CAP_NET_ADMIN"]
    return {"args": ["sh"], "capabilities": {k: list(caps) for k in (
        "bounding", "effective", "inheritable", "permitted", "ambient")}}


def test_create_strips_the_bundle_config_and_execs_runc(capdrop, tmp_path, monkeypatch):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    config = {"ociVersion": "1.0.2", "process": privileged_process(), "hostname": "n"}
    (bundle / "config.json").write_text(json.dumps(config))
    monkeypatch.setattr(capdrop, "missing_capabilities", lambda: {"CAP_SYS_RESOURCE"})
    calls = []
    monkeypatch.setattr(capdrop.os, "execv", lambda path, argv: calls.append(argv))
    argv = ["runc", "--root", "/run/x", "create", "--bundle", str(bundle), "cid"]
    capdrop.main(argv)
    assert calls == [[capdrop.RUNC, *argv[1:]]]
    written = json.loads((bundle / "config.json").read_text())
    for names in written["process"]["capabilities"].values():
        assert names == ["CAP_CHOWN", "CAP_NET_ADMIN"]
    assert written["hostname"] == "n" and written["process"]["args"] == ["sh"]


def test_exec_strips_the_process_spec(capdrop, tmp_path, monkeypatch):
    process = tmp_path / "process.json"
    process.write_text(json.dumps(privileged_process()))
    monkeypatch.setattr(capdrop, "missing_capabilities", lambda: {"CAP_SYS_RESOURCE"})
    monkeypatch.setattr(capdrop.os, "execv", lambda path, argv: None)
    capdrop.main(["runc", "exec", "--process", str(process), "--detach", "cid"])
    written = json.loads(process.read_text())
    assert "CAP_SYS_RESOURCE" not in written["capabilities"]["effective"]


def test_a_full_bounding_set_changes_nothing(capdrop, tmp_path, monkeypatch):
    bundle = tmp_path
    text = json.dumps({"process": privileged_process()})
    (bundle / "config.json").write_text(text)
    monkeypatch.setattr(capdrop, "missing_capabilities", lambda: set())
    monkeypatch.setattr(capdrop.os, "execv", lambda path, argv: None)
    capdrop.main(["runc", "create", "-b", str(bundle), "cid"])
    assert (bundle / "config.json").read_text() == text
