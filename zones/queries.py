"""Query files for dnsperf/resperf ("name TYPE" per line), each with a manifest beside it.

* `mobile_core`: the seed 000 mix (NAPTR 98 %, SRV 1.4 %, A 0.1 %, AAAA 0.5 %) over the APN,
  TAC, SRV and host names of a 3GPP zone set; `truncating` sets the share of all queries
  that go to names whose modelled full response (`zones.model`) exceeds the EDNS UDP size.
  The manifest reports the share measured with the model over the written lines.
* `water_torture`: random-subdomain queries (`<random label>.<domain> A`).
* popular names are written by the "internet" generator (`queries/popular.txt`).

Files are written to `<set>/queries/` (or a given folder) and reused when the manifest
beside them (`<file>.json`) matches.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dns.rdatatype
import numpy as np

from dnslab.errors import LabError
from zones.common import (
    HashingWriter,
    ZoneSet,
    manifest_matches,
    want_float,
    want_int,
    want_name,
    want_seed,
    write_manifest,
)

MOBILE_MIX = {"NAPTR": 0.98, "SRV": 0.014, "A": 0.001, "AAAA": 0.005}
DEFAULT_TRUNCATING = 0.23
BATCH = 65536
_ALPHABET = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz0123456789", dtype=np.uint8)


@dataclass
class QueryFile:
    """A written query file and its manifest."""

    path: Path
    manifest: dict[str, Any]


def _reuse(path: Path, kind: str, params: dict[str, Any], seed: int) -> QueryFile | None:
    meta = path.with_suffix(".json")
    m = manifest_matches(meta, kind, params, seed)
    return QueryFile(path, m) if m is not None else None


def _finish(path: Path, kind: str, params: dict[str, Any], seed: int, info: dict[str, Any],
            extra: dict[str, Any]) -> QueryFile:
    manifest = {
        "generator": kind,
        "params": params,
        "seed": seed,
        "zones": [],
        "files": {"queries": {"file": path.name, **info}},
        **extra,
    }
    write_manifest(path.with_suffix(".json"), manifest)
    return QueryFile(path, manifest)


def _write_choices(w: HashingWriter, rng: np.random.Generator, pools: list[list[str]],
                   probs: list[float], count: int) -> list[np.ndarray]:
    """Stream `count` lines drawn from the pools; returns per-pool index hit counts."""
    flat = [line for pool in pools for line in pool]
    sizes = np.array([len(p) for p in pools])
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    hits = np.zeros(len(flat), dtype=np.int64)
    left = count
    while left > 0:
        n = min(BATCH, left)
        which = rng.choice(len(pools), size=n, p=probs)
        # uniform index inside the chosen pool (pools with probability 0 are never chosen)
        inner = (rng.random(n) * np.maximum(sizes[which], 1)).astype(np.int64)
        idx = offsets[which] + inner
        hits += np.bincount(idx, minlength=len(flat))
        w.write("".join(map(flat.__getitem__, idx.tolist())), n)
        left -= n
    return [hits[o : o + s] for o, s in zip(offsets.tolist(), sizes.tolist(), strict=True)]


def mobile_core(
    zs: ZoneSet,
    count: int = 100_000,
    truncating: float = DEFAULT_TRUNCATING,
    seed: int = 1,
    payload: int = 4096,
    mix: dict[str, float] | None = None,
) -> QueryFile:
    """Mobile-core query mix over a "3gpp" zone set, written to `<set>/queries/`. `mix`
    (default MOBILE_MIX) gives each record type's share; the shares are renormalised."""
    from zones import model  # dnspython zone loading only when needed

    mix = dict(MOBILE_MIX if mix is None else mix)
    if set(mix) != set(MOBILE_MIX):
        raise LabError(f"a mobile-core mix gives shares for {', '.join(MOBILE_MIX)}",
                       hint=f"got {', '.join(mix) or 'none'}")
    if zs.manifest.get("generator") != "3gpp":
        raise LabError("the mobile-core mix needs a 3gpp zone set", hint="dnslab-zones 3gpp")
    params = {
        "count": want_int({"count": count}, "count", 1, 100_000_000),
        "truncating": want_float({"truncating": truncating}, "truncating", 0.0,
                                 mix["NAPTR"]),
        "payload": want_int({"payload": payload}, "payload", 512, 65535),
        "zone_set": zs.set_id,
        "mix": mix,
    }
    seed = want_seed(seed)
    qdir = zs.path / "queries"
    qdir.mkdir(exist_ok=True)
    path = qdir / f"mobile-core-n{count}-t{round(truncating * 1000)}-s{seed}.txt"
    found = _reuse(path, "mobile-core", params, seed)
    if found:
        return found

    z = zs.zones[0]
    zone = model.load_zone(z.path, z.fqdn)
    owners: dict[str, list[str]] = {t: [] for t in mix}
    for name, node in zone.nodes.items():
        for rds in node.rdatasets:
            t = dns.rdatatype.to_text(rds.rdtype)
            if t in owners:
                owners[t].append(name.to_text(omit_final_dot=True))
    for names in owners.values():
        names.sort()
    sizes: dict[str, dict[str, Any]] = {}
    trunc_pool, plain_pool = [], []
    for name in owners["NAPTR"]:
        m = model.measure(zone, name, "NAPTR", payload)
        sizes[f"{name} NAPTR"] = {"size": m.size, "truncated": m.truncated}
        (trunc_pool if m.truncated else plain_pool).append(f"{name} NAPTR\n")
    other = {t: [f"{n} {t}\n" for n in owners[t]] for t in ("SRV", "A", "AAAA")}
    for t, lines in other.items():
        for line in lines:
            m = model.measure(zone, line.split()[0], t, payload)
            sizes[line.strip()] = {"size": m.size, "truncated": m.truncated}

    pools = [trunc_pool, plain_pool, other["SRV"], other["A"], other["AAAA"]]
    probs = [truncating, mix["NAPTR"] - truncating, mix["SRV"], mix["A"], mix["AAAA"]]
    for pool, pr, what in zip(pools, probs, ("truncating NAPTR", "non-truncating NAPTR",
                                             "SRV", "A", "AAAA"), strict=True):
        if pr > 0 and not pool:
            raise LabError(f"zone set {zs.set_id} has no {what} names for the query mix",
                           hint="use the after profile or set --truncating 0")
    probs_arr = np.array(probs) / sum(probs)
    rng = np.random.default_rng(seed)
    with HashingWriter(path) as w:
        hits = _write_choices(w, rng, pools, list(probs_arr), params["count"])
        info = w.close()

    # the share is measured with the model over what was written, not assumed from the pools
    by_type: dict[str, int] = {t: 0 for t in mix}
    truncated_lines = 0
    for pool, h in zip(pools, hits, strict=True):
        for line, n in zip(pool, h.tolist(), strict=False):
            key = line.strip()
            by_type[key.split()[1]] += n
            if sizes[key]["truncated"]:
                truncated_lines += n
    largest = sorted(((v["size"], k) for k, v in sizes.items() if v["truncated"]), reverse=True)
    extra = {
        "measured": {
            "truncated_share": truncated_lines / params["count"],
            "by_type": {t: n / params["count"] for t, n in by_type.items()},
            "truncating_names": len(trunc_pool),
            "distinct_names": sum(len(p) for p in pools),
            "largest_truncated": [{"query": k, "size": s} for s, k in largest[:5]],
        }
    }
    return _finish(path, "mobile-core", params, seed, info, extra)


