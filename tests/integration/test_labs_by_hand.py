"""Every lab of topologies/ comes up by hand (`dnslab lab up`, as `make lab up LAB=<lab>`
runs it) on both runtimes, and each of its servers answers a query from its client, asked
with `dnslab lab exec` naming no lab (the one lab that is up; on netns a node that runs from
a root file system, the mobile lab's BIND 9.16 and on Debian 12 the client, has it made
from its image or with debootstrap: no Docker engine is needed). And the README's worked
example ("Your own question"): the user's own topology file with cpu-set comes up with one
worker per core of each server's cpu-set, read back from the running daemons, and NSD's
response rate limiting off.

Run these under the machine-wide lock: `flock /tmp/dnslab-labs.lock pytest -m integration
tests/integration/test_labs_by_hand.py`.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from dnslab import paths, servers, topology
from dnslab.runtime.base import LabState
from tests.integration.test_lab_netns import nothing_left

pytestmark = pytest.mark.integration
DNSLAB = [sys.executable, "-m", "dnslab.cli"]
README = paths.REPO / "README.md"


def dnslab(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("LAB", "RUNTIME")}
    return subprocess.run([*DNSLAB, *args], capture_output=True, text=True, timeout=timeout,
                          env=env, cwd=paths.REPO)


def up_by_hand(lab: str, runtime: str) -> LabState:
    name = Path(lab).name.removesuffix(".clab.yml")
    dnslab("lab", "down", "--lab", name)
    proc = dnslab("lab", "up", "--lab", lab, "--runtime", runtime)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    state = LabState.load(name)
    assert state is not None and state.runtime == runtime
    return state


def down_by_hand(name: str) -> None:
    proc = dnslab("lab", "down", "--lab", name)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    nothing_left(name)


def ask_from_the_client(state: LabState, questions: list[tuple[str, str, str]]) -> list[str]:
    """dig's answer section for each (address, name, type), asked in the client node with
    `dnslab lab exec` naming no lab."""
    client = next(n.name for n in state.nodes.values() if n.role == "client")
    script = "; ".join(f"echo '== {a} {q} {t}'; dig +tries=2 +time=3 +noall +comments +answer "
                       f"@{a} {q} {t}" for a, q, t in questions)
    proc = dnslab("lab", "exec", client, "--", "sh", "-c", script, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout.split("== ")[1:]


@pytest.mark.parametrize("lab", topology.known_labs())
def test_every_lab_comes_up_by_hand_and_answers_its_client(lab, runtime):
    state = up_by_hand(lab, runtime)
    try:
        questions = [(n.address, n.health, "SOA") for n in state.nodes.values()
                     if servers.driver(n.server).runs_daemon and n.health]
        questions += [(n.address, "www.example.test.", "A") for n in state.nodes.values()
                      if n.role == "resolver"]
        assert questions
        for (address, name, rdtype), reply in zip(questions, ask_from_the_client(state, questions),
                                                  strict=True):
            assert "status: NOERROR" in reply, reply
            answers = [line.split() for line in reply.splitlines()
                       if line and not line.startswith((";", address))]
            assert any(a[0] == name and a[3] == rdtype for a in answers), reply
            if rdtype == "A":
                assert any(a[4] == "192.0.2.1" for a in answers), reply
        status = dnslab("lab", "status")
        assert status.returncode == 0 and state.lab in status.stdout, status.stderr
    finally:
        down_by_hand(state.lab)


def readme_topology() -> str:
    """The topology file of the README's worked example (section "Your own question")."""
    section = README.read_text().split("## Your own question", 1)[1].split("\n## ", 1)[0]
    blocks = [b for b in re.findall(r"```yaml\n(.*?)```", section, re.S)
              if b.startswith("name: mine")]
    assert len(blocks) == 1, "the README's worked example shows one topology file"
    return blocks[0]


def daemon_processes(node_dir: Path) -> list[psutil.Process]:
    """The node's daemon and its child processes (found by the node folder in their command
    line, which both runtimes' processes show to the host)."""
    return [p for p in psutil.process_iter(["cmdline"])
            if any(str(node_dir) in arg for arg in p.info["cmdline"] or [])
            and p.info["cmdline"][0] not in ("sh", "/bin/sh")]


def test_the_readmes_own_lab_serves_with_a_worker_per_core_and_no_rate_limit(
        runtime, tmp_path):
    source = tmp_path / "mine.clab.yml"
    source.write_text(readme_topology())
    topo = topology.load(source)
    servers_on = {n.server: n for n in topo.nodes.values() if n.role != "client"}
    assert set(servers_on) == {"nsd", "knot", "bind"}
    assert {n.cpu_set for n in servers_on.values()} == {"0"}
    assert topo.one("client").cpu_set == "1"
    state = up_by_hand(str(source), runtime)
    try:
        root = Path(state.root) / "nodes"
        for kind, node in servers_on.items():
            processes = daemon_processes(root / node.name)
            assert processes, kind
            for process in processes:
                assert process.cpu_affinity() == [0], (kind, process.cmdline())
        # read back from the running daemons: NSD's server processes, Knot's workers as
        # its control socket reports them, BIND's own count in its log
        nsd = [p for p in daemon_processes(root / servers_on["nsd"].name)
               if p.name().startswith("nsd: server")]
        assert len(nsd) == 1
        knot_dir = root / servers_on["knot"].name
        workers = subprocess.run(["knotc", "-c", str(knot_dir / "knot.conf"), "status",
                                  "workers"], capture_output=True, text=True, timeout=30)
        assert "UDP workers: 1" in workers.stdout and "TCP workers: 1" in workers.stdout, \
            workers.stdout + workers.stderr
        bind_log = Path(state.nodes[servers_on["bind"].name].log).read_text()
        assert "using 1 worker thread" in bind_log
        # no rate limiting: a second of the README's dnsperf load on NSD over UDP loses
        # nothing to RRL (Debian's default dropped 25 % of it, logging "ratelimit block")
        queries = paths.BUILD / "mine-test.queries"
        queries.write_text("www.example.test A\n")
        perf = dnslab("lab", "exec", "client", "--", "dnsperf", "-s",
                      str(servers_on["nsd"].address), "-d", str(queries), "-c", "20",
                      "-q", "200", "-l", "2", timeout=60)
        assert perf.returncode == 0, perf.stdout + perf.stderr
        lost = re.search(r"Queries lost:\s+\d+ \(([\d.]+)%\)", perf.stdout)
        assert lost and float(lost.group(1)) < 1.0, perf.stdout
        nsd_log = Path(state.nodes[servers_on["nsd"].name].log).read_text()
        assert "ratelimit" not in nsd_log
    finally:
        down_by_hand("mine")
