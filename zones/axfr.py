"""How many bytes and DNS messages a zone's AXFR takes when BIND (9.12-9.18) sends it.

BIND's xfrout (lib/ns/xfrout.c, `sendstream`) fills a TCP message record by record, counting
each record uncompressed (owner name + 10 + RDATA) after a 12-byte header (plus the question
in the first message), and closes the message once that count reaches
`transfer-message-size` (default 20480). The message is then rendered with name compression,
which BIND 9.12-9.18 do with a two-suffix table (`zones.wire`, `two-suffix`). So the number
of messages follows the records' uncompressed size and the bytes their compressed size; the
SOA opens and closes the stream, and the records go in the zone database's order (DNSSEC
canonical order of the names).

This is the model `F3.tld.size` rests on: seed 002's .ch carried 691 MB in 47,700 messages
for 14 M records, 49.4 bytes and 1/293 of a message per record; `per_record` gives the same
figures for a generated zone from a small sample of it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import dns.name
import dns.rdataclass
import dns.rdatatype
import dns.rrset
import dns.zone

from zones.wire import SuffixWriter

MESSAGE_SIZE = 20480  # BIND's transfer-message-size default (uncompressed bytes)
HEADER = 12
RR_FIXED = 10  # type, class, TTL, RDLENGTH


@dataclass(frozen=True)
class AxfrSize:
    """One AXFR as the secondary's log sizes it."""

    records: int  # the SOA counted twice, as it is sent twice
    messages: int
    bytes: int  # DNS messages on the wire (without TCP's 2-byte length prefixes)

    def per_record(self) -> tuple[float, float]:
        """Bytes and messages per record."""
        return self.bytes / self.records, self.messages / self.records


def _records(zone: dns.zone.Zone) -> Iterator[dns.rrset.RRset]:
    """Every record of `zone` as a one-record RRset: SOA, the rest in canonical order, SOA.
    BIND keeps NSEC3 records (and their RRSIGs) in a tree of their own, walked after the
    zone's main tree: they come after every other name."""
    soa = zone.find_rrset(zone.origin, dns.rdatatype.SOA)
    yield soa

    def hashed(name: dns.name.Name) -> bool:
        return zone.nodes[name].get_rdataset(dns.rdataclass.IN, dns.rdatatype.NSEC3) is not None

    for name in sorted(zone.nodes, key=lambda name: (hashed(name), name)):
        for rdataset in zone.nodes[name].rdatasets:
            if name == zone.origin and rdataset.rdtype == dns.rdatatype.SOA:
                continue
            for rdata in rdataset:
                one = dns.rrset.RRset(name, rdataset.rdclass, rdataset.rdtype, rdataset.covers)
                one.add(rdata, rdataset.ttl)
                yield one
    yield soa


def _uncompressed(rrset: dns.rrset.RRset) -> int:
    rdata = next(iter(rrset))
    return len(rrset.name.to_wire()) + RR_FIXED + len(rdata.to_digestable())


def axfr_size(zone: dns.zone.Zone, message_size: int = MESSAGE_SIZE,
              suffixes: int | None = 2) -> AxfrSize:
    """The AXFR of `zone` split into messages as BIND's xfrout does, each message's size
    under a compression table of `suffixes` suffixes per name (2: BIND 9.12-9.18; None:
    every suffix, as BIND 9.9 and dnspython)."""
    question = len(zone.origin.to_wire()) + 4
    records = messages = total = 0
    writer: SuffixWriter | None = None
    used = 0
    for rrset in _records(zone):
        if writer is None:
            writer = SuffixWriter(suffixes, keeps_uncompressed=True)
            writer.out += bytes(HEADER)
            used = HEADER
            if messages == 0:
                writer.name(zone.origin)
                writer.out += bytes(4)
                used += question
        writer.rrset(rrset)
        used += _uncompressed(rrset)
        records += 1
        if used >= message_size:
            total += len(writer.out)
            messages += 1
            writer = None
    if writer is not None:
        total += len(writer.out)
        messages += 1
    return AxfrSize(records=records, messages=messages, bytes=total)


def zone_axfr_size(path: Path, origin: str, **kw: int | None) -> AxfrSize:
    """`axfr_size` of the zone file at `path`."""
    zone = dns.zone.from_file(str(path), origin=dns.name.from_text(origin), relativize=False,
                              rdclass=dns.rdataclass.IN)
    return axfr_size(zone, **kw)
