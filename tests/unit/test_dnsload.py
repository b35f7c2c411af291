"""The load protocols driving the real dnsload binary against `dnsload serve` on loopback."""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path

import pytest

from dnslab.errors import LabError
from dnslab.paths import BIN
from experiments.f1_tcp_fallback import stairs
from experiments.generators import dnsload
from tests.fixtures import stair_protocols as protocols

DNSLOAD = BIN / "dnsload"
pytestmark = pytest.mark.skipif(not DNSLOAD.exists(),
                                reason="build/bin/dnsload missing: run scripts/build-dnsload.sh")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_stair_against_calibration_responder(tmp_path: Path) -> None:
    port = _free_port()
    qfile = tmp_path / "queries.txt"
    qfile.write_text("tac-lb10.tac-hb10.tac.epc.mnc010.mcc440.3gppnetwork.org NAPTR\n"
                     "topon.S5.pgw.00.TAC10.node.epc.mnc010.mcc440.3gppnetwork.org A\n")
    server = subprocess.Popen(
        [str(DNSLOAD), "serve", "-a", f"127.0.0.1:{port}", "-l", "20", "-tc", "0.3",
         "-tcp-size", "23000"], stdout=subprocess.PIPE, text=True)
    try:
        assert json.loads(server.stdout.readline())["type"] == "serve_ready"
        gen = dnsload.DnsloadGenerator(server=f"127.0.0.1:{port}", query_file=str(qfile),
                                    binary=str(DNSLOAD), timeout_s=2)
        res = protocols.stair(protocols.local_runner, gen, 1000, 2000, 1000, 3,
                         stairs.Criteria(warmup_s=1))
    finally:
        server.terminate()
        server.wait(timeout=5)
    assert [r.target_qps for r in res] == [1000, 2000]
    for r in res:
        m = r.measure
        assert r.passed, r.reasons
        assert m.seconds == 2
        # the steady window starts mid-run: answers to queries sent just before it count, and
        # a generator starved by a parallel suite catches up in bursts (4,004 answered of
        # 3,997 sent once), so the window's edges move by milliseconds: 1 % of the step
        assert m.answered == pytest.approx(m.sent, rel=0.01) and m.timeouts == 0
        # a retry can straddle the window edge, so truncated and tcp may differ by one
        assert m.truncated == pytest.approx(0.3 * m.sent, abs=3)
        assert m.tcp == pytest.approx(m.truncated, abs=2)
        assert r.tcp_share == pytest.approx(0.3 / 1.3, abs=0.01)
        assert 0 < m.p50_ms <= m.p99_ms <= m.max_ms < 1000


def test_refuses_outside_target() -> None:
    gen = dnsload.DnsloadGenerator(server="192.0.2.1:53", query_file="/dev/null",
                                binary=str(DNSLOAD))
    with pytest.raises(LabError, match="refusing target 192.0.2.1"):
        stairs.burst(protocols.local_runner, gen, 100, 1)


def test_stream_over_udp_against_calibration_responder(tmp_path: Path) -> None:
    """`stream_argv` over UDP, read by `parse_stream` as the other transports are: paced at
    2,000 qps for 1 s over 4 sockets, every query answered by the responder."""
    port = _free_port()
    qfile = tmp_path / "queries.txt"
    qfile.write_text("h1.example.test A\nh2.example.test A\n")
    server = subprocess.Popen([str(DNSLOAD), "serve", "-a", f"127.0.0.1:{port}", "-l", "20"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert json.loads(server.stdout.readline())["type"] == "serve_ready"
        argv = dnsload.stream_argv(f"127.0.0.1:{port}", "udp", qfile, connections=4,
                                   outstanding=100, duration_s=1, timeout_s=2, rate=2000)
        assert argv[argv.index("-m") + 1] == "udp"
        total = dnsload.parse_stream(subprocess.run(argv, capture_output=True, text=True,
                                                    check=True, timeout=30).stdout)
    finally:
        server.terminate()
        server.wait(timeout=5)
    assert total["transport"] == "udp" and total["connections"] == 4
    assert 1900 <= total["sent"] <= 2000
    assert total["answered"] == total["sent"] and total["timeouts"] == 0
    assert total["rcodes"] == {"NOERROR": total["sent"]} and total["truncated"] == 0

