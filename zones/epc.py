"""3GPP TS 29.303 EPC node-selection zone (`epc.mnc<MNC>.mcc<MCC>.3gppnetwork.org`), after seed 000.

The zone holds the S-NAPTR tree an MME walks to pick gateways:

* APN names (`<ni>.apn.epc...`): NAPTR flags "" per PGW group and capability family, pointing
  at second-level names; those hold flags "s" records (-> `_pgw...` SRV -> A) for IPv4 PGWs and
  flags "a" records (-> AAAA) for IPv6 single-stack PGWs.
* TAC names (`tac-lb<xx>.tac-hb<yy>.tac.epc...`): one NAPTR RRset per TAC with one MME record
  ("s", -> SRV -> A), one "s" record per SGW of the TAC's area (pref 35000 for the
  topologically close ones with service x-s5-gtp:x-s8-gtp, 65534 for the rest), and flags "a"
  records per network capability: `+nc-nr` SGWs (A), and, in the `after` profile, one SGW
  record per IPv6 single-stack PGW for each of `+nc-v6` and `+nc-nr.v6` (AAAA): the topon
  co-location rule (TS 29.303 Annex C.4) needs an SGW whose canonical node name matches each
  PGW, so the SGW sets grow with the PGW sets.
* host names `<topon|topoff>.<interface>.<canonical-node-name>` under `node.epc...`.

Profiles: `before` (legacy records, capability nr only) and `after` (IPv6 single-stack PGW
records added, SGW sets grown to match). The `after` defaults are calibrated so that the
modelled full response (see `zones.model`) for a TAC name has ANSWER 93, AUTHORITY 14,
ADDITIONAL 219 (with OPT) and about 23 kB, as in the seed's dig output.

Addresses: IPv4 from 192.0.2.0/24 and 198.51.100.0/24 (reused when the zone has more hosts
than the 508 addresses), IPv6 from 2001:db8::/32.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from dnslab.errors import LabError
from zones.common import (
    SOA_TIMERS,
    HashingWriter,
    doc_v4,
    doc_v6,
    unknown_keys,
    want_int,
)

NAME = "3gpp"
VERSION = 2  # bump when the generated content changes for the same parameters
PROFILES = ("before", "after")
CAPABILITIES = ("nr", "v6", "nr.v6")
# label used in host and second-level APN names for each capability family
FAMILY_LABEL = {"": "lg", "nr": "5g", "v6": "v6", "nr.v6": "5gv6"}
V6_CAPS = ("v6", "nr.v6")

COMMON_DEFAULTS: dict[str, Any] = {
    "mcc": "440",
    "mnc": "010",
    "apns": 8,
    "tacs": 16,
    "areas": 4,
    "pgws": 26,
    "pgw_groups": 13,
    "sgws": 36,
    "sgws_close": 12,
    "sgws_nr": 10,
    "mmes": 2,
    "name_servers": 14,
}
PROFILE_DEFAULTS: dict[str, dict[str, Any]] = {
    "before": {"capabilities": "nr", "pgws_v6": 0},
    "after": {"capabilities": "nr,v6,nr.v6", "pgws_v6": 23},
}
KNOWN = set(COMMON_DEFAULTS) | {"profile", "capabilities", "pgws_v6"}
TTL = 300


def _digits3(value: Any, key: str) -> str:
    text = str(value)
    if len(text) != 3 or not text.isdigit():
        raise LabError(f"{key} must be exactly 3 digits (e.g. 440 or 010), got {value!r}")
    return text


def normalize(params: dict[str, Any]) -> dict[str, Any]:
    unknown_keys(params, KNOWN, NAME)
    profile = params.get("profile", "after")
    if profile not in PROFILES:
        raise LabError(f"unknown 3gpp profile {profile!r}", hint="use before or after")
    p = {**COMMON_DEFAULTS, **PROFILE_DEFAULTS[profile], **params}
    caps_raw = p["capabilities"]
    caps = caps_raw.split(",") if isinstance(caps_raw, str) else list(caps_raw)
    caps = [c.strip() for c in caps if c.strip()]
    bad = [c for c in caps if c not in CAPABILITIES]
    if bad:
        raise LabError(
            f"unknown network capability {bad[0]!r}", hint=f"use {', '.join(CAPABILITIES)}"
        )
    out: dict[str, Any] = {
        "profile": profile,
        "mcc": _digits3(p["mcc"], "mcc"),
        "mnc": _digits3(p["mnc"], "mnc"),
        "apns": want_int(p, "apns", 1, 10_000),
        "tacs": want_int(p, "tacs", 1, 65_536),
        "areas": want_int(p, "areas", 1, 1000),
        "pgws": want_int(p, "pgws", 1, 1000),
        "pgw_groups": want_int(p, "pgw_groups", 1, 1000),
        "pgws_v6": want_int(p, "pgws_v6", 0, 1000),
        "sgws": want_int(p, "sgws", 1, 1000),
        "sgws_close": want_int(p, "sgws_close", 0, 1000),
        "sgws_nr": want_int(p, "sgws_nr", 0, 1000),
        "mmes": want_int(p, "mmes", 1, 100),
        "name_servers": want_int(p, "name_servers", 1, 26),
        "capabilities": ",".join(c for c in CAPABILITIES if c in caps),
    }
    if out["sgws_close"] > out["sgws"]:
        raise LabError("sgws_close must not exceed sgws")
    if out["pgw_groups"] > out["pgws"]:
        raise LabError("pgw_groups must not exceed pgws")
    if out["areas"] > out["tacs"]:
        raise LabError("areas must not exceed tacs")
    return out


ID_KEYS = ("profile", "mcc", "mnc")


def set_id(params: dict[str, Any], seed: int) -> str:
    return f"3gpp-{params['profile']}-mnc{params['mnc']}-mcc{params['mcc']}-s{seed}"


def origin(params: dict[str, Any]) -> str:
    return f"epc.mnc{params['mnc']}.mcc{params['mcc']}.3gppnetwork.org"


def estimate_bytes(params: dict[str, Any]) -> int:
    per_tac = 120 * (1 + params["sgws"] + params["sgws_nr"] + 2 * params["pgws_v6"])
    return params["tacs"] * per_tac + 2_000_000


def tac_name(index: int) -> str:
    """Relative TAC owner for the index-th TAC (TAC code 0x1010 + index)."""
    code = 0x1010 + index
    return f"tac-lb{code & 0xFF:02x}.tac-hb{code >> 8:02x}.tac"


def apn_name(index: int) -> str:
    """Relative APN owner; APN 0 is the mass-market APN that every MME queries."""
    ni = "internet.example" if index == 0 else f"corp{index:02d}.example"
    return f"{ni}.apn"


class _Addr:
    """Deterministic address assignment: a seeded permutation of the documentation /24s."""

    def __init__(self, rng: random.Random):
        self._v4 = list(range(508))
        rng.shuffle(self._v4)
        self._n4 = 0
        self._n6 = 0
        self._salt = rng.randrange(1, 0xFFFF)

    def v4(self) -> str:
        a = doc_v4(self._v4[self._n4 % 508])
        self._n4 += 1
        return a

    def v6(self) -> str:
        self._n6 += 1
        return doc_v6(self._salt, self._n6 >> 16, self._n6 & 0xFFFF, 1)


class _Names:
    """Canonical node names in the seed's style, `<role>.<family>.<nn>.<site>.<tac-area>.node`,
    and host names `topon.<interface>.<canonical node name>`. Site codes (3 digits) are drawn
    per node from the seed."""

    def __init__(self, rng: random.Random, params: dict[str, Any]):
        per_area = params["sgws"] + params["sgws_nr"] + 2 * params["pgws_v6"]
        self._site = [[rng.randrange(200, 300) for _ in range(per_area)]
                      for _ in range(params["areas"])]
        n_pgw = params["pgws"] + params["pgws_v6"]
        self._pgw_site = [rng.randrange(100, 200) for _ in range(n_pgw)]
        self._sgws = params["sgws"]
        self._nr = params["sgws_nr"]
        self._v6 = params["pgws_v6"]

    def sgw(self, i: int, area: int) -> str:
        return f"sgw.{i:02d}.{self._site[area][i]}.tac{area:02d}.node"

    def sgw_cap(self, cap: str, i: int, area: int) -> str:
        if cap == "nr":
            slot = self._sgws + i
        else:
            slot = self._sgws + self._nr + i + (self._v6 if cap == "nr.v6" else 0)
        site = self._site[area][slot]
        return f"topon.s5.sgw.{FAMILY_LABEL[cap]}.{i:02d}.{site}.tac{area:02d}.node"

    def pgw(self, p: int, group: int, cap: str = "") -> str:
        shift = self._pgw_site[0] if cap in V6_CAPS else 0
        site = self._pgw_site[(p + shift) % len(self._pgw_site)]
        return f"pgw.{FAMILY_LABEL[cap]}.{p:02d}.{site}.g{group:02d}.node"


def _pgw_host(names: _Names, iface: str, p: int, group: int, cap: str = "") -> str:
    return f"topon.{iface}.{names.pgw(p, group, cap)}"


def _pgw_srv(names: _Names, p: int, group: int, cap: str) -> str:
    return f"_pgw.{names.pgw(p, group, cap)}"


def _service(node: str, proto: str, cap: str) -> str:
    return f"x-3gpp-{node}:{proto}" + (f"+nc-{cap}" if cap else "")


def _naptr(owner: str, pref: int, flags: str, service: str, repl: str, o: str) -> str:
    return f'{owner} NAPTR 100 {pref} "{flags}" "{service}" "" {repl}.{o}.\n'


def write_zone(path: Path, params: dict[str, Any], seed: int) -> dict[str, Any]:
    """Write the EPC zone to `path` (streamed by owner group) and return manifest fields."""
    rng = random.Random(seed)
    addr = _Addr(rng)
    names = _Names(rng, params)
    o = origin(params)
    caps = [c for c in params["capabilities"].split(",") if c]
    v6_caps = [c for c in caps if c in V6_CAPS]
    n_areas, n_groups = params["areas"], params["pgw_groups"]
    pgws_v6 = params["pgws_v6"] if v6_caps else 0

    with HashingWriter(path) as w:
        ns = params["name_servers"]
        lines = [
            f"$ORIGIN {o}.\n$TTL {TTL}\n",
            f"@ SOA ns01 hostmaster {2024010100 + seed % 100} {SOA_TIMERS}\n",
        ]
        lines += [f"@ NS ns{k + 1:02d}\n" for k in range(ns)]
        lines += [f"ns{k + 1:02d} A {addr.v4()}\n" for k in range(ns)]
        w.write("".join(lines), 1 + 2 * ns)

        # --- TAC NAPTR sets: every TAC of an area gets the area's set
        for t in range(params["tacs"]):
            area = t % n_areas
            owner = tac_name(t)
            out = [
                _naptr(owner, 100, "s", "x-3gpp-mme:x-s3:x-s10",
                       f"_mme.pool.{area:02d}.tac{area:02d}.node", o)
            ]
            for i in range(params["sgws"]):
                close = i < params["sgws_close"]
                proto = "x-s5-gtp:x-s8-gtp" if close else "x-s5-gtp"
                out.append(
                    _naptr(
                        owner,
                        35000 if close else 65534,
                        "s",
                        _service("sgw", proto, ""),
                        f"_sgw.{names.sgw(i, area)}",
                        o,
                    )
                )
            if "nr" in caps:
                for i in range(params["sgws_nr"]):
                    out.append(
                        _naptr(
                            owner, 65534, "a", _service("sgw", "x-s5-gtp", "nr"),
                            names.sgw_cap("nr", i, area), o,
                        )
                    )
            for cap in v6_caps:
                for j in range(pgws_v6):
                    out.append(
                        _naptr(
                            owner, 65534, "a", _service("sgw", "x-s5-gtp", cap),
                            names.sgw_cap(cap, j, area), o,
                        )
                    )
            w.write("".join(out), len(out))

        # --- per area: MME pool, SGW SRV sets and hosts
        for area in range(n_areas):
            out = []
            for m in range(params["mmes"]):
                out.append(
                    f"_mme.pool.{area:02d}.tac{area:02d}.node SRV 100 100 2123 "
                    f"topon.s10.mme.{m:02d}.pool.{area:02d}.tac{area:02d}.node\n"
                )
            for m in range(params["mmes"]):
                host = f"topon.s10.mme.{m:02d}.pool.{area:02d}.tac{area:02d}.node"
                out.append(f"{host} A {addr.v4()}\n")
            for i in range(params["sgws"]):
                node = names.sgw(i, area)
                out.append(f"_sgw.{node} SRV 100 100 2123 topon.s5.{node}\n")
                out.append(f"_sgw.{node} SRV 100 100 2123 topon.s8.{node}\n")
                out.append(f"topon.s5.{node} A {addr.v4()}\n")
                out.append(f"topon.s8.{node} A {addr.v4()}\n")
            if "nr" in caps:
                for i in range(params["sgws_nr"]):
                    out.append(f"{names.sgw_cap('nr', i, area)} A {addr.v4()}\n")
            for cap in v6_caps:
                for j in range(pgws_v6):
                    out.append(f"{names.sgw_cap(cap, j, area)} AAAA {addr.v6()}\n")
            w.write("".join(out), len(out))

        # --- APNs: top-level "" sets, second-level "s" / "a" sets
        groups_pgws: list[list[int]] = [[] for _ in range(n_groups)]
        for p in range(params["pgws"]):
            groups_pgws[p % n_groups].append(p)
        groups_v6: list[list[int]] = [[] for _ in range(n_groups)]
        for j in range(pgws_v6):
            groups_v6[j % n_groups].append(j)
        v4_caps = [""] + [c for c in caps if c not in V6_CAPS]
        for k in range(params["apns"]):
            apn = apn_name(k)
            groups = range(n_groups) if k == 0 else [k % n_groups]
            top: list[str] = []
            second: list[str] = []
            for g in groups:
                for cap in v4_caps:
                    sub = f"{FAMILY_LABEL[cap]}.g{g:02d}.{apn}"
                    pref = rng.randrange(62000, 65535)
                    top.append(_naptr(apn, pref, "", _service("pgw", "x-s5-gtp", cap), sub, o))
                    for p in groups_pgws[g]:
                        second.append(
                            _naptr(sub, 65435, "s", _service("pgw", "x-s5-gtp", cap),
                                   _pgw_srv(names, p, g, cap), o)
                        )
                for cap in v6_caps:
                    if not groups_v6[g]:
                        continue
                    sub = f"{FAMILY_LABEL[cap]}.g{g:02d}.{apn}"
                    pref = rng.randrange(62000, 65535)
                    top.append(_naptr(apn, pref, "", _service("pgw", "x-s5-gtp", cap), sub, o))
                    for j in groups_v6[g]:
                        second.append(
                            _naptr(sub, 65435, "a", _service("pgw", "x-s5-gtp", cap),
                                   _pgw_host(names, "s5", j, g, cap), o)
                        )
            w.write("".join(top) + "".join(second), len(top) + len(second))

        # --- PGW SRV sets and hosts
        out = []
        for g in range(n_groups):
            for cap in v4_caps:
                for p in groups_pgws[g]:
                    srv = _pgw_srv(names, p, g, cap)
                    out.append(f"{srv} SRV 100 100 2123 {_pgw_host(names, 's5', p, g, cap)}\n")
                    out.append(f"{srv} SRV 100 100 2123 {_pgw_host(names, 's8', p, g, cap)}\n")
                    out.append(f"{_pgw_host(names, 's5', p, g, cap)} A {addr.v4()}\n")
                    out.append(f"{_pgw_host(names, 's8', p, g, cap)} A {addr.v4()}\n")
            for cap in v6_caps:
                for j in groups_v6[g]:
                    out.append(f"{_pgw_host(names, 's5', j, g, cap)} AAAA {addr.v6()}\n")
        w.write("".join(out), len(out))
        return w.close()


def build(out: Path, params: dict[str, Any], seed: int) -> dict[str, Any]:
    name = origin(params)
    rel = f"{name}.zone"
    info = write_zone(out / rel, params, seed)
    return {
        "zones": [{"name": name, "file": rel, **info}],
        "extra": {"tac_names": [f"{tac_name(t)}.{name}" for t in range(params["tacs"])],
                  "apn_names": [f"{apn_name(k)}.{name}" for k in range(params["apns"])]},
    }
