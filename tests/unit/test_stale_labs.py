"""What an interrupted run leaves of a lab (a reboot, a killed run or dockerd) is cleared by
the next `lab up` or experiment when nothing runs in it any more; a lab in use never is."""

from __future__ import annotations

import os
import subprocess

import pytest

import dnslab.runtime
from dnslab import lab as lab_engine
from dnslab import paths
from dnslab.runtime import clab
from dnslab.runtime.base import LabState


class FakeRuntime:
    """A runtime whose leftovers and running processes the test sets."""

    name = "netns"

    def __init__(self, left: list[str], running: list[str]) -> None:
        self.left, self.runs, self.destroyed = left, running, 0

    def leftovers(self, lab):
        return list(self.left)

    def running(self, lab):
        return list(self.runs)

    def destroy(self, lab):
        self.destroyed += 1
        removed, self.left = self.left, []
        return removed


@pytest.fixture
def fake(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "LABS_STATE", tmp_path / "labs")
    runtime = FakeRuntime(["netns dnslab-mobile-client", "netns dnslab-mobile-primary"], [])
    monkeypatch.setattr(dnslab.runtime, "all_runtimes", lambda: [runtime])
    monkeypatch.setattr(lab_engine, "runtime_for_state", lambda name: runtime)
    return runtime


def dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def save_state(tmp_path, owner_pid: int) -> LabState:
    state = LabState(lab="mobile", runtime="netns", topology="topologies/mobile.clab.yml",
                     root=str(tmp_path / "labs" / "mobile"), owner_pid=owner_pid)
    state.save()
    return state


def test_leftovers_nothing_runs_in_are_torn_down_and_said(fake, tmp_path, capsys):
    state = save_state(tmp_path, owner_pid=dead_pid())
    removed = lab_engine.clear_stale("mobile")
    assert removed == ["netns dnslab-mobile-client", "netns dnslab-mobile-primary"]
    assert fake.destroyed == 1 and not state.file.exists()
    assert "interrupted run left of lab 'mobile'" in capsys.readouterr().err
    assert lab_engine.leftovers("mobile") == []


def test_leftovers_without_a_state_file_are_cleared_too(fake):
    assert lab_engine.clear_stale("mobile") == ["netns dnslab-mobile-client",
                                                "netns dnslab-mobile-primary"]


def test_a_lab_something_still_runs_in_is_left_alone(fake, tmp_path):
    fake.runs = ["pid 4242 in netns dnslab-mobile-primary"]
    state = save_state(tmp_path, owner_pid=dead_pid())
    assert lab_engine.clear_stale("mobile") == []
    assert fake.destroyed == 0 and state.file.exists()


def test_a_lab_whose_owner_is_alive_is_left_alone_even_before_its_daemons_start(fake, tmp_path):
    state = save_state(tmp_path, owner_pid=os.getpid())
    assert lab_engine.clear_stale("mobile") == []
    assert fake.destroyed == 0 and state.file.exists()


def test_nothing_there_removes_nothing(fake):
    fake.left = []
    assert lab_engine.clear_stale("mobile") == []
    assert fake.destroyed == 0


def test_clab_reports_and_removes_netns_links_whose_container_is_gone(tmp_path, monkeypatch):
    links = tmp_path / "netns"
    links.mkdir()
    (links / "clab-mobile-client").symlink_to("/proc/999999999/ns/net")  # a dead pid
    (links / "clab-mobile-live").symlink_to(tmp_path)  # resolves: not stale
    (links / "dnslab-mobile-client").touch()
    (links / "clab-other-client").symlink_to("/proc/999999999/ns/net")
    monkeypatch.setattr(clab, "NETNS_DIR", str(links))
    assert [p.name for p in clab.dangling_netns_links("mobile")] == ["clab-mobile-client"]
    assert len(clab.dangling_netns_links(None)) == 2
    monkeypatch.setattr(paths, "LABS_STATE", tmp_path / "labs")
    monkeypatch.setattr(clab, "docker_works", lambda: False)
    monkeypatch.setattr("dnslab.sysctl.restore_host", lambda path: {})
    runtime = clab.ClabRuntime()
    assert "netns-link clab-mobile-client" in runtime.leftovers("mobile")
    assert runtime.destroy("mobile") == ["netns-link clab-mobile-client"]
    assert sorted(p.name for p in links.iterdir()) == [
        "clab-mobile-live", "clab-other-client", "dnslab-mobile-client"]


