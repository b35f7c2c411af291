"""Many small zones (1k ... 100k+) for zone-transfer experiments: SOA, two NS, a few A records.

Zone names are `z<NNNNN>.<suffix>.` (suffix `test` by default); the lab engine renders the
server configs from its own templates (`dnslab.render`).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from zones.common import (
    SOA_TIMERS,
    doc_v4,
    unknown_keys,
    want_int,
    want_name,
    write_small_file,
)

NAME = "small-zones"
VERSION = 1  # bump when the generated content changes for the same parameters
DEFAULTS: dict[str, Any] = {"count": 1000, "suffix": "test", "hosts": 2}
MAX_COUNT = 1_000_000


def normalize(params: dict[str, Any]) -> dict[str, Any]:
    unknown_keys(params, DEFAULTS, NAME)
    p = {**DEFAULTS, **params}
    return {
        "count": want_int(p, "count", 1, MAX_COUNT),
        "suffix": want_name(p["suffix"], "suffix"),
        "hosts": want_int(p, "hosts", 0, 100),
    }


ID_KEYS = ("count",)


def set_id(params: dict[str, Any], seed: int) -> str:
    return f"small-zones-n{params['count']}-s{seed}"


def estimate_bytes(params: dict[str, Any]) -> int:
    return params["count"] * (260 + 40 * params["hosts"]) + params["count"] * 160


def zone_names(count: int, suffix: str = "test") -> list[str]:
    width = max(5, len(str(count - 1)))
    return [f"z{i:0{width}d}.{suffix}" for i in range(count)]


def build(out: Path, params: dict[str, Any], seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    zdir = out / "zones"
    zdir.mkdir()
    serial = 2024010100 + seed % 100
    hosts = params["hosts"]
    entries = []
    for name in zone_names(params["count"], params["suffix"]):
        a1, a2 = rng.randrange(508), rng.randrange(508)
        lines = [
            f"$ORIGIN {name}.\n$TTL 3600\n"
            f"@ SOA ns1 hostmaster {serial} {SOA_TIMERS}\n"
            f"@ NS ns1\n@ NS ns2\nns1 A {doc_v4(a1)}\nns2 A {doc_v4(a2)}\n"
        ]
        for h in range(hosts):
            owner = "@" if h == 0 else f"h{h}"
            lines.append(f"{owner} A {doc_v4(rng.randrange(508))}\n")
        rel = f"zones/{name}.zone"
        info = write_small_file(out / rel, "".join(lines), records=5 + hosts)
        entries.append({"name": name, "file": rel, **info})
    return {"zones": entries}
