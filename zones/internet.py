"""Emulated internet for resolver experiments: root zone, TLD zones, second-level zones,
a root hints file that names only lab addresses, and a popular-names list for dnsperf.

TLD names come from reserved space first (`example`, `test`, `internal`), then `lab<NN>`
(only ever served by the lab's own root, which no real resolver sees). Unbound treats `test.`
as a default local zone; a resolver config must say `local-zone: "test." nodefault` (the same
for `invalid`/`onion`, which are not used here) to resolve names under it.

Root servers are `<letter>.root-servers.<first tld>.`; their A records live in the first TLD
zone and as glue in the root zone. TLD servers are `ns<k>.nic.<tld>.` (glue in the root),
second-level servers `ns<k>.<sld>.<tld>.` (glue in the TLD zone).

The tail real traffic has: `slow_pct` % of the second-level zones are delegated to
`slow_servers` and `dead_pct` % to `dead_servers` (the resolver lab gives those nodes a long,
lossy or fully lossy WAN link: slow answers, timeouts, SERVFAIL), `broken_pct` % to
`broken_servers` (servers that answer, but SERVFAIL: the lab's broken node has those zones
configured without their data, as a secondary whose zone expired; each broken zone is
delegated to every broken server address, so a resolver tries them all before it gives up,
as for a zone whose name servers all lost it), and `nxdomain_pct` % of
the popular list are names that do not exist (`nx<k>.<sld>`, answered NXDOMAIN by the zone's
server; about 7 % of real resolver traffic). The tiers draw from one stream in the order dead,
slow, broken, so adding a tier leaves the others' zones where they were.
"""

from __future__ import annotations

import random
import string
from pathlib import Path
from typing import Any

from dnslab.errors import LabError
from zones.common import (
    SOA_TIMERS,
    doc_v4,
    doc_v6,
    unknown_keys,
    want_addresses,
    want_int,
    write_small_file,
)

NAME = "internet"
VERSION = 3  # bump when the generated content changes for the same parameters
RESERVED_TLDS = ("example", "test", "internal")
DEFAULTS: dict[str, Any] = {
    "root_servers": ["198.18.0.11"],
    "tld_servers": ["198.18.0.12"],
    "sld_servers": ["198.18.0.13"],
    "tlds": 3,
    "slds": 10_000,
    "names": 10_000,
    "slow_servers": [],
    "dead_servers": [],
    "broken_servers": [],
    "slow_pct": 0.0,
    "dead_pct": 0.0,
    "broken_pct": 0.0,
    "nxdomain_pct": 0.0,
}
# (prefix, type) candidates for popular names, in the order they are used per SLD
NAME_KINDS = (("www.", "A"), ("", "A"), ("www.", "AAAA"), ("mail.", "A"), ("", "MX"))
SYLLABLES = [c + v for c in "bdfghklmnprstvz" for v in "aeiou"]


def normalize(params: dict[str, Any]) -> dict[str, Any]:
    unknown_keys(params, DEFAULTS, NAME)
    p = {**DEFAULTS, **params}
    out = {
        "root_servers": want_addresses(p["root_servers"], "root_servers"),
        "tld_servers": want_addresses(p["tld_servers"], "tld_servers"),
        "sld_servers": want_addresses(p["sld_servers"], "sld_servers"),
        "tlds": want_int(p, "tlds", 1, 99),
        "slds": want_int(p, "slds", 1, 1_000_000),
        "names": want_int(p, "names", 1, 5_000_000),
        "slow_servers": want_addresses(p["slow_servers"], "slow_servers")
        if p["slow_servers"] else [],
        "dead_servers": want_addresses(p["dead_servers"], "dead_servers")
        if p["dead_servers"] else [],
        "broken_servers": want_addresses(p["broken_servers"], "broken_servers")
        if p["broken_servers"] else [],
    }
    for key in ("slow_pct", "dead_pct", "broken_pct", "nxdomain_pct"):
        try:
            out[key] = float(p[key])
        except (TypeError, ValueError):
            raise LabError(f"{key} must be a number", hint="a percentage, e.g. 7") from None
        if not 0 <= out[key] <= 100:
            raise LabError(f"{key} must be between 0 and 100", hint=f"got {p[key]}")
    for share, servers in (("slow_pct", "slow_servers"), ("dead_pct", "dead_servers"),
                           ("broken_pct", "broken_servers")):
        if out[share] and not out[servers]:
            raise LabError(f"{share} needs {servers}", hint=f"the addresses of the {servers}")
    if len(out["root_servers"]) > 13:
        raise LabError("at most 13 root server addresses (a ... m)")
    if out["names"] > len(NAME_KINDS) * out["slds"]:
        raise LabError(
            f"names ({out['names']:,}) exceeds {len(NAME_KINDS)} per second-level zone",
            hint="raise slds or lower names",
        )
    return out