def test_a_container_that_stopped_after_deploy_is_said_with_its_logs(tmp_path, monkeypatch):
    """Not 'cannot open /proc/0/ns/net' later: the container's exit code and last log lines."""
    import json
    from types import SimpleNamespace

    from dnslab.errors import LabError
    from dnslab.runtime.base import LabState, NodeState

    node = SimpleNamespace(name="primary")
    topo = SimpleNamespace(name="tcpauth", bridge="br-tcpauth", nodes={"primary": node})
    (tmp_path / "primary").mkdir()
    rendered = SimpleNamespace(topology=topo, root=tmp_path, clab_file=tmp_path / "x.clab.yml",
                               node_dir=lambda name: tmp_path / name)
    state = LabState(lab="tcpauth", runtime="clab", topology="", root=str(tmp_path), nodes={
        "primary": NodeState(name="primary", role="primary", server="bind",
                             address="198.18.0.11", netns="", log="")})
    monkeypatch.setattr(clab, "node_visible_roots", lambda: [])
    monkeypatch.setattr(clab, "containerlab_binary", lambda: "containerlab")
    monkeypatch.setattr(clab.subprocess, "run", lambda *a, **kw: SimpleNamespace(
        returncode=0, stdout="", stderr=""))

    def docker(*args, check=True, host=None):
        if args[0] == "inspect":
            return SimpleNamespace(stdout=json.dumps([{"Name": "/clab-tcpauth-primary", "State": {
                "Running": False, "Pid": 0, "ExitCode": 3}}]), stderr="")
        return SimpleNamespace(stdout="", stderr="run.sh: /work/x/named.conf: not found\n")

    monkeypatch.setattr(clab, "_docker", docker)
    with pytest.raises(LabError) as stopped:
        clab.ClabRuntime().create(rendered, state, set())
    assert "clab-tcpauth-primary stopped right after" in stopped.value.message
    assert "exit code 3" in stopped.value.message
    assert "named.conf: not found" in stopped.value.detail
    assert "docker logs clab-tcpauth-primary" in stopped.value.hint


def test_the_build_and_results_folders_are_their_real_paths(tmp_path):
    """A symlinked build/ (a worktree sharing another's) once left configs naming the link,
    which no container could see: the folders are resolved once, where they are defined."""
    import os
    import subprocess
    import sys

    real = tmp_path / "real-build"
    real.mkdir()
    (tmp_path / "linked").symlink_to(real)
    out = subprocess.run([sys.executable, "-c", "from dnslab import paths; "
                          "print(paths.BUILD); print(paths.LABS_STATE)"],
                         env={**os.environ, "DNSLAB_BUILD": str(tmp_path / "linked")},
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == [str(real), str(real / "labs")]


def test_a_netns_only_setup_removes_clab_leftovers_without_containerlab(tmp_path, monkeypatch):
    """A fresh lab clears what a clab lab of that name left; with no containerlab installed
    or built (a netns-only setup) that is docker's work, not a FileNotFoundError."""
    from types import SimpleNamespace

    deployed = tmp_path / "tcpauth.clab.yml"
    deployed.write_text("name: tcpauth\n")
    ran: list[list[str]] = []
    host = SimpleNamespace(local=True, name="", run=lambda argv, check=True: ran.append(argv),
                           call=lambda verb, **kw: {})
    removed_by_docker: list[tuple[str, ...]] = []
    monkeypatch.setattr(clab, "part_file", lambda lab, part="": deployed)
    monkeypatch.setattr(clab, "_engine_answers", lambda host: True)
    monkeypatch.setattr(clab, "containerlab_binary", lambda: None)
    monkeypatch.setattr(clab, "_part_leftovers",
                        lambda host, lab, part: [("container", "clab-tcpauth-primary")])
    monkeypatch.setattr(clab, "_dangling_links", lambda host, prefix: [])
    monkeypatch.setattr(clab, "_docker", lambda *args, check=True, host=None:
                        removed_by_docker.append(args))
    removed = clab.ClabRuntime._destroy_part(host, "tcpauth", "", None)
    assert ran == []
    assert removed_by_docker == [("rm", "-f", "clab-tcpauth-primary")]
    assert removed == ["container clab-tcpauth-primary"]
    monkeypatch.setattr(clab, "containerlab_binary", lambda: "/usr/bin/containerlab")
    clab.ClabRuntime._destroy_part(host, "tcpauth", "", None)
    assert ran == [["/usr/bin/containerlab", "destroy", "-t", str(deployed), "--cleanup"]]
