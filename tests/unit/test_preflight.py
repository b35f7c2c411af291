"""The netns runtime's preflight: missing packages and AppArmor get an exact fix, not a crash;
and its process checks survive a process that exits under them."""

from __future__ import annotations

import shutil

import pytest

from dnslab import render, topology
from dnslab.errors import LabError
from dnslab.runtime import netns


def test_missing_packages_name_the_debian_packages(monkeypatch):
    present = {"named", "dig", "kdig", "resperf"}
    monkeypatch.setattr(shutil, "which", lambda name: f"/usr/bin/{name}" if name in present
                        else None)
    assert netns.missing_packages({"bind", "knot", "tools"}) == ["dnsperf", "knot"]


def test_preflight_prints_the_apt_command(monkeypatch, tmp_path):
    topo = topology.load("reference")
    rendered = render.render(topo, render.reference_data(topo, tmp_path), tmp_path)
    monkeypatch.setattr(netns.os, "geteuid", lambda: 0)
    monkeypatch.setattr(netns, "missing_packages", lambda servers: ["knot", "nsd"])
    with pytest.raises(LabError) as exc:
        netns.NetnsRuntime().preflight(rendered)
    assert "apt-get install -y --no-install-recommends knot nsd" in exc.value.hint


def test_not_root_is_told_to_use_sudo(monkeypatch, tmp_path):
    topo = topology.load("reference")
    rendered = render.render(topo, render.reference_data(topo, tmp_path), tmp_path)
    monkeypatch.setattr(netns.os, "geteuid", lambda: 1000)
    with pytest.raises(LabError, match="needs root") as exc:
        netns.NetnsRuntime().preflight(rendered)
    assert "sudo" in exc.value.hint


def test_apparmor_enforce_mode_is_detected(tmp_path):
    profiles = tmp_path / "profiles"
    profiles.write_text("/usr/sbin/named (enforce)\n/usr/sbin/unbound (complain)\n"
                        "/usr/sbin/nsd (enforce)\n")
    found = netns.apparmor_enforced(["named", "unbound", "nsd", "knotd"], profiles)
    assert {p.rsplit("/", 1)[-1] for p in found} == {"named", "nsd"}


def test_apparmor_absent_means_nothing_confined(tmp_path):
    assert netns.apparmor_enforced(["named"], tmp_path / "missing") == []


def test_apparmor_error_gives_the_aa_complain_command(monkeypatch, tmp_path):
    topo = topology.load("reference")
    rendered = render.render(topo, render.reference_data(topo, tmp_path), tmp_path)
    monkeypatch.setattr(netns.os, "geteuid", lambda: 0)
    monkeypatch.setattr(netns, "missing_packages", lambda servers: [])
    monkeypatch.setattr(netns, "apparmor_enforced", lambda binaries: ["/usr/sbin/named"])
    with pytest.raises(LabError, match="AppArmor confines /usr/sbin/named") as exc:
        netns.NetnsRuntime().preflight(rendered)
    assert "sudo aa-complain /usr/sbin/named" in exc.value.hint


def test_a_process_that_exits_while_its_stat_is_read_is_gone(monkeypatch):
    def exited(*args, **kwargs):
        raise ProcessLookupError(3, "No such process")  # what reading a dead pid's stat gives

    monkeypatch.setattr("builtins.open", exited)
    assert netns.pid_alive(4242) is False
