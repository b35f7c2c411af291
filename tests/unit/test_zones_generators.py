"""Small instances of every zone generator: checker acceptance, manifests, reuse, determinism."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

import zones
from zones.checks import available_checkers, check_zone_file

SMALL = {
    "small-zones": {"count": 20},
    "tld": {"records": 3000},
    "3gpp": {"profile": "after", "tacs": 4, "areas": 2, "apns": 3},
    "internet": {"slds": 30, "names": 60, "tlds": 4},
}


def _digest(zs: zones.ZoneSet) -> dict[str, str]:
    return {z.name: hashlib.sha256(z.path.read_bytes()).hexdigest() for z in zs.zones}


@pytest.mark.parametrize("generator", sorted(SMALL))
def test_zones_pass_named_checkzone_and_kzonecheck(generator: str, tmp_path: Path) -> None:
    if not available_checkers():
        pytest.skip("neither named-checkzone nor kzonecheck is installed")
    zs = zones.ensure(generator, SMALL[generator], seed=3, out_root=tmp_path)
    for z in zs.zones:
        ran = check_zone_file(z.fqdn, z.path)
        assert ran, "no checker ran"


@pytest.mark.parametrize("generator", sorted(SMALL))
def test_manifest_describes_the_files(generator: str, tmp_path: Path) -> None:
    zs = zones.ensure(generator, SMALL[generator], seed=3, out_root=tmp_path)
    m = json.loads((zs.path / "manifest.json").read_text())
    assert m["generator"] == generator and m["seed"] == 3
    assert m["params"] == zones.normalize(generator, SMALL[generator])
    assert len(m["zones"]) == len(zs.zones) > 0
    for entry, z in zip(m["zones"], zs.zones, strict=True):
        data = z.path.read_bytes()
        assert z.path.is_absolute() and z.path.is_relative_to(zs.path)
        assert entry["bytes"] == len(data)
        assert entry["sha256"] == hashlib.sha256(data).hexdigest()
        # one record per line that is not a directive
        lines = [ln for ln in data.decode().splitlines() if ln and not ln.startswith("$")]
        assert entry["records"] == len(lines)
        assert not z.name.endswith(".") or z.name == "."
    assert m["totals"]["records"] == sum(e["records"] for e in m["zones"])


@pytest.mark.parametrize("generator", sorted(SMALL))
def test_same_seed_same_bytes_other_seed_other_bytes(generator: str, tmp_path: Path) -> None:
    a = zones.ensure(generator, SMALL[generator], seed=5, out_root=tmp_path / "a")
    b = zones.ensure(generator, SMALL[generator], seed=5, out_root=tmp_path / "b")
    c = zones.ensure(generator, SMALL[generator], seed=6, out_root=tmp_path / "c")
    assert _digest(a) == _digest(b)
    assert _digest(a) != _digest(c)


def test_matching_manifest_is_reused_and_changed_params_regenerate(tmp_path: Path) -> None:
    first = zones.ensure("small-zones", {"count": 10}, seed=1, out_root=tmp_path)
    assert first.path.name == "small-zones-n10-s1"
    marker = first.zones[0].path.stat().st_mtime_ns
    again = zones.ensure("small-zones", {"count": 10}, seed=1, out_root=tmp_path)
    assert again.zones[0].path.stat().st_mtime_ns == marker
    # a damaged set (file size no longer matches the manifest) is regenerated
    first.zones[0].path.write_text("broken\n")
    fixed = zones.ensure("small-zones", {"count": 10}, seed=1, out_root=tmp_path)
    assert fixed.zones[0].path.read_text().startswith("$ORIGIN z00000.test.")
    other = zones.ensure("small-zones", {"count": 10, "hosts": 3}, seed=1, out_root=tmp_path)
    assert other.path != first.path
    assert not list(tmp_path.glob(".*tmp*")), "temporary build folders left behind"


def test_tld_record_count_is_exact_and_has_glue_and_ds(tmp_path: Path) -> None:
    for records in (1000, 1001, 1002, 1003, 1004, 4321):
        zs = zones.ensure("tld", {"records": records}, seed=2, out_root=tmp_path)
        text = zs.zones[0].path.read_text()
        body = [ln for ln in text.splitlines() if not ln.startswith("$")]
        assert len(body) == records == zs.manifest["totals"]["records"]
    types = {ln.split()[1] for ln in body}
    assert {"SOA", "NS", "A", "DS"} <= types


def test_addresses_stay_in_documentation_or_lab_space(tmp_path: Path) -> None:
    import ipaddress

    from zones.common import ALLOWED_NETS

    for generator, params in SMALL.items():
        zs = zones.ensure(generator, params, seed=1, out_root=tmp_path)
        for z in zs.zones:
            for line in z.path.read_text().splitlines():
                parts = line.split()
                if len(parts) >= 3 and parts[-2] in ("A", "AAAA"):
                    addr = ipaddress.ip_address(parts[-1])
                    assert any(addr in n for n in ALLOWED_NETS), line


def test_3gpp_names_follow_ts29303(tmp_path: Path) -> None:
    zs = zones.ensure("3gpp", {"profile": "after", "tacs": 2, "areas": 1}, 1, out_root=tmp_path)
    z = zs.zones[0]
    assert z.name == "epc.mnc010.mcc440.3gppnetwork.org"
    text = z.path.read_text()
    assert 'tac-lb10.tac-hb10.tac NAPTR 100 100 "s" "x-3gpp-mme:x-s3:x-s10"' in text
    for service in ("x-3gpp-sgw:x-s5-gtp:x-s8-gtp", "x-3gpp-sgw:x-s5-gtp+nc-nr",
                    "x-3gpp-sgw:x-s5-gtp+nc-v6", "x-3gpp-sgw:x-s5-gtp+nc-nr.v6",
                    "x-3gpp-pgw:x-s5-gtp+nc-nr.v6"):
        assert f'"{service}"' in text, service
    for flags in ('""', '"s"', '"a"'):
        assert f"NAPTR 100 65534 {flags}" in text or f" {flags} " in text
    hosts = [ln.split()[0] for ln in text.splitlines() if " A " in ln or " AAAA " in ln]
    node_hosts = [h for h in hosts if h.endswith(".node")]
    assert node_hosts and all(h.split(".")[0] in ("topon", "topoff") for h in node_hosts)


def test_internet_root_hints_point_only_at_lab_addresses(tmp_path: Path) -> None:
    params = {"root_servers": ["198.18.0.21", "198.18.0.22"], "tld_servers": ["198.18.0.31"],
              "sld_servers": ["198.18.0.41", "198.18.0.42"], "slds": 40, "names": 100}
    zs = zones.ensure("internet", params, 1, out_root=tmp_path)
    hints = [ln.split() for ln in zs.file("root_hints").read_text().splitlines()]
    addrs = [f[3] for f in hints if f[2] in ("A", "AAAA")]
    assert all(f[0] == "." for f in hints if f[2] == "NS")
    assert addrs == ["198.18.0.21", "198.18.0.22"]
    roles = {z.role for z in zs.zones}
    assert roles == {"root", "tld", "sld"}
    popular = zs.file("popular_names").read_text().splitlines()
    assert len(popular) == 100 and len(set(popular)) == 100
    sld_names = {z.name for z in zs.zones if z.role == "sld"}
    for line in popular:
        name, qtype = line.split()
        assert qtype in ("A", "AAAA", "MX")
        assert name.removeprefix("www.").removeprefix("mail.") in sld_names
    # every SLD is delegated from its TLD zone with glue for the lab server
    tld_text = {z.name: z.path.read_text() for z in zs.zones if z.role == "tld"}
    for z in zs.zones:
        if z.role == "sld":
            label, tld = z.name.split(".", 1)
            assert f"{label} NS ns1.{label}\n" in tld_text[tld]
            assert set(z.servers) <= set(params["sld_servers"])
