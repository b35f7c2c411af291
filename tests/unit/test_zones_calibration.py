"""The modelled full response of the 3GPP `after` profile matches seed 000, and the mobile-core
query mix truncates the targeted share of queries."""

from __future__ import annotations

from pathlib import Path

import dns.message
import pytest

import zones
from zones import model
from zones.queries import MOBILE_MIX, mobile_core, read_manifest, water_torture

TARGET_BYTES = 23_069


@pytest.fixture(scope="module")
def after(tmp_path_factory: pytest.TempPathFactory) -> zones.ZoneSet:
    return zones.ensure("3gpp", {"profile": "after"}, 1, out_root=tmp_path_factory.mktemp("z"))


@pytest.fixture(scope="module")
def before(tmp_path_factory: pytest.TempPathFactory) -> zones.ZoneSet:
    return zones.ensure("3gpp", {"profile": "before"}, 1, out_root=tmp_path_factory.mktemp("z"))


def _zone(zs: zones.ZoneSet):
    return model.load_zone(zs.zones[0].path, zs.zones[0].fqdn)


def test_after_tac_response_matches_seed(after: zones.ZoneSet) -> None:
    zone = _zone(after)
    for tac in after.manifest["extra"]["tac_names"]:
        m = model.measure(zone, tac, "NAPTR", 4096)
        assert abs(m.answer - 93) <= 2, m
        assert abs(m.authority - 14) <= 2, m
        assert abs(m.additional - 219) <= 2, m
        assert abs(m.size - TARGET_BYTES) <= 0.05 * TARGET_BYTES, m
        assert m.truncated


def test_full_response_is_a_parseable_message_with_rfc3403_additionals(
    after: zones.ZoneSet,
) -> None:
    zone = _zone(after)
    tac = after.manifest["extra"]["tac_names"][0]
    msg = model.full_response(zone, tac, "NAPTR")
    wire = msg.to_wire(max_size=65535)
    parsed = dns.message.from_wire(wire)
    assert parsed.flags & dns.flags.AA
    add_types = {(r.name, r.rdtype) for r in parsed.additional}
    for rr in parsed.answer[0]:
        flags = rr.flags.decode()
        if flags == "s":
            assert (rr.replacement, dns.rdatatype.SRV) in add_types
        elif flags == "a":
            assert {(rr.replacement, dns.rdatatype.A), (rr.replacement, dns.rdatatype.AAAA)} & (
                add_types
            )
    ns_names = {rd.target for rd in parsed.authority[0]}
    assert all((n, dns.rdatatype.A) in add_types for n in ns_names)


def test_before_answer_is_about_one_and_a_half_times_smaller(
    before: zones.ZoneSet, after: zones.ZoneSet
) -> None:
    tac_b = before.manifest["extra"]["tac_names"][0]
    tac_a = after.manifest["extra"]["tac_names"][0]
    size_b = model.measure(_zone(before), tac_b).size
    size_a = model.measure(_zone(after), tac_a).size
    assert 1.35 <= size_a / size_b <= 1.65


def test_nxdomain_and_nodata_carry_the_soa(after: zones.ZoneSet) -> None:
    zone = _zone(after)
    origin = after.zones[0].name
    nx = model.measure(zone, f"nothing-here.{origin}", "A")
    assert nx.rcode == "NXDOMAIN" and nx.answer == 0 and nx.authority == 1
    tac = after.manifest["extra"]["tac_names"][0]
    nodata = model.measure(zone, tac, "A")
    assert nodata.rcode == "NOERROR" and nodata.answer == 0 and nodata.authority == 1


def test_default_mobile_mix_truncates_23_percent(after: zones.ZoneSet) -> None:
    qf = mobile_core(after, count=50_000, seed=4)
    m = qf.manifest["measured"]
    assert abs(m["truncated_share"] - 0.23) <= 0.02
    for qtype, share in MOBILE_MIX.items():
        assert abs(m["by_type"][qtype] - share) <= max(0.003, 0.1 * share), qtype
    lines = qf.path.read_text().splitlines()
    assert len(lines) == 50_000
    # re-measure the share independently from the file with the model
    zone = _zone(after)
    cache: dict[str, bool] = {}
    truncated = 0
    for line in lines:
        if line not in cache:
            name, qtype = line.split()
            cache[line] = model.measure(zone, name, qtype).truncated
        truncated += cache[line]
    assert truncated / len(lines) == pytest.approx(m["truncated_share"])


def test_truncating_parameter_moves_the_share(after: zones.ZoneSet) -> None:
    low = mobile_core(after, count=20_000, truncating=0.05, seed=2).manifest["measured"]
    high = mobile_core(after, count=20_000, truncating=0.6, seed=2).manifest["measured"]
    assert abs(low["truncated_share"] - 0.05) <= 0.02
    assert abs(high["truncated_share"] - 0.6) <= 0.02


def test_query_files_are_deterministic_and_reused(after: zones.ZoneSet, tmp_path: Path) -> None:
    a = mobile_core(after, count=5000, seed=9)
    before_mtime = a.path.stat().st_mtime_ns
    again = mobile_core(after, count=5000, seed=9)
    assert again.path.stat().st_mtime_ns == before_mtime
    data = a.path.read_bytes()
    a.path.unlink()
    regenerated = mobile_core(after, count=5000, seed=9)
    assert regenerated.path.read_bytes() == data
    assert mobile_core(after, count=5000, seed=10).path.read_bytes() != data

    w1 = water_torture(tmp_path / "w1", ["victim.test", "other.example"], count=3000, seed=1)
    w2 = water_torture(tmp_path / "w2", ["victim.test", "other.example"], count=3000, seed=1)
    w3 = water_torture(tmp_path / "w3", ["victim.test", "other.example"], count=3000, seed=2)
    assert w1.path.read_bytes() == w2.path.read_bytes() != w3.path.read_bytes()
    lines = w1.path.read_text().splitlines()
    assert len(lines) == 3000 and len(set(lines)) > 2990
    assert all(ln.endswith((".victim.test A", ".other.example A")) for ln in lines)
    assert read_manifest(w1.path)["files"]["queries"]["records"] == 3000
