"""Zone and query generators for the DNS lab (library entry point: `zones.ensure`).

`ensure(generator, params, seed)` returns a `ZoneSet` for `build/zones/<set-id>/`, generating
it only when no folder with a matching manifest exists. Generators: "small-zones", "tld",
"3gpp" (profile before|after) and "internet". Every generator is deterministic for a seed and
streams its output.

Zone names: `Zone.name` is the absolute name written *without* the trailing dot ("z00001.test",
"epc.mnc010.mcc440.3gppnetwork.org"); the root zone is ".". `Zone.fqdn` gives the dotted
form. BIND, Knot and NSD accept either form in their zone statements.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from dnslab import paths
from dnslab.errors import LabError
from zones import epc, internet, small, tld
from zones.common import (
    MANIFEST,
    Zone,
    ZoneSet,
    check_free_space,
    manifest_matches,
    params_hash,
    remove_tree,
    want_seed,
    write_manifest,
)

__all__ = ["GENERATORS", "Zone", "ZoneSet", "ensure", "normalize", "set_path"]

GENERATORS: dict[str, ModuleType] = {
    small.NAME: small,
    tld.NAME: tld,
    epc.NAME: epc,
    internet.NAME: internet,
}


def _generator(name: str) -> ModuleType:
    try:
        return GENERATORS[name]
    except KeyError:
        raise LabError(
            f"unknown zone generator {name!r}", hint=f"use one of {', '.join(GENERATORS)}"
        ) from None


def normalize(generator: str, params: dict[str, Any] | None) -> dict[str, Any]:
    """The complete, validated parameter set (defaults filled in) a generator will use."""
    return _generator(generator).normalize(dict(params or {}))


def _set_id(gen: ModuleType, full: dict[str, Any], seed: int) -> str:
    """Readable id from the main parameters; any other parameter that differs from its
    default adds a short hash of the complete parameter set, so ids never collide."""
    readable = gen.set_id(full, seed)
    if gen.normalize({k: full[k] for k in gen.ID_KEYS}) == full:
        return readable
    return f"{readable}-{params_hash(full, seed)}"


def set_path(generator: str, params: dict[str, Any] | None, seed: int = 1,
             out_root: Path | None = None) -> Path:
    """Folder a set would be written to, without generating it."""
    gen = _generator(generator)
    full = gen.normalize(dict(params or {}))
    return Path(out_root or paths.ZONES_BUILD) / _set_id(gen, full, want_seed(seed))


def ensure(
    generator: str,
    params: dict[str, Any] | None = None,
    seed: int = 1,
    out_root: Path | None = None,
) -> ZoneSet:
    """Return the zone set for (generator, params, seed), generating it if needed."""
    gen = _generator(generator)
    seed = want_seed(seed)
    full = gen.normalize(dict(params or {}))
    root = Path(out_root or paths.ZONES_BUILD)
    target = root / _set_id(gen, full, seed)
    if manifest_matches(target / MANIFEST, generator, full, seed, gen.VERSION) is not None:
        return ZoneSet.load(target)
    check_free_space(root, gen.estimate_bytes(full), f"zone set {target.name}")
    root.mkdir(parents=True, exist_ok=True)
    # one builder per set: others wait here and then find the finished manifest
    with open(root / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if manifest_matches(target / MANIFEST, generator, full, seed, gen.VERSION) is None:
            _build(gen, generator, full, seed, root, target)
    return ZoneSet.load(target)


def _build(gen: ModuleType, generator: str, full: dict[str, Any], seed: int, root: Path,
           target: Path) -> None:
    """Generate into a temporary folder, write the manifest, then rename it into place."""
    tmp = root / f".{target.name}.tmp-{os.getpid()}"
    remove_tree(tmp)
    tmp.mkdir()
    started = time.monotonic()
    try:
        result = gen.build(tmp, full, seed)
        zones = result["zones"]
        manifest: dict[str, Any] = {
            "generator": generator,
            "version": gen.VERSION,
            "params": full,
            "seed": seed,
            "zones": zones,
            "files": result.get("files", {}),
            "totals": {
                "zones": len(zones),
                "records": sum(z["records"] for z in zones),
                "bytes": sum(z["bytes"] for z in zones),
                "seconds": round(time.monotonic() - started, 3),
            },
        }
        if result.get("extra"):
            manifest["extra"] = result["extra"]
        write_manifest(tmp / MANIFEST, manifest)
        remove_tree(target)
        tmp.rename(target)
    except BaseException:
        remove_tree(tmp)
        raise
