"""TLD-scale zone: millions of delegations (NS, in-bailiwick glue, DS), sized by record count.

Built for speed (>= 1 M records/s): random choices come from numpy in batches and each
delegation is one preformatted string, so no dnspython objects are made. Memory stays flat
because only one batch is held at a time.

Every delegation has two NS records. A `glue_share` of them use in-bailiwick name servers
(ns1/ns2.<label>.<tld>.) with A glue, the others point at hosting-provider name servers under
`example.`; a `ds_share` of them are signed (one DS, SHA-256 digest type).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from zones.common import (
    SOA_TIMERS,
    HashingWriter,
    doc_v4,
    unknown_keys,
    want_float,
    want_int,
    want_name,
)

NAME = "tld"
VERSION = 2  # bump when the generated content changes for the same parameters
DEFAULTS: dict[str, Any] = {
    "records": 1_000_000,
    "origin": "test",
    "glue_share": 0.1,
    "ds_share": 0.25,
    "providers": 500,
}
MAX_RECORDS = 50_000_000
MIN_RECORDS = 1000
APEX_RECORDS = 5
BATCH = 16384
BYTES_PER_RECORD = 49  # measured average of the text format, used for the disk-space check


def normalize(params: dict[str, Any]) -> dict[str, Any]:
    unknown_keys(params, DEFAULTS, NAME)
    p = {**DEFAULTS, **params}
    return {
        "records": want_int(p, "records", MIN_RECORDS, MAX_RECORDS),
        "origin": want_name(p["origin"], "origin"),
        "glue_share": want_float(p, "glue_share", 0.0, 1.0),
        "ds_share": want_float(p, "ds_share", 0.0, 1.0),
        "providers": want_int(p, "providers", 1, 100_000),
    }


ID_KEYS = ("records", "origin")


def set_id(params: dict[str, Any], seed: int) -> str:
    return f"tld-{params['origin'].replace('.', '_')}-r{params['records']}-s{seed}"


def estimate_bytes(params: dict[str, Any]) -> int:
    return params["records"] * BYTES_PER_RECORD


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


def build(out: Path, params: dict[str, Any], seed: int) -> dict[str, Any]:
    rel = f"{params['origin']}.zone"
    info = write_zone(out / rel, params, seed)
    return {"zones": [{"name": params["origin"], "file": rel, **info}]}