ID_KEYS = ("tlds", "slds", "names")


def set_id(params: dict[str, Any], seed: int) -> str:
    return (
        f"internet-t{params['tlds']}-d{params['slds']}-n{params['names']}-s{seed}"
    )


def estimate_bytes(params: dict[str, Any]) -> int:
    return params["slds"] * 700 + params["names"] * 40 + 100_000


def tld_names(count: int) -> list[str]:
    extra = [f"lab{i:02d}" for i in range(count)]
    return (list(RESERVED_TLDS) + extra)[:count]


def _sld_labels(rng: random.Random, count: int) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    while len(out) < count:
        word = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))
        if rng.random() < 0.2:
            word += str(rng.randint(1, 99))
        if rng.random() < 0.05:
            word += "-" + rng.choice(string.ascii_lowercase) * 2
        if word not in seen:
            seen.add(word)
            out.append(word)
    return out


def _soa(primary: str, serial: int) -> str:
    return f"@ SOA {primary} hostmaster.{primary} {serial} {SOA_TIMERS}\n"


def build(out: Path, params: dict[str, Any], seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    serial = 2024010100 + seed % 100
    tlds = tld_names(params["tlds"])
    root_addrs, tld_addrs, sld_addrs = (
        params["root_servers"], params["tld_servers"], params["sld_servers"],
    )
    letters = string.ascii_lowercase
    root_names = [f"{letters[i]}.root-servers.{tlds[0]}." for i in range(len(root_addrs))]
    rr_type = ["AAAA" if ":" in a else "A" for a in root_addrs]
    zones: list[dict[str, Any]] = []
    (out / "tld").mkdir()
    (out / "sld").mkdir()

    # root zone
    lines = ["$ORIGIN .\n$TTL 86400\n", _soa(root_names[0], serial)]
    lines += [f"@ NS {n}\n" for n in root_names]
    lines += [f"{n} {t} {a}\n" for n, t, a in zip(root_names, rr_type, root_addrs, strict=True)]
    for tld in tlds:
        for k, a in enumerate(tld_addrs):
            lines.append(f"{tld}. NS ns{k + 1}.nic.{tld}.\n")
            lines.append(f"ns{k + 1}.nic.{tld}. {'AAAA' if ':' in a else 'A'} {a}\n")
    text = "".join(lines)
    info = write_small_file(out / "root.zone", text, text.count("\n") - 2)
    zones.append({"name": ".", "file": "root.zone", "role": "root",
                  "servers": root_addrs, **info})

    hints = "".join(f".  3600000  NS  {n}\n" for n in root_names) + "".join(
        f"{n}  3600000  {t}  {a}\n" for n, t, a in zip(root_names, rr_type, root_addrs, strict=True)
    )
    files = {"root_hints": {"file": "root.hints",
                            **write_small_file(out / "root.hints", hints, 2 * len(root_names))}}

    # second-level zones, spread round-robin over the TLDs
    labels = _sld_labels(rng, params["slds"])
    slds = [f"{lab}.{tlds[i % len(tlds)]}" for i, lab in enumerate(labels)]
    delegations: dict[str, list[str]] = {t: [] for t in tlds}
    tail = random.Random(seed ^ 0x7A11)  # its own stream: the rest stays as without a tail
    for i, sld in enumerate(slds):
        tld = sld.rsplit(".", 1)[1]
        bucket = tail.random() * 100
        dead, slow = params["dead_pct"], params["dead_pct"] + params["slow_pct"]
        tier = ("dead" if bucket < dead else "slow" if bucket < slow else
                "broken" if bucket < slow + params["broken_pct"] else "sld")
        pool = params[f"{tier}_servers"] if tier != "sld" else sld_addrs
        n_ns = len(pool) if tier == "broken" else min(2, len(pool))
        servers = [pool[(i + k) % len(pool)] for k in range(n_ns)]
        ns_lines = [f"@ NS ns{k + 1}\nns{k + 1} {'AAAA' if ':' in a else 'A'} {a}\n"
                    for k, a in enumerate(servers)]
        web4, mail4 = doc_v4(rng.randrange(508)), doc_v4(rng.randrange(508))
        web6 = doc_v6(0x100 + i % 0xF00, i >> 16, i & 0xFFFF, 0x80)
        text = (
            f"$ORIGIN {sld}.\n$TTL 3600\n" + _soa(f"ns1.{sld}.", serial) + "".join(ns_lines)
            + f"@ A {web4}\n@ AAAA {web6}\nwww A {web4}\nwww AAAA {web6}\n"
            + f"@ MX 10 mail\nmail A {mail4}\n"
        )
        rel = f"sld/{tld}/{sld}.zone"
        (out / "sld" / tld).mkdir(exist_ok=True)
        info = write_small_file(out / rel, text, 7 + 2 * n_ns)
        zones.append({"name": sld, "file": rel, "role": "sld", "servers": servers, **info})
        delegations[tld].append(
            "".join(
                f"{sld.split('.')[0]} NS ns{k + 1}.{sld.split('.')[0]}\n"
                f"ns{k + 1}.{sld.split('.')[0]} {'AAAA' if ':' in a else 'A'} {a}\n"
                for k, a in enumerate(servers)
            )
        )

    # TLD zones (written after the SLDs so their delegations are known)
    tld_entries = []
    for tld in tlds:
        head = [f"$ORIGIN {tld}.\n$TTL 86400\n", _soa(f"ns1.nic.{tld}.", serial)]
        for k, a in enumerate(tld_addrs):
            head.append(f"@ NS ns{k + 1}.nic\nns{k + 1}.nic {'AAAA' if ':' in a else 'A'} {a}\n")
        if tld == tlds[0]:
            head += [
                f"{n.split('.')[0]}.root-servers {t} {a}\n"
                for n, t, a in zip(root_names, rr_type, root_addrs, strict=True)
            ]
        text = "".join(head) + "".join(delegations[tld])
        rel = f"tld/{tld}.zone"
        info = write_small_file(out / rel, text, text.count("\n") - 2)
        tld_entries.append({"name": tld, "file": rel, "role": "tld",
                            "servers": tld_addrs, **info})
    zones[1:1] = tld_entries

    files["popular_names"] = popular_names(out / "queries", slds, params["names"], seed,
                                           params["nxdomain_pct"])
    return {"zones": zones, "files": files}


def popular_names(qdir: Path, slds: list[str], count: int, seed: int,
                  nxdomain_pct: float = 0.0) -> dict[str, Any]:
    """Write `queries/popular.txt` ("name TYPE" per line, most popular first); `nxdomain_pct`
    % of the lines, spread over the list, ask for a name that does not exist."""
    rng = random.Random(seed ^ 0x5EED)
    order = list(range(len(slds)))
    rng.shuffle(order)
    lines: list[str] = []
    for prefix, qtype in NAME_KINDS:
        for i in order:
            if len(lines) == count:
                break
            lines.append(f"{prefix}{slds[i]} {qtype}\n")
    if nxdomain_pct:
        nx = random.Random(seed ^ 0x0DD)
        for k in nx.sample(range(len(lines)), round(len(lines) * nxdomain_pct / 100)):
            lines[k] = f"nx{k}.{slds[nx.randrange(len(slds))]} A\n"
    qdir.mkdir(exist_ok=True)
    info = write_small_file(qdir / "popular.txt", "".join(lines), len(lines))
    return {"file": "queries/popular.txt", **info}
