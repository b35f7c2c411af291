"""Hosts across which a lab runs, emulated on this machine (dnslab.emulate, no Docker): a host
that does not answer (its sshd's replies dropped, as a firewall that drops SYNs does) is one
line within 10 s, before anything is done on any host or a run folder exists; and `lab down`
across hosts returns only once every host's daemons (zombies too) and namespaces are gone,
saying so per host."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from dnslab import lab as lab_engine
from dnslab.emulate import emulated_hosts, host_namespace
from dnslab.hosts import load_inventory
from tests.integration.test_across_hosts import on_host

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
DNSLAB = [sys.executable, "-m", "dnslab.cli"]
SILENT_WITHIN_S = 10


@pytest.fixture(scope="module")
def hosts_file(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Two emulated hosts without Docker engines (the netns runtime needs none)."""
    with emulated_hosts(tmp_path_factory.mktemp("hosts"),
                        private=[tmp_path_factory.mktemp("results")]) as path:
        yield path


@pytest.fixture
def b_silent(hosts_file: Path) -> Iterator[None]:
    """Host b drops every packet sent to its sshd: a connection attempt meets silence."""
    rule = ["-p", "tcp", "--dport", "22", "-j", "DROP"]
    netns = ["ip", "netns", "exec", host_namespace("b"), "iptables-legacy", "-w"]
    subprocess.run([*netns, "-I", "INPUT", *rule], check=True)
    try:
        yield
    finally:
        subprocess.run([*netns, "-D", "INPUT", *rule], check=True)


@pytest.mark.parametrize("command", [
    ["experiment", "run", "tcp-sysctl", "SCALE=ci"],
    ["lab", "up", "--lab", "reference", "--runtime", "netns"],
], ids=["make experiment", "make lab up"])
def test_a_host_that_does_not_answer_is_one_line_within_seconds(
        hosts_file: Path, b_silent: None, tmp_path: Path, command: list[str]) -> None:
    env = {**os.environ, "DNSLAB_RESULTS": str(tmp_path / "results"), "HOSTS": str(hosts_file)}
    started = time.monotonic()
    proc = subprocess.run([*DNSLAB, *command], capture_output=True, text=True, env=env,
                          cwd=REPO, timeout=120)
    took = time.monotonic() - started
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: host 'b' "), proc.stderr
    assert "host 'a'" not in lines[0], "host a answers"
    assert took < SILENT_WITHIN_S, f"said after {took:.1f} s"
    if command[0] == "experiment":
        assert not (tmp_path / "results").exists(), "no run folder"
    assert lab_engine.leftovers("reference") == [] and lab_engine.leftovers("tcpauth") == []


def test_lab_down_across_hosts_returns_once_every_daemon_is_gone(
        hosts_file: Path) -> None:
    inventory = load_inventory(hosts_file)
    lab = lab_engine.up("reference", runtime="netns", inventory=inventory, quiet=True)
    daemons = {name: node.pid for name, node in lab.state.nodes.items() if node.pid}
    assert len(daemons) >= 5
    proc = subprocess.run([*DNSLAB, "lab", "down", "--lab", "reference"], capture_output=True,
                          text=True, env={**os.environ, "HOSTS": str(hosts_file)}, cwd=REPO,
                          timeout=120)
    # at once: no daemon of the lab is left on this machine's process table, not even one
    # that has died and waits to be reaped (the emulated hosts share it)
    left = [f"{name} {pid}" for name, pid in daemons.items() if Path(f"/proc/{pid}").exists()]
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert left == []
    lines = (proc.stdout + proc.stderr).splitlines()
    for host in ("a", "b"):
        line = next(x for x in lines if x.startswith(f"host {host}: "))
        assert line.endswith("; nothing of the lab is left"), line
        assert int(line.split("removed ")[1].split(" ")[0]) > 0, line
    for host in ("a", "b"):
        assert "dnslab-reference-" not in on_host(inventory, host, "ip netns list")
