"""The lab's one DNS client: every query the lab itself sends (health checks, "does it serve
these zones", answer sizes, version queries, serial waits) goes through here, on dnspython.

Queries are sent from the calling thread's network namespace; the `*_in` forms run them in a
thread that joined a node's namespace (`nsenter.in_netns`), so they never leave the lab. Every
target is checked by `check_lab_address` first. An `Answer` holds what the caller judges: the
rcode, the AA and TC flags, dig-style section counts (OPT counted in the additional section),
the SOA serial, TXT strings, and the size and bytes of the message *as received* (not
re-encoded).
"""

from __future__ import annotations

import base64
import dataclasses
import inspect
import ipaddress
import socket
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import dns.exception
import dns.flags
import dns.message
import dns.query
import dns.rcode
import dns.rdatatype

from dnslab.errors import LabError
from dnslab.nsenter import in_netns
from dnslab.wait import WaitTimeout, wait_until

# dnspython < 2.3.x has no `ignore_errors` (a lab host's Debian 12 python3-dnspython is 2.3.0)
_UDP_OPTIONS = ({"ignore_errors": True}
                if "ignore_errors" in inspect.signature(dns.query.udp).parameters else {})
_RECEIVE_OPTIONS = ({"ignore_errors": True}
                    if "ignore_errors" in inspect.signature(dns.query.receive_udp).parameters
                    else {})
LAB_SPACE = [ipaddress.ip_network("198.18.0.0/15"), ipaddress.ip_network("127.0.0.0/8")]
# what a query that got no answer raises
UNANSWERED = (dns.exception.Timeout, OSError, TimeoutError)


def check_lab_address(address: str) -> None:
    """Refuse any target outside the lab's own space: lab traffic never leaves the machine."""
    addr = ipaddress.ip_address(address)
    if not any(addr in net for net in LAB_SPACE):
        raise LabError(f"refusing to send DNS traffic to {address}: not a lab address",
                       hint="targets must be lab nodes (198.18.0.0/15) or loopback")


@dataclass
class Answer:
    """One answer as received."""

    rcode: str
    authoritative: bool
    answers: int  # records in the answer section
    serial: int | None  # of an SOA in the answer section
    size: int  # bytes of the DNS message as received
    truncated: bool
    authority: int = 0
    additional: int = 0  # OPT included, as dig counts it
    texts: list[str] = field(default_factory=list)  # TXT strings in the answer section
    wire: bytes = field(default=b"", repr=False)  # the DNS message as received


def answer_to_dict(answer: Answer) -> dict[str, Any]:
    """An Answer as JSON can carry it (a lab host's query, `dnslab.hostcmd`)."""
    fields = dataclasses.asdict(answer)
    fields["wire"] = base64.b64encode(answer.wire).decode()
    return fields


def answer_from_dict(fields: dict[str, Any]) -> Answer:
    return Answer(**{**fields, "wire": base64.b64decode(fields.get("wire") or "")})


