"""zones.wire: message sizes under dnspython's and BIND 9.12-9.18's name compression."""

from __future__ import annotations

from pathlib import Path

import dns.message
import dns.rrset
import pytest

from zones import wire


def _response(*additional: tuple[str, str, str]) -> dns.message.Message:
    query = dns.message.make_query("svc.zone.example.", "NAPTR", use_edns=0, payload=4096)
    msg = dns.message.make_response(query)
    msg.answer.append(dns.rrset.from_text(
        "svc.zone.example.", 300, "IN", "NAPTR",
        '10 10 "s" "x-3gpp-sgw:x-s5-gtp" "" _sgw.node.a.b.zone.example.'))
    msg.authority.append(dns.rrset.from_text("zone.example.", 300, "IN", "NS",
                                             "ns1.zone.example.", "ns2.zone.example."))
    for name, rdtype, text in additional:
        msg.additional.append(dns.rrset.from_text(name, 300, "IN", rdtype, text))
    return msg


MESSAGES = [
    _response(),
    _response(("_sgw.node.a.b.zone.example.", "SRV", "10 10 2123 topon.s5.node.a.b.zone.example."),
              ("topon.s5.node.a.b.zone.example.", "A", "192.0.2.1"),
              ("ns1.zone.example.", "AAAA", "2001:db8::1")),
]


@pytest.mark.parametrize("msg", MESSAGES)
def test_the_writer_with_every_suffix_is_dnspython(msg: dns.message.Message) -> None:
    mine = wire.write(msg, wire.SuffixWriter(None, keeps_uncompressed=False))
    assert len(mine) == len(msg.to_wire()) == wire.wire_size(msg, "full")


def test_bind_looks_up_two_suffixes_only() -> None:
    # topon.s5.node.a.b.zone.example. is neither in BIND's table nor is its parent
    # (s5.node...): BIND writes all of it; dnspython writes "topon.s5.node.a.b" and a
    # pointer to "zone.example."
    msg = _response(("topon.s5.node.a.b.zone.example.", "A", "192.0.2.1"))
    full, bind = wire.wire_size(msg, "full"), wire.wire_size(msg, "two-suffix")
    whole = len(b"\x05topon\x02s5\x04node\x01a\x01b\x04zone\x07example\x00")
    assert bind - full == whole - (len(b"\x05topon\x02s5\x04node\x01a\x01b") + 2)


def test_bind_points_at_names_it_was_told_not_to_compress() -> None:
    # the SRV owner is the NAPTR replacement: BIND keeps the uncompressed replacement in its
    # table and points at it, dnspython writes the SRV owner against a shorter suffix
    msg = _response(("_sgw.node.a.b.zone.example.", "SRV", "10 10 2123 t.zone.example."))
    bind = wire.write(msg, wire.SuffixWriter(2, keeps_uncompressed=True))
    without = wire.write(msg, wire.SuffixWriter(2, keeps_uncompressed=False))
    assert len(without) - len(bind) == len(b"\x04_sgw\x04node\x01a\x01b\x04zone\x07example\x00") - 2


def test_an_unknown_compression_is_refused() -> None:
    with pytest.raises(ValueError, match="two-suffix"):
        wire.wire_size(MESSAGES[0], "lz4")


BIND916 = sorted((Path(__file__).resolve().parents[1] / "fixtures" / "bind916").glob("*.bin"))


@pytest.mark.parametrize("answer", BIND916, ids=[p.stem for p in BIND916])
def test_two_suffix_compression_is_what_bind_9_16_sends(answer: Path) -> None:
    # TAC and APN answers over TCP as BIND 9.16.50 sent them in the tcp-fallback lab
    # (records before/after): re-encoded in BIND's own record order with its two-suffix
    # table they come out at exactly the bytes received; with full compression, smaller
    raw = answer.read_bytes()
    msg = dns.message.from_wire(raw)
    assert wire.wire_size(msg, "two-suffix") == len(raw)
    assert wire.wire_size(msg, "full") < len(raw)


def test_the_bind_answers_are_all_there() -> None:
    assert len(BIND916) == 4
