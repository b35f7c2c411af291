"""A real answer against the modelled full answer: record by record, and re-encoded with full
name compression (experiments.f1_tcp_fallback.responses.compare_with_model,
zones.model.record_difference)."""

from __future__ import annotations

import dns.message
import dns.name
import dns.rdatatype
import dns.rrset
import dns.zone

from experiments.f1_tcp_fallback.responses import compare_with_model
from zones import model

ZONE = """
$ORIGIN epc.example.
$TTL 300
@ SOA ns1 hostmaster 1 3600 600 86400 300
@ NS ns1
ns1 A 192.0.2.53
tac NAPTR 10 10 "s" "x-3gpp-sgw:x-s5-gtp" "" _sgw.node.a.b.epc.example.
_sgw.node.a.b SRV 10 10 2123 topon.s5.node.a.b.epc.example.
topon.s5.node.a.b A 192.0.2.1
topon.s5.node.a.b AAAA 2001:db8::1
"""


def _full() -> dns.message.Message:
    zone = dns.zone.from_text(ZONE, origin="epc.example.", relativize=False)
    return model.full_response(zone, "tac.epc.example.")


def test_the_full_answer_compares_equal_whatever_its_order_and_case() -> None:
    full = _full()
    received = dns.message.from_wire(full.to_wire())
    received.additional.reverse()
    for rrset in received.additional:
        rrset.name = dns.name.from_text(rrset.name.to_text().upper())
    assert compare_with_model(received.to_wire(), full) == {
        "missing": 0, "extra": 0, "size_full_compression": len(full.to_wire())}


def test_a_missing_and_an_extra_record_are_counted() -> None:
    full = _full()
    received = dns.message.from_wire(full.to_wire())
    received.additional = [r for r in received.additional if r.rdtype != dns.rdatatype.AAAA]
    received.additional.append(dns.rrset.from_text("ns1.epc.example.", 300, "IN", "A",
                                                   "192.0.2.99"))
    assert model.record_difference(received, full) == (1, 1)
    shape = compare_with_model(received.to_wire(), full)
    assert (shape["missing"], shape["extra"]) == (1, 1)