class _Received:
    """A socket that keeps the DNS message it received: dnspython parses the wire and drops
    it, and the lab reports answers as the server sent them."""

    def __init__(self, sock: socket.socket, tcp: bool):
        self._sock, self._tcp = sock, tcp
        self.data = bytearray()

    def recv(self, n: int) -> bytes:  # TCP: the 2-byte length, then the message
        data = self._sock.recv(n)
        self.data += data
        return data

    def recvfrom(self, n: int) -> tuple[bytes, Any]:  # UDP: the last datagram is the answer
        data, peer = self._sock.recvfrom(n)
        self.data = bytearray(data)
        return data, peer

    def message(self) -> bytes:
        return bytes(self.data[2:] if self._tcp else self.data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


def _answer(reply: dns.message.Message, wire: bytes) -> Answer:
    serial = None
    texts: list[str] = []
    for rrset in reply.answer:
        if rrset.rdtype == dns.rdatatype.SOA:
            serial = rrset[0].serial
        elif rrset.rdtype == dns.rdatatype.TXT:
            texts += [b"".join(r.strings).decode(errors="replace") for r in rrset]
    return Answer(
        rcode=dns.rcode.to_text(reply.rcode()),
        authoritative=bool(reply.flags & dns.flags.AA),
        answers=sum(len(r) for r in reply.answer),
        serial=serial,
        size=len(wire),
        truncated=bool(reply.flags & dns.flags.TC),
        authority=sum(len(r) for r in reply.authority),
        additional=sum(len(r) for r in reply.additional) + (1 if reply.edns >= 0 else 0),
        texts=texts,
        wire=wire,
    )


def query(server: str, name: str, rdtype: str = "SOA", timeout: float = 1.0,
          tcp: bool = False, payload: int = 1232, *, port: int = 53, rdclass: str = "IN",
          recursion: bool = True, edns: bool = True) -> Answer:
    """One query from the current namespace (EDNS with `payload`, RD set unless `recursion`
    is False); raises one of UNANSWERED when nothing answers."""
    check_lab_address(server)
    msg = dns.message.make_query(name, rdtype, rdclass, use_edns=0 if edns else False,
                                 payload=payload)
    if not recursion:
        msg.flags &= ~dns.flags.RD
    if tcp:
        with socket.create_connection((server, port), timeout=timeout) as raw:
            raw.setblocking(False)
            sock = _Received(raw, tcp=True)
            reply = dns.query.tcp(msg, server, timeout=timeout, sock=sock, ignore_trailing=True)
    else:
        family = socket.AF_INET6 if ":" in server else socket.AF_INET
        with socket.socket(family, socket.SOCK_DGRAM) as raw:
            raw.setblocking(False)
            sock = _Received(raw, tcp=False)
            reply = dns.query.udp(msg, server, timeout=timeout, port=port, sock=sock,
                                  ignore_unexpected=True, ignore_trailing=True,
                                  **_UDP_OPTIONS)
    return _answer(reply, sock.message())


def query_in(netns: str, server: str, name: str, rdtype: str = "SOA",
             timeout: float = 1.0, tcp: bool = False, **options: Any) -> Answer:
    return in_netns(netns, lambda: query(server, name, rdtype, timeout, tcp, **options))


def try_query_in(netns: str, server: str, name: str, rdtype: str = "SOA",
                 timeout: float = 0.5, **options: Any) -> Answer | None:
    """A query that returns None instead of raising when nothing answers yet."""
    try:
        return query_in(netns, server, name, rdtype, timeout, **options)
    except UNANSWERED:
        return None


@dataclass(frozen=True)
class Query:
    """One query of a batch (`try_queries_in`, `Lab.ask_many`): what `query` takes."""

    server: str
    name: str
    rdtype: str = "SOA"
    timeout: float = 1.0
    tcp: bool = False
    options: dict[str, Any] = field(default_factory=dict)  # payload, recursion, rdclass, edns


def try_queries_in(netns: str, queries: Iterable[Query]) -> list[Answer | None]:
    """Queries asked one after the other from inside the namespace at `netns` (one thread
    joins it for all of them); None for each that got no answer."""
    wanted = list(queries)
    for one in wanted:
        check_lab_address(one.server)

    def ask_all() -> list[Answer | None]:
        answers: list[Answer | None] = []
        for one in wanted:
            try:
                answers.append(query(one.server, one.name, one.rdtype, one.timeout, one.tcp,
                                     **one.options))
            except UNANSWERED:
                answers.append(None)
        return answers

    return in_netns(netns, ask_all)


def server_version(netns: str, server: str, timeout: float = 2.0) -> str | None:
    """What a server says it is (`version.bind CH TXT`), or None if it will not say."""
    answer = try_query_in(netns, server, "version.bind", "TXT", timeout, rdclass="CH",
                          edns=False)
    return answer.texts[0] if answer and answer.texts else None


def wait_for_serial(netns: str, server: str, zone: str, serial: int, timeout: float,
                    interval: float = 0.1) -> float | None:
    """Seconds until `server` answers `zone`'s SOA with `serial` (None: not within
    `timeout`)."""
    start = time.monotonic()

    def has_serial() -> bool:
        soa = try_query_in(netns, server, zone, "SOA")
        return soa is not None and soa.serial == serial

    try:
        wait_until(has_serial, timeout, f"serial {serial} of {zone} on {server}",
                   interval=interval)
    except WaitTimeout:
        return None
    return time.monotonic() - start


def count_served(netns: str, server: str, zones: Iterable[str], timeout: float = 1.0,
                 parallel: int = 64) -> tuple[int, list[str]]:
    """`count_served_here` from inside the namespace at `netns`."""
    names = list(zones)
    return in_netns(netns, lambda: count_served_here(server, names, timeout, parallel))


def count_served_here(server: str, zones: Iterable[str], timeout: float = 1.0,
                      parallel: int = 64, port: int = 53) -> tuple[int, list[str]]:
    """How many zones the server answers authoritatively (SOA, NOERROR, AA); and which not.

    One UDP socket with up to `parallel` queries in flight (each unanswered one asked up to
    three times), so checking 30,000 zones takes about a second.
    """
    names = list(zones)
    check_lab_address(server)
    destination = (server, port)
    pending: dict[int, tuple[str, float, int]] = {}
    served: set[str] = set()
    todo = list(reversed(names))
    attempts: dict[str, int] = {}
    next_id = 1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.setblocking(False)
        while todo or pending:
            while todo and len(pending) < parallel:
                name = todo.pop()
                msg = dns.message.make_query(name, "SOA")
                msg.id = next_id
                next_id = next_id % 65535 + 1
                dns.query.send_udp(sock, msg, destination)
                pending[msg.id] = (name, time.monotonic(), attempts.get(name, 0))
            wait = 0.05
            while True:  # every answer that arrived, waiting only for the first
                try:
                    reply, _ = dns.query.receive_udp(
                        sock, destination, expiration=time.time() + wait,
                        ignore_unexpected=True, **_RECEIVE_OPTIONS)
                except dns.exception.Timeout:
                    break
                wait = 0.0
                entry = pending.pop(reply.id, None)
                if entry is not None and (reply.rcode() == dns.rcode.NOERROR
                                          and reply.flags & dns.flags.AA and reply.answer):
                    served.add(entry[0])
            now = time.monotonic()
            for qid, (name, sent, tries) in list(pending.items()):
                if now - sent > timeout:
                    del pending[qid]
                    if tries < 2:
                        attempts[name] = tries + 1
                        todo.append(name)
    missing = [n for n in names if n not in served]
    return len(served), missing
