"""The modelled "full" authoritative response: what BIND 9.9/9.11 sent for seed 000's zone.

Today's packaged servers add less to the additional section (BIND 9.18 skips additional
processing for RRsets of more than 13 records; Knot 3.2 and NSD 4.6 add nothing for NAPTR),
so the lab needs the old behaviour as a model to compare real answers against.

Rules (RFC 3403 section 4.2, RFC 2782, RFC 1034), as BIND applied them:

* answer: the RRset at the query name (NXDOMAIN / NODATA put the SOA in authority);
* authority: the apex NS RRset on positive answers (`minimal-responses no`);
* additional, in this order, each name/type added once and never one already in the message:
  NAPTR flags "s" -> the SRV RRset at the replacement, and that SRV RRset's targets' A/AAAA;
  flags "a" -> A and AAAA at the replacement; SRV in the answer -> targets' A/AAAA; MX/NS ->
  A/AAAA of the exchange / server name (this is the NS glue).

Sizes are dnspython's wire format with name compression (NAPTR replacements and SRV targets
are never compressed, as RFC 3597 requires): every suffix of a name already in the message is
a pointer target, as BIND 9.9 did. A server that compresses less sends the same records in
more bytes (BIND 9.12-9.18 look a name up as itself and without its first label only:
`zones.wire` encodes that), so a real answer is compared with the model record by record
(`record_difference`). Section counts follow dig: ADDITIONAL includes the OPT record.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import dns.flags
import dns.message
import dns.name
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.rrset
import dns.zone

A, AAAA = dns.rdatatype.A, dns.rdatatype.AAAA
NAPTR, SRV, NS, MX, SOA = (
    dns.rdatatype.NAPTR,
    dns.rdatatype.SRV,
    dns.rdatatype.NS,
    dns.rdatatype.MX,
    dns.rdatatype.SOA,
)
IN = dns.rdataclass.IN


@dataclass
class Measured:
    """Figures of one response, in the form dig prints them."""

    qname: str
    qtype: str
    size: int
    answer: int
    authority: int
    additional: int  # including OPT, as dig counts it
    rcode: str
    payload: int
    truncated: bool  # the full response does not fit the EDNS UDP payload size

    def as_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


def load_zone(path: Path | str, origin: str) -> dns.zone.Zone:
    """Load a zone file with dnspython (absolute names, no relativization)."""
    return dns.zone.from_file(str(path), origin=origin, relativize=False, check_origin=True)


class _Builder:
    def __init__(self, zone: dns.zone.Zone, response: dns.message.Message):
        self.zone = zone
        self.r = response
        self.seen: set[tuple[dns.name.Name, int]] = set()

    def rrset(self, name: dns.name.Name, rdtype: int) -> dns.rrset.RRset | None:
        try:
            node = self.zone.get_node(name)
        except KeyError:
            return None
        if node is None:
            return None
        rds = node.get_rdataset(IN, rdtype)
        if rds is None:
            return None
        rrset = dns.rrset.RRset(name, IN, rdtype)
        rrset.update(rds)
        return rrset

    def add(self, section: list, rrset: dns.rrset.RRset) -> None:
        self.seen.add((rrset.name, rrset.rdtype))
        section.append(rrset)

    def add_additional(self, name: dns.name.Name, rdtype: int) -> dns.rrset.RRset | None:
        if (name, rdtype) in self.seen:
            return None
        rrset = self.rrset(name, rdtype)
        if rrset is None:
            return None
        self.add(self.r.additional, rrset)
        return rrset

    def addresses(self, name: dns.name.Name) -> None:
        self.add_additional(name, A)
        self.add_additional(name, AAAA)

    def additional_for(self, rrset: dns.rrset.RRset) -> None:
        for rd in rrset:
            if rrset.rdtype == NAPTR:
                flags = rd.flags.decode().lower()
                if "s" in flags:
                    srv = self.add_additional(rd.replacement, SRV)
                    if srv is not None:
                        self.additional_for(srv)
                elif "a" in flags:
                    self.addresses(rd.replacement)
            elif rrset.rdtype == SRV:
                self.addresses(rd.target)
            elif rrset.rdtype == NS:
                self.addresses(rd.target)
            elif rrset.rdtype == MX:
                self.addresses(rd.exchange)


def full_response(
    zone: dns.zone.Zone, qname: str | dns.name.Name, qtype: str | int = "NAPTR",
    payload: int = 4096,
) -> dns.message.Message:
    """Build the response an authoritative server doing full additional processing sends."""
    name = dns.name.from_text(qname) if isinstance(qname, str) else qname
    rdtype = dns.rdatatype.from_text(qtype) if isinstance(qtype, str) else qtype
    query = dns.message.make_query(name, rdtype, use_edns=0, payload=payload)
    r = dns.message.make_response(query)
    r.flags |= dns.flags.AA
    r.flags &= ~dns.flags.RA
    r.use_edns(0, 0, payload)
    b = _Builder(zone, r)
    b.seen.add((name, rdtype))
    if not name.is_subdomain(zone.origin):
        r.set_rcode(dns.rcode.REFUSED)
        return r
    answer = b.rrset(name, rdtype)
    soa = b.rrset(zone.origin, SOA)
    if answer is None:
        if zone.get_node(name) is None:
            r.set_rcode(dns.rcode.NXDOMAIN)
        if soa is not None:
            b.add(r.authority, soa)
        return r
    b.add(r.answer, answer)
    b.additional_for(answer)
    ns = b.rrset(zone.origin, NS)
    if ns is not None and (zone.origin, NS) != (name, rdtype):
        b.add(r.authority, ns)
        b.additional_for(ns)
    return r


def measure_message(msg: dns.message.Message, payload: int = 4096) -> Measured:
    """Size and dig-style section counts of a message (full size, never truncated)."""
    wire = msg.to_wire(max_size=65535)
    q = msg.question[0]
    return Measured(
        qname=q.name.to_text(),
        qtype=dns.rdatatype.to_text(q.rdtype),
        size=len(wire),
        answer=sum(len(r) for r in msg.answer),
        authority=sum(len(r) for r in msg.authority),
        additional=sum(len(r) for r in msg.additional) + (1 if msg.edns >= 0 else 0),
        rcode=dns.rcode.to_text(msg.rcode()),
        payload=payload,
        truncated=len(wire) > payload,
    )


def measure(
    zone: dns.zone.Zone, qname: str, qtype: str = "NAPTR", payload: int = 4096
) -> Measured:
    """Modelled full response figures for one query."""
    return measure_message(full_response(zone, qname, qtype, payload), payload)


def _records(msg: dns.message.Message) -> set[tuple[str, str, str, str]]:
    """(section, owner, type, rdata) of every record but OPT, names lower-cased."""
    found = set()
    for section, rrsets in (("answer", msg.answer), ("authority", msg.authority),
                            ("additional", msg.additional)):
        for rrset in rrsets:
            for rd in rrset:
                found.add((section, rrset.name.to_text().lower(),
                           dns.rdatatype.to_text(rrset.rdtype), rd.to_text().lower()))
    return found


def record_difference(received: dns.message.Message, full: dns.message.Message
                      ) -> tuple[int, int]:
    """(records of the full answer the received one lacks, records it has that the full
    answer does not), section by section; order, TTLs and name compression aside."""
    got, want = _records(received), _records(full)
    return len(want - got), len(got - want)
