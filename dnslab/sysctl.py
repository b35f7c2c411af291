"""Sysctl profiles: named sets of kernel settings, applied per lab node and read back.

Profiles live in `experiments/profiles/<name>.yaml` (a top comment saying where the values
come from, then `sysctls:`). Most TCP/UDP keys are per network namespace, so every node gets
its own values. A key the node's namespace does not have (`net.core.netdev_max_backlog`,
`net.ipv4.tcp_mem`, ...) is host-wide: it is refused unless the user allows host changes,
and then the host's old value is saved and restored at teardown. Which keys are host-wide
is read from the running kernel, never assumed.
"""

from __future__ import annotations

import ctypes
import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from dnslab import paths
from dnslab.errors import LabError
from dnslab.nsenter import in_netns


def key_path(key: str) -> str:
    return "/proc/sys/" + key.replace(".", "/")


def normalise(value: object) -> str:
    return " ".join(str(value).split())


@dataclass
class Profile:
    name: str
    sysctls: dict[str, str]
    host_sysctls: dict[str, str] = field(default_factory=dict)
    description: str = ""
    dangerous: bool = False


def known_profiles() -> list[str]:
    return sorted(p.stem for p in paths.PROFILES.glob("*.yaml"))


def load_profile(name: str) -> Profile:
    path = paths.PROFILES / f"{name}.yaml"
    if not path.exists():
        raise LabError(f"unknown sysctl profile {name!r}",
                       hint="known profiles: " + ", ".join(known_profiles()))
    raw = yaml.safe_load(path.read_text()) or {}
    sysctls = {k: normalise(v) for k, v in (raw.get("sysctls") or {}).items()}
    host = {k: normalise(v) for k, v in (raw.get("host_sysctls") or {}).items()}
    return Profile(name=name, sysctls=sysctls, host_sysctls=host,
                   description=raw.get("description", ""), dangerous=bool(raw.get("dangerous")))


def node_sysctls(profile: Profile, allow_host: bool) -> dict[str, str]:
    """What a node gets from a profile: its per-namespace keys, plus the host-wide ones
    only when the user allowed host changes (they are then restored at lab down)."""
    return {**profile.sysctls, **(profile.host_sysctls if allow_host else {})}


def split_host_wide(netns: str, keys: list[str]) -> tuple[list[str], list[str]]:
    """Split keys into (per-namespace, host-wide) by looking inside a real namespace."""
    present = in_netns(netns, lambda: [k for k in keys if _writable(key_path(k))])
    host_wide = [k for k in keys if k not in present]
    return present, host_wide


def _writable(path: str) -> bool:
    # newer kernels show some host-wide keys (net.core.rmem_max, ...) read-only in a child
    # namespace: present there, but only the host's value can be changed
    return os.path.exists(path) and os.access(path, os.W_OK)


def split_per_node(keys: list[str]) -> tuple[list[str], list[str]]:
    """Like `split_host_wide`, before any lab exists: probes a throw-away namespace that
    only the probing thread joins (unshare(2)), so nothing is left behind."""
    from dnslab.nsenter import CLONE_NEWNET, _libc

    result: dict[str, object] = {}

    def probe() -> None:
        if _libc.unshare(CLONE_NEWNET) != 0:
            result["error"] = LabError("unshare(CLONE_NEWNET) failed: "
                                       + os.strerror(ctypes.get_errno()),
                                       hint="the lab runtimes need root: use sudo")
            return
        result["value"] = [k for k in keys if _writable(key_path(k))]

    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    thread.join()
    if "error" in result:
        raise result["error"]  # type: ignore[misc]
    present = list(result["value"])  # type: ignore[call-overload]
    return present, [k for k in keys if k not in present]


def apply_in_netns(netns: str, sysctls: dict[str, str]) -> dict[str, str]:
    """Write sysctls inside a namespace and return what the kernel reads back."""

    def write_and_read() -> dict[str, str]:
        readback: dict[str, str] = {}
        for key, value in sysctls.items():
            try:
                with open(key_path(key), "w") as handle:
                    handle.write(normalise(value))
            except OSError as exc:
                raise LabError(f"sysctl {key}={value} refused by the kernel: {exc.strerror}",
                               hint="check the value's range for this kernel") from None
            with open(key_path(key)) as handle:
                readback[key] = normalise(handle.read())
        return readback

    return in_netns(netns, write_and_read)


def read_in_netns(netns: str, keys: list[str]) -> dict[str, str | None]:
    def read() -> dict[str, str | None]:
        values: dict[str, str | None] = {}
        for key in keys:
            try:
                with open(key_path(key)) as handle:
                    values[key] = normalise(handle.read())
            except FileNotFoundError:
                values[key] = None
        return values

    return in_netns(netns, read)


def apply_host(sysctls: dict[str, str], saved_file: Path) -> dict[str, str]:
    """Set host-wide sysctls, saving the old values first so teardown can restore them."""
    saved = json.loads(saved_file.read_text()) if saved_file.exists() else {}
    readback = {}
    for key, value in sysctls.items():
        path = Path(key_path(key))
        if key not in saved:
            saved[key] = normalise(path.read_text())
            saved_file.parent.mkdir(parents=True, exist_ok=True)
            saved_file.write_text(json.dumps(saved, indent=1))
        path.write_text(normalise(value))
        readback[key] = normalise(path.read_text())
    return readback


def restore_host(saved_file: Path) -> dict[str, str]:
    """Put back host-wide values saved by apply_host; idempotent."""
    if not saved_file.exists():
        return {}
    saved = json.loads(saved_file.read_text())
    for key, value in saved.items():
        Path(key_path(key)).write_text(value)
    saved_file.unlink()
    return saved