def water_torture(
    out_dir: Path,
    domains: list[str],
    count: int = 100_000,
    seed: int = 1,
    label_min: int = 8,
    label_max: int = 16,
    qtype: str = "A",
) -> QueryFile:
    """Random-subdomain ("water torture") queries under `domains`, written to `out_dir`."""
    if not domains:
        raise LabError("water torture needs at least one target domain")
    doms = [want_name(d, "domain") for d in domains]
    params = {
        "count": want_int({"count": count}, "count", 1, 1_000_000_000),
        "domains": doms,
        "label_min": want_int({"label_min": label_min}, "label_min", 1, 63),
        "label_max": want_int({"label_max": label_max}, "label_max", label_min, 63),
        "qtype": qtype.upper(),
    }
    try:
        dns.rdatatype.from_text(params["qtype"])
    except dns.rdatatype.UnknownRdatatype:
        raise LabError(f"unknown query type {qtype!r}") from None
    seed = want_seed(seed)
    out_dir.mkdir(parents=True, exist_ok=True)
    tag = doms[0].replace(".", "_") + (f"+{len(doms) - 1}" if len(doms) > 1 else "")
    path = out_dir / f"water-torture-{tag}-n{count}-s{seed}.txt"
    found = _reuse(path, "water-torture", params, seed)
    if found:
        return found
    rng = np.random.default_rng(seed)
    suffixes = [f".{d} {params['qtype']}\n" for d in doms]
    lo, hi = params["label_min"], params["label_max"]
    with HashingWriter(path) as w:
        left = params["count"]
        while left > 0:
            n = min(BATCH, left)
            chars = _ALPHABET[rng.integers(0, len(_ALPHABET), size=(n, hi))]
            lens = rng.integers(lo, hi + 1, size=n).tolist()
            dom = rng.integers(0, len(doms), size=n).tolist()
            rows = chars.tobytes()
            out = [
                rows[k * hi : k * hi + lens[k]].decode() + suffixes[dom[k]] for k in range(n)
            ]
            w.write("".join(out), n)
            left -= n
        info = w.close()
    return _finish(path, "water-torture", params, seed, info, {})


def read_manifest(path: Path) -> dict[str, Any]:
    """The manifest written beside a query file."""
    return json.loads(path.with_suffix(".json").read_text())
