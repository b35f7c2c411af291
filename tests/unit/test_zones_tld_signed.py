"""The signed TLD (zones/tld.py, `signed: true`) and the AXFR size model it is fitted with
(zones/axfr.py): exact record counts, a real NSEC3 chain, algorithm-13 sizes, the servers'
checkers, and the wire size per record against seed 002's .ch (what F3.tld.size judges)."""

from __future__ import annotations

import base64
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import dns.dnssec
import dns.name
import dns.rdatatype
import dns.zone
import pytest
import yaml

import zones
from dnslab.errors import LabError
from experiments.f3_xfr.claims import SEED_TLD
from experiments.f3_xfr.xfr_single import TLD_ZONE_PARAMS
from zones.axfr import axfr_size, zone_axfr_size
from zones.checks import check_zone_file

EXPERIMENT = Path(__file__).resolve().parents[2] / "experiments/f3_xfr/xfr-tld.yaml"
SEED_BYTES_PER_RECORD = SEED_TLD["bytes"] / SEED_TLD["records"]  # 49.4
SEED_MESSAGES_PER_RECORD = SEED_TLD["messages"] / SEED_TLD["records"]  # 1/293
BAND = 0.10  # F3.tld.size's band


def experiment_zone_params(records: int, **changes: Any) -> dict[str, Any]:
    """xfr-tld's default zone parameters (its file), at `records`."""
    params = yaml.safe_load(EXPERIMENT.read_text())["params"]
    return {**{k: params[k] for k in TLD_ZONE_PARAMS}, "records": records, **changes}


def load(zs: zones.ZoneSet) -> dns.zone.Zone:
    z = zs.zones[0]
    return dns.zone.from_file(str(z.path), origin=z.fqdn, relativize=False)


@pytest.mark.parametrize("optout", [True, False])
def test_signed_record_count_is_exact(tmp_path: Path, optout: bool) -> None:
    for records in (1000, 1001, 1002, 1003, 1004, 1005, 4321):
        zs = zones.ensure("tld", {"records": records, "signed": True, "nsec3_optout": optout,
                                  "aaaa_share": 0.5}, seed=2, out_root=tmp_path)
        body = [ln for ln in zs.zones[0].path.read_text().splitlines()
                if not ln.startswith("$")]
        assert len(body) == records == zs.manifest["totals"]["records"]
    assert sum(len(rds) for node in load(zs).nodes.values() for rds in node) == records


@pytest.mark.parametrize("optout", [True, False])
def test_signed_zone_has_a_real_nsec3_chain_and_algorithm_13_sizes(tmp_path: Path,
                                                                  optout: bool) -> None:
    zs = zones.ensure("tld", {"records": 3000, "signed": True, "nsec3_optout": optout,
                              "ds_share": 0.35, "aaaa_share": 0.5}, seed=5, out_root=tmp_path)
    zone = load(zs)
    origin = zone.origin
    types: Counter[str] = Counter()
    delegations, signed, nsec3, covered = set(), set(), {}, set()
    for name, node in zone.nodes.items():
        for rds in node:
            types[dns.rdatatype.to_text(rds.rdtype)] += len(rds)
            if rds.rdtype == dns.rdatatype.NS and name != origin:
                delegations.add(name)
            elif rds.rdtype == dns.rdatatype.DS:
                signed.add(name)
            elif rds.rdtype == dns.rdatatype.NSEC3:
                nsec3[name.labels[0].decode()] = next(iter(rds))
            elif rds.rdtype == dns.rdatatype.RRSIG:
                for sig in rds:
                    assert sig.algorithm == 13 and len(sig.signature) == 64
                    assert sig.signer == origin and sig.labels == len(name) - 1
                    covered.add((name, sig.type_covered))
            elif rds.rdtype == dns.rdatatype.DNSKEY:
                assert all(key.algorithm == 13 and len(key.key) == 64 for key in rds)
    assert {"AAAA", "A", "DS", "DNSKEY", "NSEC3PARAM", "NSEC3", "RRSIG"} <= set(types)
    # the hashed names: the apex, the empty non-terminal nic, a.nic, b.nic, and the signed
    # delegations (opt-out) or every delegation
    hashed = [origin, dns.name.from_text("nic", origin), dns.name.from_text("a.nic", origin),
              dns.name.from_text("b.nic", origin), *(signed if optout else delegations)]
    expect = {dns.dnssec.nsec3_hash(n, None, 0, 1).lower(): n for n in hashed}
    assert set(nsec3) == set(expect)
    chain = sorted(nsec3)
    for i, owner in enumerate(chain):
        rd = nsec3[owner]
        assert rd.flags == (1 if optout else 0) and rd.iterations == 0 and rd.salt == b""
        assert rd.next == base64.b32hexdecode(chain[(i + 1) % len(chain)].upper())
    # every authoritative RRset is signed: DS, NSEC3, and the apex's
    for name in signed:
        assert (name, dns.rdatatype.DS) in covered
    for owner in nsec3:
        assert (dns.name.from_text(owner, origin), dns.rdatatype.NSEC3) in covered
    for rdtype in ("SOA", "NS", "DNSKEY", "NSEC3PARAM"):
        assert (origin, dns.rdatatype.from_text(rdtype)) in covered
    assert not any(name in delegations and t == dns.rdatatype.NS for name, t in covered)


