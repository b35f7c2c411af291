"""Unit tests of the lab's DNS client (dnslab/probe.py) against a loopback responder: sizes
as received over UDP and TCP, section counts, the lab-address guard, version answers, the
pipelined "which zones are served" count; and of `wait_until`."""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Iterator

import dns.flags
import dns.message
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.rrset
import pytest

from dnslab import probe
from dnslab.errors import LabError
from dnslab.wait import WaitTimeout, wait_until

NAME = "tac-lb10.tac-hb10.tac.epc.example."
RECORDS = 90
SERVED = {f"z{i}.test." for i in range(0, 300, 2)}  # every other zone of z0..z299


def _reply(query: dns.message.Message) -> dns.message.Message:
    """One big NAPTR RRset for NAME, an authoritative SOA for the zones in SERVED, REFUSED
    for other zones, and a version for `version.bind CH TXT`."""
    reply = dns.message.make_response(query)
    question = query.question[0]
    qname = question.name.to_text()
    if question.rdclass == dns.rdataclass.CH:
        reply.answer.append(dns.rrset.from_text(qname, 0, "CH", "TXT", '"9.99.1-test"'))
    elif qname == NAME:
        reply.flags |= dns.flags.AA
        texts = [f'100 {35000 + i} "s" "x-3gpp-sgw:x-s5-gtp" "" _sgw.n{i:03d}.node.epc.example.'
                 for i in range(RECORDS)]
        reply.answer.append(dns.rrset.from_text_list(NAME, 300, "IN", "NAPTR", texts))
    elif qname in SERVED and question.rdtype == dns.rdatatype.SOA:
        reply.flags |= dns.flags.AA
        reply.answer.append(dns.rrset.from_text(qname, 300, "IN", "SOA",
                                                "ns.test. hostmaster.test. 7 3600 900 1209600 300"))
    else:
        reply.set_rcode(dns.rcode.REFUSED)
    return reply


