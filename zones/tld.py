"""TLD-scale zone: millions of delegations (NS, in-bailiwick glue, DS), sized by record count.

Built for speed (>= 1 M records/s unsigned): random choices come from numpy in batches and
each delegation is one preformatted string, so no dnspython objects are made per record.
Memory stays flat because only one batch is held at a time (a signed zone also keeps one
21-byte NSEC3 hash per hashed name, ~30 MB at 14 M records).

Every delegation has two NS records. A `glue_share` of them use in-bailiwick name servers
(ns1/ns2.<label>.<tld>.) with A glue (and AAAA glue for an `aaaa_share` of those), the others
point at hosting-provider name servers under `example.`; a `ds_share` of them are signed (one
DS, SHA-256 digest type).

`signed: true` writes the zone as a DNSSEC-signed TLD (what seed 002's .ch is): DNSKEY (KSK
and ZSK) at the apex, an RRSIG over every authoritative RRset (SOA, apex NS, DNSKEY,
NSEC3PARAM, the apex servers' A, every DS, every NSEC3) and an NSEC3 chain with real hashes
(SHA-1, no extra iterations, empty salt: RFC 9276) and correct next-hashed-owner links. With
`nsec3_optout` (the default) the chain covers only the signed delegations and the
authoritative names (RFC 5155 section 6), as large TLDs with a minority of signed
delegations do; without it every delegation has its NSEC3.

What .ch uses, and what is assumed:
- algorithm 13 (ECDSA P-256/SHA-256): SWITCH rolled ch. and li. from RSA to ECDSA in
  November-December 2018 (Daniel Stirnimann, "[swinog] .CH/.LI DNSSEC Algorithm Rollover",
  2018-11-12, quoted in github.com/ibauersachs/dnssecjava issue 13). An RRSIG of algorithm
  13 carries a 64-byte signature and a DNSKEY a 64-byte public key (RFC 6605).
- NSEC3 with opt-out: assumed, not checked against the live zone (this machine has no route
  out to query ch. NSEC3PARAM). Opt-out is what large, partly signed TLDs use; with it the
  xfr-tld mix carries the seed's 691 MB in 47,700 messages for 14 M records within ~1 %,
  without it ~20 % more bytes (zones/axfr.py; experiments/f3_xfr/NOTES.md).
- the signed share: SWITCH reports 6 % of .ch signed at the start of 2021, 35 % at its end
  (switch.ch news, 2022-01-06), and a 60 % target for the end of 2026; the seed's transfer
  (2024) is fitted with `ds_share` (experiments/f3_xfr/xfr-tld.yaml).

The signatures are random bytes of the real length, not valid signatures: BIND, Knot and NSD
load a primary zone's RRSIGs without validating them (none is configured to sign or validate
the TLD) and serve them by AXFR as they are; the sizes are what a transfer measures.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from pathlib import Path
from typing import Any

import dns.dnssec
import dns.name
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import numpy as np

from dnslab.errors import LabError
from zones.common import (
    SOA_TIMERS,
    HashingWriter,
    doc_v4,
    doc_v6,
    unknown_keys,
    want_float,
    want_int,
    want_name,
)

NAME = "tld"
VERSION = 3  # bump when the generated content changes for the same parameters
DEFAULTS: dict[str, Any] = {
    "records": 1_000_000,
    "origin": "test",
    "glue_share": 0.1,
    "ds_share": 0.25,
    "providers": 500,
    "signed": False,
    "nsec3_optout": True,
    "aaaa_share": 0.0,
}
MAX_RECORDS = 50_000_000
MIN_RECORDS = 1000
APEX_RECORDS = 5
SIGNED_APEX_RECORDS = 22
BATCH = 16384
# measured averages of the text format, used for the disk-space check
BYTES_PER_RECORD = 49
BYTES_PER_SIGNED_RECORD = 75

ALGORITHM = 13  # ECDSAP256SHA256, what ch. is signed with (module docstring)
SIGNATURE_BYTES = 64  # an algorithm-13 signature: r and s of 32 bytes each (RFC 6605)
PUBLIC_KEY_BYTES = 64  # an algorithm-13 public key: x and y of 32 bytes each
# a fixed validity window: the zone's bytes depend on the seed only, never on the day
INCEPTION, EXPIRATION = "20241001000000", "20241101000000"
NSEC3_ITERATIONS = 0  # RFC 9276: no extra iterations, empty salt
# the NSEC3 records' type bitmaps, by the kind byte kept beside each hash
_SIGNED_DELEGATION, _UNSIGNED_DELEGATION, _APEX, _EMPTY, _ADDRESS = 1, 2, 3, 4, 5
_BITMAPS = {_SIGNED_DELEGATION: "NS DS RRSIG", _UNSIGNED_DELEGATION: "NS",
            _APEX: "NS SOA RRSIG DNSKEY NSEC3PARAM", _EMPTY: "", _ADDRESS: "A RRSIG"}
HASH_RECORD = 21  # 20 bytes of SHA-1 and the kind byte (never 0: numpy's bytes sort keeps it)


def normalize(params: dict[str, Any]) -> dict[str, Any]:
    unknown_keys(params, DEFAULTS, NAME)
    p = {**DEFAULTS, **params}
    return {
        "records": want_int(p, "records", MIN_RECORDS, MAX_RECORDS),
        "origin": want_name(p["origin"], "origin"),
        "glue_share": want_float(p, "glue_share", 0.0, 1.0),
        "ds_share": want_float(p, "ds_share", 0.0, 1.0),
        "providers": want_int(p, "providers", 1, 100_000),
        "signed": _want_bool(p, "signed"),
        "nsec3_optout": _want_bool(p, "nsec3_optout"),
        "aaaa_share": want_float(p, "aaaa_share", 0.0, 1.0),
    }


def _want_bool(params: dict[str, Any], key: str) -> bool:
    value = params.get(key)
    if not isinstance(value, bool):
        raise LabError(f"{key} must be true or false, got {value!r}")
    return value


ID_KEYS = ("records", "origin")


def set_id(params: dict[str, Any], seed: int) -> str:
    return f"tld-{params['origin'].replace('.', '_')}-r{params['records']}-s{seed}"


def estimate_bytes(params: dict[str, Any]) -> int:
    per_record = BYTES_PER_SIGNED_RECORD if params["signed"] else BYTES_PER_RECORD
    return params["records"] * per_record


def _apex(origin: str, seed: int) -> str:
    return (
        f"$ORIGIN {origin}.\n$TTL 86400\n"
        f"@ SOA a.nic hostmaster.nic {2024010100 + seed % 100} {SOA_TIMERS}\n"
        f"@ NS a.nic\n@ NS b.nic\na.nic A {doc_v4(1)}\nb.nic A {doc_v4(255)}\n"
    )


def _delegation(lab: str, need: int, prov: int, a1: str, a2: str, tag: int, digest: str) -> str:
    """One delegation of exactly `need` (1-5) records; used for the last, shortened one."""
    if need >= 4:
        text = (
            f"{lab} NS ns1.{lab}\nns1.{lab} A {a1}\n{lab} NS ns2.{lab}\nns2.{lab} A {a2}\n"
        )
    else:
        text = f"{lab} NS ns1.hosting{prov:05d}.example.\n"
        if need >= 2:
            text += f"{lab} NS ns2.hosting{prov:05d}.example.\n"
    if need in (3, 5):
        text += f"{lab} DS {tag} 13 2 {digest}\n"
    return text


def write_zone(path: Path, params: dict[str, Any], seed: int) -> dict[str, Any]:
    """Stream the zone into `path`; returns the manifest fields (records, bytes, sha256)."""
    if params["signed"]:
        return SignedWriter(params, seed).write(path)
    total = params["records"]
    glue_share, ds_share = params["glue_share"], params["ds_share"]
    n_prov = params["providers"]
    # enough digits that every delegation label has the same width
    width = max(8, len(str(total // 2)))
    rng = np.random.default_rng(seed)
    prov = [
        (f" NS ns1.hosting{i:05d}.example.\n", f" NS ns2.hosting{i:05d}.example.\n")
        for i in range(n_prov)
    ]
    addr = [doc_v4(i) for i in range(508)]
    with HashingWriter(path, threaded=True) as w:
        w.write(_apex(params["origin"], seed), APEX_RECORDS)
        left = total - APEX_RECORDS
        index = 0
        while left > 0:
            n = BATCH
            # kind: bit 1 = in-bailiwick glue, bit 0 = signed (DS)
            kinds = (
                (rng.random(n) < glue_share).astype(np.int8) * 2
                + (rng.random(n) < ds_share).astype(np.int8)
            ).tolist()
            provs = rng.integers(0, n_prov, n).tolist()
            a1s = rng.integers(0, 508, n).tolist()
            a2s = rng.integers(0, 508, n).tolist()
            tags = rng.integers(1, 65535, n).tolist()
            digests = rng.bytes(32 * n).hex().upper()
            out: list[str] = []
            records = 0
            for j in range(n):
                lab = f"dom{index:0{width}d}"
                index += 1
                kind = kinds[j]
                need = 2 + (kind & 2) + (kind & 1)
                if need > left:
                    out.append(_delegation(lab, left, provs[j], addr[a1s[j]], addr[a2s[j]],
                                           tags[j], digests[64 * j : 64 * j + 64]))
                    records += left
                    left = 0
                    break
                if kind & 2:
                    out.append(
                        f"{lab} NS ns1.{lab}\nns1.{lab} A {addr[a1s[j]]}\n"
                        f"{lab} NS ns2.{lab}\nns2.{lab} A {addr[a2s[j]]}\n"
                    )
                else:
                    p1, p2 = prov[provs[j]]
                    out.append(f"{lab}{p1}{lab}{p2}")
                if kind & 1:
                    out.append(f"{lab} DS {tags[j]} 13 2 {digests[64 * j : 64 * j + 64]}\n")
                records += need
                left -= need
                if left == 0:
                    break
            w.write("".join(out), records)
        return w.close()


_BASE32HEX = np.frombuffer(b"0123456789abcdefghijklmnopqrstuv", dtype=np.uint8)


def _base32hex(digests: np.ndarray) -> list[str]:
    """Each row of 20 bytes as the 32 lower-case base32hex characters of an NSEC3 owner
    label (RFC 4648 section 7; 160 bits are exactly 32 five-bit groups, so no padding).
    `base64.b32hexencode` gives the same, one digest at a time and ~10x slower."""
    groups = np.unpackbits(digests, axis=1).reshape(len(digests), 32, 5)
    values = groups @ np.array([16, 8, 4, 2, 1], dtype=np.uint8)
    text = _BASE32HEX[values].tobytes().decode()
    return [text[i:i + 32] for i in range(0, len(text), 32)]


class SignedWriter:
    """Writes the signed TLD (`signed: true`): the delegations batch by batch as the unsigned
    writer does, each with its DS, RRSIGs and NSEC3 counted where it is drawn; the NSEC3
    records themselves come last, once every hashed name is known and sorted into the chain.
    """

    def __init__(self, params: dict[str, Any], seed: int) -> None:
        self.params = params
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.origin = dns.name.from_text(params["origin"])
        self.signer = self.origin.to_text()
        self.labels = len(self.origin.labels) - 1  # the apex's labels (an RRSIG's field)
        self.flags = 1 if params["nsec3_optout"] else 0
        ksk, zsk = (self._public_key() for _ in range(2))
        self.dnskeys = (f"257 3 {ALGORITHM} {ksk}", f"256 3 {ALGORITHM} {zsk}")
        self.ksk_tag, self.zsk_tag = (
            dns.dnssec.key_id(dns.rdata.from_text(dns.rdataclass.IN, dns.rdatatype.DNSKEY, key))
            for key in self.dnskeys)
        self.hashes = bytearray()

    def _public_key(self) -> str:
        return base64.b64encode(self.rng.bytes(PUBLIC_KEY_BYTES)).decode()

    def _signatures(self, n: int) -> list[str]:
        raw = self.rng.bytes(SIGNATURE_BYTES * n)
        return [binascii.b2a_base64(raw[i:i + SIGNATURE_BYTES], newline=False).decode()
                for i in range(0, len(raw), SIGNATURE_BYTES)]

    def _rrsig(self, owner: str, covered: str, labels: int, ttl: int, signature: str,
               tag: int | None = None) -> str:
        return (f"{owner} RRSIG {covered} {ALGORITHM} {labels} {ttl} {EXPIRATION} {INCEPTION} "
                f"{self.zsk_tag if tag is None else tag} {self.signer} {signature}\n")

    def _hash(self, relative: str, kind: int) -> None:
        """Keep the NSEC3 hash of `relative` (a name below the apex, "" for the apex)."""
        labels = tuple(label.encode() for label in relative.split(".") if label)
        name = dns.name.Name(labels + self.origin.labels)
        self.hashes += hashlib.sha1(name.to_digestable()).digest() + bytes([kind])

    def _apex(self) -> str:
        sig = iter(self._signatures(SIGNED_APEX_RECORDS))
        soa_ttl = int(SOA_TIMERS.split()[-1])
        text = (_apex(self.params["origin"], self.seed)
                + self._rrsig("@", "SOA", self.labels, 86400, next(sig))
                + self._rrsig("@", "NS", self.labels, 86400, next(sig))
                + "".join(f"@ DNSKEY {key}\n" for key in self.dnskeys)
                + self._rrsig("@", "DNSKEY", self.labels, 86400, next(sig), self.ksk_tag)
                + f"@ {soa_ttl} NSEC3PARAM 1 0 {NSEC3_ITERATIONS} -\n"
                + self._rrsig("@", "NSEC3PARAM", self.labels, soa_ttl, next(sig))
                + self._rrsig("a.nic", "A", self.labels + 2, 86400, next(sig))
                + self._rrsig("b.nic", "A", self.labels + 2, 86400, next(sig)))
        for relative, kind in (("", _APEX), ("nic", _EMPTY), ("a.nic", _ADDRESS),
                               ("b.nic", _ADDRESS)):
            self._hash(relative, kind)
        return text

    def write(self, path: Path) -> dict[str, Any]:
        params = self.params
        total = params["records"]
        optout = params["nsec3_optout"]
        width = max(8, len(str(total // 2)))
        prov = [(f" NS ns1.hosting{i:05d}.example.\n", f" NS ns2.hosting{i:05d}.example.\n")
                for i in range(params["providers"])]
        addr = [doc_v4(i) for i in range(508)]
        with HashingWriter(path, threaded=True) as w:
            # the apex's 4 NSEC3 records and their RRSIGs are written with the chain
            w.write(self._apex(), SIGNED_APEX_RECORDS - 8)
            left = total - SIGNED_APEX_RECORDS
            index = 0
            rng = self.rng
            while left > 0:
                n = BATCH
                glue = (rng.random(n) < params["glue_share"]).tolist()
                signed = (rng.random(n) < params["ds_share"]).tolist()
                aaaa = (rng.random(n) < params["aaaa_share"]).tolist()
                provs = rng.integers(0, len(prov), n).tolist()
                a1s = rng.integers(0, 508, n).tolist()
                a2s = rng.integers(0, 508, n).tolist()
                tags = rng.integers(1, 65535, n).tolist()
                digests = rng.bytes(32 * n).hex().upper()
                sigs = self._signatures(n)
                out: list[str] = []
                records = 0
                for j in range(n):
                    lab = f"dom{index:0{width}d}"
                    index += 1
                    hashed = signed[j] or not optout
                    need = (2 + (2 + 2 * aaaa[j]) * glue[j] + 2 * signed[j] + 2 * hashed)
                    if need > left:
                        out.append(self._last_delegation(lab, left, provs[j]))
                        records += left - (2 if not optout and left >= 3 else 0)
                        left = 0
                        break
                    if glue[j]:
                        out.append(f"{lab} NS ns1.{lab}\nns1.{lab} A {addr[a1s[j]]}\n"
                                   f"{lab} NS ns2.{lab}\nns2.{lab} A {addr[a2s[j]]}\n")
                        if aaaa[j]:
                            out.append(f"ns1.{lab} AAAA {doc_v6(index, 1)}\n"
                                       f"ns2.{lab} AAAA {doc_v6(index, 2)}\n")
                    else:
                        p1, p2 = prov[provs[j]]
                        out.append(f"{lab}{p1}{lab}{p2}")
                    if signed[j]:
                        out.append(f"{lab} DS {tags[j]} {ALGORITHM} 2 "
                                   f"{digests[64 * j : 64 * j + 64]}\n")
                        out.append(self._rrsig(lab, "DS", self.labels + 1, 86400, sigs[j]))
                    if hashed:
                        self._hash(lab, _SIGNED_DELEGATION if signed[j]
                                   else _UNSIGNED_DELEGATION)
                    # the NSEC3 and its RRSIG are counted here, written with the chain
                    records += need - 2 * hashed
                    left -= need
                    if left == 0:
                        break
                w.write("".join(out), records)
            self._write_chain(w)
            return w.close()

    def _last_delegation(self, lab: str, need: int, provider: int) -> str:
        """The last, shortened delegation: `need` records of NS (and its NSEC3 with its RRSIG
        where every delegation has one and there is room), unsigned, without glue."""
        if not self.params["nsec3_optout"] and need >= 3:
            self._hash(lab, _UNSIGNED_DELEGATION)
            need -= 2
        return "".join(f"{lab} NS ns{i + 1}.hosting{provider:05d}.example.\n"
                       for i in range(need))

    def _write_chain(self, w: HashingWriter) -> None:
        """Every kept hash as an NSEC3 record (and its RRSIG), in hash order, each pointing at
        the next and the last at the first."""
        chain = np.sort(np.frombuffer(bytes(self.hashes), dtype=f"S{HASH_RECORD}")).tobytes()
        count = len(chain) // HASH_RECORD
        soa_ttl = int(SOA_TIMERS.split()[-1])
        records = np.frombuffer(chain, dtype=np.uint8).reshape(count, HASH_RECORD)
        for start in range(0, count, BATCH):
            stop = min(start + BATCH, count)
            sigs = self._signatures(stop - start)
            # and the next batch's first (the first of all after the last)
            rows = np.append(np.arange(start, stop), stop % count)
            owners = _base32hex(records[rows, :20])
            out = []
            for i in range(start, stop):
                kind = chain[i * HASH_RECORD + 20]
                here = owners[i - start]
                out.append(f"{here} {soa_ttl} NSEC3 1 {self.flags} {NSEC3_ITERATIONS} - "
                           f"{owners[i - start + 1]} {_BITMAPS[kind]}\n")
                out.append(self._rrsig(here, "NSEC3", self.labels + 1, soa_ttl,
                                       sigs[i - start]))
            w.write("".join(out), 2 * (stop - start))


def build(out: Path, params: dict[str, Any], seed: int) -> dict[str, Any]:
    rel = f"{params['origin']}.zone"
    info = write_zone(out / rel, params, seed)
    return {"zones": [{"name": params["origin"], "file": rel, **info}]}