def test_signed_zone_passes_the_servers_checkers_but_for_the_signatures(tmp_path: Path) -> None:
    """named-checkzone loads it as a signed zone; kzonecheck passes it with its DNSSEC checks
    off and rejects it with them on: the RRSIGs are random bytes, which the lab's primaries
    load without validating (experiments/f3_xfr/NOTES.md)."""
    if not (shutil.which("named-checkzone") and shutil.which("kzonecheck")):
        pytest.skip("named-checkzone and kzonecheck are needed")
    zs = zones.ensure("tld", experiment_zone_params(3000), seed=3, out_root=tmp_path)
    z = zs.zones[0]
    assert check_zone_file(z.fqdn, z.path, signatures=False) == ["named-checkzone",
                                                                  "kzonecheck"]
    with pytest.raises(LabError, match="kzonecheck rejected"):
        check_zone_file(z.fqdn, z.path, ["kzonecheck"])


def test_the_experiments_zone_carries_the_seeds_bytes_and_messages_per_record(
        tmp_path: Path) -> None:
    """xfr-tld's default zone, 8,000 records, as BIND 9.18 sends it: within F3.tld.size's
    10 % of .ch's 49.4 bytes and 1/293 of a message per record."""
    zs = zones.ensure("tld", experiment_zone_params(8000), seed=1, out_root=tmp_path)
    size = zone_axfr_size(zs.zones[0].path, zs.zones[0].fqdn)
    per_byte, per_message = size.per_record()
    assert abs(per_byte / SEED_BYTES_PER_RECORD - 1) <= BAND, per_byte
    assert abs(per_message / SEED_MESSAGES_PER_RECORD - 1) <= BAND, 1 / per_message


def test_an_unsigned_zone_misses_the_seeds_size(tmp_path: Path) -> None:
    """The effect absent: the unsigned zone (the generator's defaults, xfr-tld's zone before
    issue 41) is ~32 bytes a record, far outside the band; run 2c96 measured 446.6 MB in
    36,360 messages for 14 M records of it, which the model gives within 3 %."""
    zs = zones.ensure("tld", {"records": 8000}, seed=1, out_root=tmp_path)
    size = zone_axfr_size(zs.zones[0].path, zs.zones[0].fqdn)
    per_byte, per_message = size.per_record()
    assert per_byte / SEED_BYTES_PER_RECORD - 1 < -0.30
    assert per_message / SEED_MESSAGES_PER_RECORD - 1 < -0.20
    # and the model gives what BIND sent for 14 M records of the old default zone
    assert abs(per_byte * 14e6 / 446.6e6 - 1) < 0.03
    assert abs(per_message * 14e6 / 36_360 - 1) < 0.03


def test_axfr_messages_close_at_bind_s_transfer_message_size() -> None:
    """Each message closes once its uncompressed records reach transfer-message-size; the
    first carries the question; the SOA opens and closes the stream."""
    text = "$ORIGIN t.\n$TTL 60\n@ SOA a b 1 2 3 4 5\n@ NS a\n" + "".join(
        f"n{i:04d} A 192.0.2.{i % 250 + 1}\n" for i in range(400))
    zone = dns.zone.from_text(text, origin="t.", relativize=False)
    one = axfr_size(zone, message_size=65535)
    assert (one.records, one.messages) == (403, 1)
    # an A record here: owner n0000.t. (9) + 10 + 4 = 23 bytes uncompressed
    small = axfr_size(zone, message_size=23 * 100)
    assert small.messages == 5 and small.bytes > one.bytes  # more headers, fewer pointers
    everything = axfr_size(zone, message_size=65535, suffixes=None)
    assert everything.bytes <= one.bytes  # full compression never costs more
