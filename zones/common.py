"""Shared plumbing for the zone generators: streaming hashed writers, manifests, set ids, checks.

Every generator writes into a fresh temporary folder, records each file it made (records,
bytes, sha256) while streaming it, and the folder is renamed into place only when complete,
so a half-written set is never mistaken for a finished one.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import queue
import re
import shutil
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dnslab.errors import LabError

MANIFEST = "manifest.json"
SOA_TIMERS = "3600 900 1209600 300"

# Address space generated zones may use: documentation prefixes, the lab LAN (RFC 2544
# benchmarking space) and loopback.
ALLOWED_NETS = [
    ipaddress.ip_network(n)
    for n in (
        "192.0.2.0/24",
        "198.51.100.0/24",
        "203.0.113.0/24",
        "198.18.0.0/15",
        "127.0.0.0/8",
        "2001:db8::/32",
        "::1/128",
    )
]

_LABEL_RE = re.compile(r"^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$")

# Documentation IPv4 space usable for host addresses in generated data (.1-.254 of both /24s).
_DOC_V4 = [f"192.0.2.{i}" for i in range(1, 255)] + [f"198.51.100.{i}" for i in range(1, 255)]


def doc_v4(index: int) -> str:
    """The index-th documentation IPv4 address; wraps around (508 distinct addresses)."""
    return _DOC_V4[index % len(_DOC_V4)]


def doc_v6(*parts: int) -> str:
    """A 2001:db8::/32 address from up to six 16-bit parts: doc_v6(3, 1) -> 2001:db8:3::1."""
    groups = [f"{p & 0xFFFF:x}" for p in parts]
    if len(groups) == 1:
        return f"2001:db8::{groups[0]}"
    return "2001:db8:" + ":".join(groups[:-1]) + "::" + groups[-1]


class HashingWriter:
    """Text file writer that counts bytes and records and hashes the content as it streams.

    Callers hand over whole lines (or joined chunks) and how many records they hold; nothing is
    kept in memory beyond the current chunk. With `threaded=True` hashing and writing run in a
    helper thread (both release the GIL), so formatting the next chunk overlaps with them; the
    queue holds at most four chunks.
    """

    def __init__(self, path: Path, threaded: bool = False):
        self.path = path
        self._fh = open(path, "wb")  # noqa: SIM115 - closed in close()
        self._sha = hashlib.sha256()
        self.bytes = 0
        self.records = 0
        self._queue: queue.Queue[bytes | None] | None = None
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        if threaded:
            self._queue = queue.Queue(maxsize=4)
            self._thread = threading.Thread(target=self._drain, daemon=True)
            self._thread.start()

    def _drain(self) -> None:
        assert self._queue is not None
        while (data := self._queue.get()) is not None:
            if self._error is None:
                try:
                    self._sha.update(data)
                    self._fh.write(data)
                except BaseException as exc:  # reported by close()
                    self._error = exc

    def write(self, text: str, records: int = 0) -> None:
        data = text.encode("ascii")
        self.bytes += len(data)
        self.records += records
        if self._queue is not None:
            self._queue.put(data)
        else:
            self._sha.update(data)
            self._fh.write(data)

    def _stop(self) -> None:
        if self._thread is not None and self._queue is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None
        if not self._fh.closed:
            self._fh.close()

    def close(self) -> dict[str, Any]:
        self._stop()
        if self._error is not None:
            raise self._error
        return {"bytes": self.bytes, "records": self.records, "sha256": self._sha.hexdigest()}

    def __enter__(self) -> HashingWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop()


def write_small_file(path: Path, text: str, records: int) -> dict[str, Any]:
    """Write a whole small file at once and return its manifest entry fields."""
    data = text.encode("ascii")
    path.write_bytes(data)
    return {"bytes": len(data), "records": records, "sha256": hashlib.sha256(data).hexdigest()}


@dataclass
class Zone:
    """One zone of a set. `name` is the zone name without the trailing dot ("." for the root);
    `fqdn` adds the dot. `path` is the absolute path of the zone file."""

    name: str
    path: Path
    records: int = 0
    role: str | None = None
    servers: list[str] = field(default_factory=list)

    @property
    def fqdn(self) -> str:
        return "." if self.name == "." else self.name + "."


@dataclass
class ZoneSet:
    """A generated set: its folder, the parsed manifest and its zones."""

    path: Path
    manifest: dict[str, Any]
    zones: list[Zone]

    @property
    def set_id(self) -> str:
        return self.path.name

    def file(self, key: str) -> Path:
        """Absolute path of an extra file the manifest lists under `files` (e.g. "root_hints")."""
        try:
            return self.path / self.manifest["files"][key]["file"]
        except KeyError as exc:
            raise LabError(
                f"zone set {self.set_id} has no file {key!r}",
                hint=f"available: {', '.join(self.manifest.get('files', {})) or 'none'}",
            ) from exc

    @classmethod
    def load(cls, path: Path) -> ZoneSet:
        manifest = json.loads((path / MANIFEST).read_text())
        zones = [
            Zone(
                name=z["name"],
                path=(path / z["file"]).resolve(),
                records=z.get("records", 0),
                role=z.get("role"),
                servers=list(z.get("servers", [])),
            )
            for z in manifest["zones"]
        ]
        return cls(path=path.resolve(), manifest=manifest, zones=zones)


def params_hash(params: dict[str, Any], seed: int) -> str:
    text = json.dumps({"params": params, "seed": seed}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def write_manifest(path: Path, manifest: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(manifest, indent=1, sort_keys=False) + "\n")
    tmp.replace(path)


def manifest_matches(
    manifest_path: Path, generator: str, params: dict[str, Any], seed: int, version: int = 1
) -> dict[str, Any] | None:
    """The manifest at `manifest_path` if it describes the same generation and its files exist
    with the recorded sizes; None otherwise. Sizes (not hashes) are checked to keep reuse fast
    for sets of hundreds of MB."""
    if not manifest_path.is_file():
        return None
    try:
        manifest = json.loads(manifest_path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    if (
        manifest.get("generator") != generator
        or manifest.get("params") != json.loads(json.dumps(params))
        or manifest.get("seed") != seed
        or manifest.get("version", 1) != version
    ):
        return None
    base = manifest_path.parent
    entries = list(manifest.get("zones", [])) + list(manifest.get("files", {}).values())
    for entry in entries:
        f = base / entry["file"]
        try:
            if f.stat().st_size != entry["bytes"]:
                return None
        except OSError:
            return None
    return manifest


def remove_tree(path: Path) -> None:
    if path.exists():
        shutil.rmtree(path)


def check_free_space(where: Path, needed: int, what: str) -> None:
    """Fail with one line when `needed` bytes (plus 5 % headroom) will not fit under `where`."""
    probe = where
    while not probe.exists():
        probe = probe.parent
    free = shutil.disk_usage(probe).free
    if needed * 1.05 > free:
        raise LabError(
            f"{what} needs about {needed / 1e6:,.0f} MB but only {free / 1e6:,.0f} MB are free "
            f"under {probe}",
            hint="choose a smaller size or free disk space",
        )


# ---------------------------------------------------------------- parameter validation


def want_int(params: dict[str, Any], key: str, lo: int, hi: int) -> int:
    value = params.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            value = int(str(value))
        except ValueError:
            raise LabError(f"{key} must be an integer, got {value!r}") from None
    if value < lo or value > hi:
        raise LabError(f"{key} must be between {lo:,} and {hi:,}, got {value:,}")
    return value


def want_float(params: dict[str, Any], key: str, lo: float, hi: float) -> float:
    try:
        value = float(params.get(key))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise LabError(f"{key} must be a number, got {params.get(key)!r}") from None
    if not lo <= value <= hi:
        raise LabError(f"{key} must be between {lo} and {hi}, got {value}")
    return value


def want_seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise LabError(f"seed must be a non-negative integer, got {seed!r}")
    return seed


def want_name(value: Any, key: str) -> str:
    """A lower-case domain name without trailing dot, every label a plain hostname label."""
    if not isinstance(value, str) or not value.strip(". "):
        raise LabError(f"{key} must be a domain name, got {value!r}")
    name = value.strip().rstrip(".").lower()
    labels = name.split(".")
    if len(name) > 200 or not all(_LABEL_RE.match(lbl) for lbl in labels):
        raise LabError(f"{key} is not a valid domain name: {value!r}")
    return name


def want_addresses(value: Any, key: str) -> list[str]:
    """A non-empty list of IP addresses, each inside documentation or lab space."""
    if isinstance(value, str):
        value = [v for v in re.split(r"[,\s]+", value) if v]
    if not isinstance(value, list | tuple) or not value:
        raise LabError(f"{key} must be a non-empty list of addresses")
    out = []
    for item in value:
        try:
            addr = ipaddress.ip_address(str(item))
        except ValueError:
            raise LabError(f"{key}: {item!r} is not an IP address") from None
        if not any(addr in net for net in ALLOWED_NETS):
            raise LabError(
                f"{key}: {addr} is outside lab and documentation space",
                hint="use 198.18.0.0/15, 192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24 "
                "or 2001:db8::/32",
            )
        out.append(str(addr))
    return out


def unknown_keys(params: dict[str, Any], known: Iterable[str], generator: str) -> None:
    extra = sorted(set(params) - set(known))
    if extra:
        raise LabError(
            f"unknown parameter(s) for {generator}: {', '.join(extra)}",
            hint=f"known: {', '.join(sorted(known))}",
        )
