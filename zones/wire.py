"""How many bytes a DNS message takes under a given server's name compression.

dnspython (`full`) compresses a name against any suffix already in the message, as BIND 9.9
(the F1 seed's server) did. BIND 9.12 to 9.18 (lib/dns/compress.c) keep a smaller table, for
speed: a name is looked up only as itself and without its first label
(`dns_compress_findglobal`: `numlabels = labels > 3 ? 3 : labels`), only those two suffixes
of a name are added (`dns_compress_add`: `count = 2`), and names in RDATA that must not be
compressed (NAPTR replacement, SRV target) are still added, so later owners can point at
them. `two-suffix` encodes a message that way: the same records cost more bytes, which is why
BIND 9.16's full TAC answer is larger than the model's. tests/fixtures/bind916/ holds answers
captured from BIND 9.16.50 that it reproduces byte for byte.
"""

from __future__ import annotations

import dns.message
import dns.name
import dns.rdatatype
import dns.rrset

COMPRESSIONS = ("full", "two-suffix")
MAX_POINTER = 0x4000  # a pointer has 14 bits of offset

# RDATA whose names may be compressed (RFC 1035 types); the type -> bytes before the name(s)
_COMPRESSIBLE = {dns.rdatatype.NS: 0, dns.rdatatype.CNAME: 0, dns.rdatatype.PTR: 0,
                 dns.rdatatype.MX: 2}
# RDATA ending in one name that is never compressed but is still a compression target
_TRAILING_NAME = {dns.rdatatype.NAPTR: "replacement", dns.rdatatype.SRV: "target"}


def _wire(labels: tuple[bytes, ...]) -> bytes:
    return b"".join(bytes([len(label)]) + label for label in labels)


def _key(labels: tuple[bytes, ...]) -> bytes:
    return _wire(tuple(label.lower() for label in labels))


class SuffixWriter:
    """A message written name by name with a compression table that looks up and keeps at
    most `suffixes` suffixes of each name (None: all of them), and may also keep names it was
    told not to compress (`keeps_uncompressed`). SuffixWriter(2, True) is BIND 9.12-9.18;
    SuffixWriter(None, False) is dnspython's own (the unit tests hold it to that)."""

    def __init__(self, suffixes: int | None = 2, keeps_uncompressed: bool = True) -> None:
        self.out = bytearray()
        self.table: dict[bytes, int] = {}
        self.suffixes = suffixes
        self.keeps_uncompressed = keeps_uncompressed

    def _limit(self, count: int) -> int:
        return count if self.suffixes is None else min(count, self.suffixes)

    def _add(self, labels: tuple[bytes, ...], count: int, offset: int) -> None:
        if offset >= MAX_POINTER:
            return
        full = len(_wire(labels))
        for start in range(self._limit(count)):
            suffix = labels[start:]
            at = offset + full - len(_wire(suffix))
            if at >= MAX_POINTER:
                break
            self.table[_key(suffix)] = at

    def name(self, name: dns.name.Name, compress: bool = True) -> None:
        labels = name.labels
        offset = len(self.out)
        found = None
        if compress:
            for n in range(self._limit(len(labels) - 1)):
                at = self.table.get(_key(labels[n:]))
                if at is not None:
                    found = (n, at)
                    break
        if found is not None:
            n, at = found
            prefix = _wire(labels[:n])
            if at < MAX_POINTER and len(prefix) + 2 < len(_wire(labels)):
                self.out += prefix + (0xC000 | at).to_bytes(2, "big")
                if n:
                    self._add(labels, n, offset)
                return
        self.out += _wire(labels)
        if compress or self.keeps_uncompressed:
            self._add(labels, len(labels) - 1, offset)

    def rdata(self, rdtype: int, rd: object) -> None:
        start = len(self.out)
        self.out += b"\0\0"  # RDLENGTH, filled in below
        raw = rd.to_wire()  # type: ignore[attr-defined]
        if rdtype in _COMPRESSIBLE:
            head = _COMPRESSIBLE[rdtype]
            self.out += raw[:head]
            self.name(rd.exchange if rdtype == dns.rdatatype.MX else rd.target)  # type: ignore[attr-defined]
        elif rdtype == dns.rdatatype.SOA:
            self.name(rd.mname)  # type: ignore[attr-defined]
            self.name(rd.rname)  # type: ignore[attr-defined]
            self.out += raw[-20:]
        elif rdtype in _TRAILING_NAME:
            name = getattr(rd, _TRAILING_NAME[rdtype])
            tail = len(_wire(name.labels))
            self.out += raw[:-tail]
            self.name(name, compress=False)
        else:
            self.out += raw
        length = len(self.out) - start - 2
        self.out[start:start + 2] = length.to_bytes(2, "big")

    def rrset(self, rrset: dns.rrset.RRset) -> None:
        for rd in rrset:
            self.name(rrset.name)
            self.out += rrset.rdtype.to_bytes(2, "big") + rrset.rdclass.to_bytes(2, "big")
            self.out += int(rrset.ttl).to_bytes(4, "big")
            self.rdata(rrset.rdtype, rd)


def wire_size(msg: dns.message.Message, compression: str = "full") -> int:
    """Bytes of `msg` on the wire (never truncated) under `compression` (COMPRESSIONS)."""
    if compression == "full":
        return len(msg.to_wire(max_size=65535))
    if compression != "two-suffix":
        raise ValueError(f"compression {compression!r}: one of {', '.join(COMPRESSIONS)}")
    return len(write(msg, SuffixWriter(2, keeps_uncompressed=True)))


def write(msg: dns.message.Message, writer: SuffixWriter) -> bytes:
    """`msg` in wire format as `writer` compresses it (header and question as dnspython
    writes them: only the sizes are meant to be right, not the header's bits)."""
    writer.out += b"\0" * 12  # header
    for question in msg.question:
        writer.name(question.name)
        writer.out += b"\0" * 4
    for section in (msg.answer, msg.authority, msg.additional):
        for rrset in section:
            writer.rrset(rrset)
    if msg.edns >= 0:
        # the OPT record: root owner, type, payload, TTL (extended rcode, flags), RDLENGTH,
        # then each option as code, length, data
        writer.out += bytes(11) + b"".join(bytes(4) + opt.to_wire() for opt in msg.options)
    return bytes(writer.out)