def _read_exact(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise OSError("closed")
        data += chunk
    return data


def _bind_pair() -> tuple[socket.socket, socket.socket]:
    """A UDP and a TCP socket on the same free loopback port (retried: another process may
    hold the TCP side of the port the kernel gave the UDP socket)."""
    for _ in range(50):
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        udp.bind(("127.0.0.1", 0))
        tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            tcp.bind(("127.0.0.1", udp.getsockname()[1]))
        except OSError:
            udp.close()
            tcp.close()
            continue
        return udp, tcp
    raise RuntimeError("no loopback port free for both UDP and TCP")


@pytest.fixture
def responder() -> Iterator[int]:
    """A loopback UDP+TCP responder: UDP answers larger than the query's EDNS size (512
    without EDNS) are truncated (TC=1, empty sections), TCP answers are complete."""
    udp, tcp = _bind_pair()
    port = udp.getsockname()[1]
    tcp.listen(8)
    stop = threading.Event()

    def serve_udp() -> None:
        udp.settimeout(0.1)
        while not stop.is_set():
            try:
                data, peer = udp.recvfrom(65535)
            except TimeoutError:
                continue
            query = dns.message.from_wire(data)
            reply = _reply(query)
            wire = reply.to_wire(max_size=65535)
            if len(wire) > max(query.payload, 512):
                reply.answer.clear()
                reply.flags |= dns.flags.TC
                wire = reply.to_wire()
            udp.sendto(wire, peer)

    def serve_tcp() -> None:
        tcp.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = tcp.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(2)
                (length,) = struct.unpack("!H", _read_exact(conn, 2))
                query = dns.message.from_wire(_read_exact(conn, length))
                wire = _reply(query).to_wire(max_size=65535)
                conn.sendall(struct.pack("!H", len(wire)) + wire)

    threads = [threading.Thread(target=serve_udp, daemon=True),
               threading.Thread(target=serve_tcp, daemon=True)]
    for t in threads:
        t.start()
    yield port
    stop.set()
    for t in threads:
        t.join(timeout=2)
    udp.close()
    tcp.close()


def test_query_measures_truncated_udp_and_full_tcp_answers(responder: int) -> None:
    udp = probe.query("127.0.0.1", NAME, "NAPTR", timeout=2, payload=4096, port=responder,
                      recursion=False)
    full = probe.query("127.0.0.1", NAME, "NAPTR", timeout=2, tcp=True, payload=4096,
                       port=responder, recursion=False)
    assert udp.truncated and udp.answers == 0 and udp.additional == 1  # OPT only
    assert not full.truncated and full.answers == RECORDS and full.rcode == "NOERROR"
    assert full.authoritative and full.additional == 1
    assert full.size > 4096 > udp.size
    # the size is the received wire length, which must equal the re-encoded message here
    expected = _reply(dns.message.make_query(NAME, "NAPTR", use_edns=0, payload=4096))
    assert full.size == len(expected.to_wire(max_size=65535))
    # and the bytes are the message as received (no TCP length prefix)
    assert len(full.wire) == full.size and dns.message.from_wire(full.wire).answer
    assert len(udp.wire) == udp.size and dns.message.from_wire(udp.wire).flags & dns.flags.TC


def test_query_refuses_addresses_outside_the_lab() -> None:
    with pytest.raises(LabError, match="not a lab address"):
        probe.query("192.0.2.1", NAME)


def test_query_reads_the_soa_serial_and_txt_strings(responder: int) -> None:
    soa = probe.query("127.0.0.1", "z0.test.", "SOA", port=responder)
    assert soa.serial == 7 and soa.authoritative and soa.answers == 1
    refused = probe.query("127.0.0.1", "z1.test.", "SOA", port=responder)
    assert refused.rcode == "REFUSED" and refused.serial is None
    version = probe.query("127.0.0.1", "version.bind", "TXT", port=responder, rdclass="CH",
                          edns=False)
    assert version.texts == ["9.99.1-test"] and version.additional == 0


def test_an_unanswered_query_raises_what_try_query_catches() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as silent:
        silent.bind(("127.0.0.1", 0))
        with pytest.raises(probe.UNANSWERED):
            probe.query("127.0.0.1", "z0.test.", port=silent.getsockname()[1], timeout=0.2)


def test_count_served_finds_exactly_the_served_zones(responder: int) -> None:
    names = [f"z{i}.test." for i in range(300)]
    served, missing = probe.count_served_here("127.0.0.1", names, timeout=0.3,
                                              port=responder)
    assert served == len(SERVED)
    assert set(missing) == set(names) - SERVED


def test_wait_until_returns_the_first_truthy_value() -> None:
    calls = iter([None, 0, "", "ready"])
    assert wait_until(lambda: next(calls), timeout=5, what="x", interval=0.01) == "ready"


def test_wait_until_times_out_naming_what_it_waited_for() -> None:
    start = time.monotonic()
    progress = {"left": 3}
    with pytest.raises(WaitTimeout, match="waiting for 3 zones on the primary"):
        wait_until(lambda: False, timeout=0.2,
                   what=lambda: f"{progress['left']} zones on the primary", interval=0.05)
    assert 0.2 <= time.monotonic() - start < 2
    assert issubclass(WaitTimeout, LabError)


def test_wait_until_passes_the_checks_error_on_at_once() -> None:
    def check() -> bool:
        raise LabError("the node exited")

    start = time.monotonic()
    with pytest.raises(LabError, match="exited"):
        wait_until(check, timeout=30, what="x")
    assert time.monotonic() - start < 1


def test_a_batch_of_queries_is_asked_in_order_with_none_where_nothing_answered(
        responder: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """`try_queries_in` (what the `queries` host command runs on a lab host): every query
    from one thread in the node's namespace (here the test's own), answers in order."""
    joined: list[str] = []
    monkeypatch.setattr(probe, "in_netns", lambda path, fn: joined.append(path) or fn())
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as silent:
        silent.bind(("127.0.0.1", 0))
        asked = [probe.Query("127.0.0.1", "z0.test.", options={"port": responder}),
                 probe.Query("127.0.0.1", NAME, "NAPTR", timeout=2, tcp=True,
                             options={"port": responder, "payload": 4096,
                                      "recursion": False}),
                 probe.Query("127.0.0.1", "z0.test.", timeout=0.2,
                             options={"port": silent.getsockname()[1]})]
        first, full, silent_answer = probe.try_queries_in("/run/netns/x", asked)
    assert joined == ["/run/netns/x"]  # one thread joins the namespace for all of them
    assert first is not None and first.serial == 7
    assert full is not None and full.answers == RECORDS and not full.truncated
    assert silent_answer is None
    with pytest.raises(LabError, match="not a lab address"):
        probe.try_queries_in("/run/netns/x", [probe.Query("192.0.2.1", NAME)])
