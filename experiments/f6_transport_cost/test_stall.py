"""F6's own unit tests of the ~40 ms stall (NOTES.md, "Where the ~40 ms stalls come from"):
the server's TCP_NODELAY is read off its own socket, and the latency checks say a server's
Nagle hold as such (not the transport's round trips, not encryption cost) and say a TLS
version they have no handshake count for, instead of counting it as TLS 1.3."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from analysis.rundata import load_run
from analysis.verdicts import evaluate
from experiments.f6_transport_cost import fixtures
from experiments.f6_transport_cost.cases import HELD, NAGLE
from experiments.f6_transport_cost.load import socket_nodelay


def test_a_sockets_nodelay_is_read_on_a_duplicate_of_it() -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener, \
            socket.create_connection(listener.getsockname()) as client:
        served, _ = listener.accept()
        with served:
            assert socket_nodelay(os.getpid(), served.fileno()) is False  # Linux's default
            served.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            assert socket_nodelay(os.getpid(), served.fileno()) is True
            # the duplicate closed, the socket itself still answers
            client.sendall(b"x")
            assert served.recv(1) == b"x"
    assert socket_nodelay(os.getpid(), 987654) is None  # no such descriptor


def _verdicts(run: Path) -> dict[str, dict]:
    found, errors = evaluate(load_run(run))
    assert errors == []
    return {v["claim_id"]: v for v in found}


def test_a_servers_nagle_hold_is_said_with_its_figure_and_the_responders(
        tmp_path: Path) -> None:
    verdicts = _verdicts(fixtures.transport_latency_run(tmp_path, server_rtts=HELD,
                                                        nodelay=NAGLE))
    kept, fresh = verdicts["F6.latency.persistent"], verdicts["F6.latency.handshakes"]
    for verdict in (kept, fresh):
        assert verdict["status"] == "not_applicable"
        assert "delayed ACK (Nagle: TCP_NODELAY off" in verdict["detail"]
        assert "not the transport's round trips nor encryption cost" in verdict["detail"]
        assert "the lab's responder" in verdict["detail"]
        assert "2 held by the server" in verdict["line"]
    assert "unbound DoT 63.1 ms (3.15 RTT" in kept["detail"]
    assert "nsd DoT 125.9 ms = 6.29 RTT (expected 3, TLSv1.3" in fresh["detail"]
    assert "bind DoT" not in kept["detail"]  # its figure within the band: judged


def test_an_unrecorded_tls_version_is_an_unknown_not_tls_1_3(tmp_path: Path) -> None:
    verdict = _verdicts(fixtures.transport_latency_run(
        tmp_path, tls_version=None))["F6.latency.handshakes"]
    assert verdict["status"] == "not_applicable"
    assert "TLS version not recorded, its handshake's round trips unknown" in verdict["detail"]
    assert "expected 3" not in verdict["measured"]
