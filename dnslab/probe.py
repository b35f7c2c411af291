"""DNS probes sent from inside a lab node: health checks and "does it serve these zones".

Queries are built and parsed with dnspython and sent from a thread that joined the node's
network namespace, so they never leave the lab.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass

import dns.exception
import dns.flags
import dns.message
import dns.query
import dns.rcode
import dns.rdatatype

from dnslab.errors import LabError
from dnslab.nsenter import in_netns

LAB_SPACE = [ipaddress.ip_network("198.18.0.0/15"), ipaddress.ip_network("127.0.0.0/8")]


def check_lab_address(address: str) -> None:
    """Refuse any target outside the lab's own space: lab traffic never leaves the machine."""
    addr = ipaddress.ip_address(address)
    if not any(addr in net for net in LAB_SPACE):
        raise LabError(f"refusing to send DNS traffic to {address}: not a lab address",
                       hint="targets must be lab nodes (198.18.0.0/15) or loopback")


@dataclass
class Answer:
    rcode: str
    authoritative: bool
    answers: int
    serial: int | None
    size: int
    truncated: bool


def query(server: str, name: str, rdtype: str = "SOA", timeout: float = 1.0,
          tcp: bool = False, payload: int = 1232) -> Answer:
    """One query from the current namespace; raises TimeoutError or OSError when unanswered."""
    check_lab_address(server)
    msg = dns.message.make_query(name, rdtype, use_edns=0, payload=payload)
    if tcp:
        reply = dns.query.tcp(msg, server, timeout=timeout)
    else:
        reply = dns.query.udp(msg, server, timeout=timeout, ignore_unexpected=True)
    serial = None
    for rrset in reply.answer:
        if rrset.rdtype == dns.rdatatype.SOA:
            serial = rrset[0].serial
    return Answer(
        rcode=dns.rcode.to_text(reply.rcode()),
        authoritative=bool(reply.flags & dns.flags.AA),
        answers=sum(len(r) for r in reply.answer),
        serial=serial,
        size=len(reply.to_wire()),
        truncated=bool(reply.flags & dns.flags.TC),
    )


def query_in(netns: str, server: str, name: str, rdtype: str = "SOA",
             timeout: float = 1.0, tcp: bool = False) -> Answer:
    return in_netns(netns, lambda: query(server, name, rdtype, timeout, tcp))


def try_query_in(netns: str, server: str, name: str, rdtype: str = "SOA",
                 timeout: float = 0.5) -> Answer | None:
    """A query that returns None instead of raising when nothing answers yet."""
    try:
        return query_in(netns, server, name, rdtype, timeout)
    except (dns.exception.Timeout, OSError, TimeoutError):
        return None


def count_served(netns: str, server: str, zones: Iterable[str], timeout: float = 1.0,
                 parallel: int = 64) -> tuple[int, list[str]]:
    """How many zones the server answers authoritatively (SOA, NOERROR, AA); and which not.

    Runs in one thread inside the namespace with a single UDP socket and many queries in
    flight, so checking 30,000 zones takes about a second.
    """
    names = list(zones)

    def run() -> tuple[int, list[str]]:
        import selectors
        import time

        check_lab_address(server)
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.setblocking(False)
        sel = selectors.DefaultSelector()
        sel.register(sock, selectors.EVENT_READ)
        pending: dict[int, tuple[str, float, int]] = {}
        served: set[str] = set()
        todo = list(reversed(names))
        attempts: dict[str, int] = {}
        next_id = 1
        try:
            while todo or pending:
                while todo and len(pending) < parallel:
                    name = todo.pop()
                    msg = dns.message.make_query(name, "SOA")
                    msg.id = next_id
                    next_id = next_id % 65535 + 1
                    sock.sendto(msg.to_wire(), (server, 53))
                    pending[msg.id] = (name, time.monotonic(), attempts.get(name, 0))
                for _key, _mask in sel.select(timeout=0.05):
                    while True:
                        try:
                            wire = sock.recv(65535)
                        except BlockingIOError:
                            break
                        try:
                            reply = dns.message.from_wire(wire)
                        except dns.exception.DNSException:
                            continue
                        entry = pending.pop(reply.id, None)
                        if entry is None:
                            continue
                        if (reply.rcode() == dns.rcode.NOERROR and reply.flags & dns.flags.AA
                                and reply.answer):
                            served.add(entry[0])
                now = time.monotonic()
                for qid, (name, sent, tries) in list(pending.items()):
                    if now - sent > timeout:
                        del pending[qid]
                        if tries < 2:
                            attempts[name] = tries + 1
                            todo.append(name)
        finally:
            sel.close()
            sock.close()
        missing = [n for n in names if n not in served]
        return len(served), missing

    return in_netns(netns, run)
