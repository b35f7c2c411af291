"""The lab's dnsperf receives the largest answers DNS allows, over TCP and DNS over TLS.

dnsperf before 2.13.1 never receives a TCP or DoT answer over 16 KiB (its receive buffer):
it sends, gets nothing back, times out, sends again. The lab's dnsperf is the one its client
node runs (the host's when the host has 2.13.1 or later, else the root file system's of the
tools image's suite on the netns runtime: rootfs.py). Here it runs in the client node of the
dnsdist lab (on netns, its servers held), against `dnsload serve` answering ~20 KiB and
~64 KiB (65,434 bytes: within one record of the 65,535-byte maximum) on the node's loopback,
and must complete every query with answers that large. The same responders, queried from
the same node by Debian 12's dnsperf 2.10 (the host's /usr/bin/dnsperf), show the stall:
nothing completes, while 9 KB answers all do. That part runs only where the host's dnsperf
is a 2.10 (a skip, said as one, elsewhere).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from dnslab import lab as lab_engine
from dnslab import paths
from dnslab.runtime.netns import installed_versions, node_root
from dnslab.runtime.rootfs import version_at_least
from dnslab.wait import wait_until
from experiments.generators.perf import parse_dnsperf, tool_version

pytestmark = pytest.mark.integration
DNSLOAD = paths.BIN / "dnsload"
HOST_DNSPERF = Path("/usr/bin/dnsperf")
QUERIES = 10
# answer sizes (dnsload serve -tcp-size): under dnsperf 2.10's 16 KiB, over it, the maximum
SMALL, LARGE, LARGEST = 9000, 20000, 65535
PORTS = {SMALL: 5301, LARGE: 5302, LARGEST: 5303}  # TCP; DoT on the port + 3530


@dataclass
class Responders:
    lab: lab_engine.Lab
    client: str
    queries: Path


def host_dnsperf_version() -> str | None:
    if not HOST_DNSPERF.exists():
        return None
    proc = subprocess.run([str(HOST_DNSPERF), "-h"], capture_output=True, text=True)
    return tool_version(proc.stdout + proc.stderr)


@pytest.fixture(scope="module")
def responders() -> Iterator[Responders]:
    """The dnsdist lab on netns with only its client up, three `dnsload serve` in the client
    answering TCP and DoT on loopback with answers of each size."""
    assert DNSLOAD.exists(), "make dnsload builds build/bin/dnsload"
    lab_engine.down("dnsdist")
    lab = lab_engine.up("dnsdist", runtime="netns", hold=["frontend", "sink"], quiet=True)
    serving: list[subprocess.Popen] = []
    try:
        client = lab.rendered.topology.node(role="client").name if lab.rendered else "client"
        queries = Path(lab.state.root) / "large-answers.queries"
        queries.write_text("large.test A\n" * QUERIES)
        for size, port in PORTS.items():
            out = Path(lab.state.root) / f"serve-{size}.jsonl"
            with open(out, "w") as handle:
                serving.append(lab.popen(client, [
                    str(DNSLOAD), "serve", "-a", f"127.0.0.1:{port}", "-l", "120", "-c", "1",
                    "-tcp-size", str(size), "-dot", "-dot-port", str(port + 3530)],
                    stdout=handle, stderr=subprocess.STDOUT))
            wait_until(lambda out=out: "serve_ready" in out.read_text(), 10,
                       f"dnsload serve ({size} B answers) to listen")
        yield Responders(lab, client, queries)
    finally:
        for proc in serving:
            proc.terminate()
            proc.wait(timeout=10)
        lab_engine.down("dnsdist")


def dnsperf_argv(mode: str, size: int, queries: Path, seconds: float | None) -> list[str]:
    port = PORTS[size] + (3530 if mode == "dot" else 0)
    argv = ["-s", "127.0.0.1", "-p", str(port), "-m", mode, "-d", str(queries), "-c", "1",
            "-q", "1", "-t", "1"]
    return argv + (["-l", f"{seconds:g}"] if seconds else ["-n", "1"])


def response_bytes(text: str) -> int:
    match = re.search(r"Average packet size:\s+request \d+, response (\d+)", text)
    assert match, text
    return int(match.group(1))


def test_the_lab_runs_a_dnsperf_that_receives_large_answers_here(responders: Responders):
    """On a host whose dnsperf is older than 2.13.1 the client runs from a root file system;
    either way the dnsperf that runs in it is 2.13.1 or later."""
    lab, client = responders.lab, responders.client
    proc = lab.run(client, ["dnsperf", "-h"], check=False)
    version = tool_version(proc.stdout + proc.stderr)
    assert version is not None and version_at_least(version, "2.13.1"), version
    host = installed_versions(lab.host(client), ["dnsperf"])["dnsperf"]
    too_old = host is None or not version_at_least(host, "2.13.1")
    assert bool(lab.state.nodes[client].rootfs) == too_old
    found = node_root(lab.rendered.topology.node(client)) if lab.rendered else None
    assert (found is not None) == too_old


@pytest.mark.parametrize("mode", ["tcp", "dot"])
@pytest.mark.parametrize("size", [LARGE, LARGEST])
def test_the_labs_dnsperf_completes_every_query_with_a_large_answer(responders: Responders,
                                                                    mode: str, size: int):
    proc = responders.lab.run(responders.client, ["dnsperf", *dnsperf_argv(
        mode, size, responders.queries, None)], timeout=30, check=False)
    text = proc.stdout + proc.stderr
    result = parse_dnsperf(text)
    assert (result.sent, result.completed, result.lost) == (QUERIES, QUERIES, 0), text
    assert size - 268 <= response_bytes(text) <= size  # what dnsperf itself received
    assert result.rcodes == {"NOERROR": QUERIES}


HOST_VERSION = host_dnsperf_version()
needs_dnsperf_210 = pytest.mark.skipif(
    HOST_VERSION is None or not HOST_VERSION.startswith("2.10."),
    reason=f"the host's dnsperf is {HOST_VERSION or 'missing'}, not a 2.10 (Debian 12's)")


@needs_dnsperf_210
@pytest.mark.parametrize("mode", ["tcp", "dot"])
def test_dnsperf_210_stalls_on_an_answer_over_16_kib(responders: Responders, mode: str):
    """Debian 12's dnsperf from the same node against the same responders: every answer of
    9 KB completes; of 20 KB and 64 KB none does (each query times out, 1 s, and the next
    is sent: with one in flight, ~2 in 2 s)."""
    ns = Path(responders.lab.netns(responders.client)).name
    done: dict[int, tuple[int, int]] = {}
    for size in (SMALL, LARGE, LARGEST):
        argv = ["ip", "netns", "exec", ns, str(HOST_DNSPERF),
                *dnsperf_argv(mode, size, responders.queries, 2.0 if size > SMALL else None)]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        assert tool_version(proc.stdout).startswith("2.10."), proc.stdout[:200]
        result = parse_dnsperf(proc.stdout)
        done[size] = (result.sent, result.completed)
    assert done[SMALL] == (QUERIES, QUERIES), done
    for size in (LARGE, LARGEST):
        sent, completed = done[size]
        assert sent >= 1 and completed == 0, (size, done)
