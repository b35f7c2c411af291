"""Low-level network-namespace helpers: run `ip`, and run Python code inside a namespace.

`in_netns(path, fn)` runs `fn` in a fresh thread that has joined the namespace at `path`
(setns(2) changes only the calling thread), so probes open their sockets inside a lab node
without starting a process. `path` is /run/netns/<name> for the netns runtime and
/proc/<pid>/ns/net for a container.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import threading
from collections.abc import Callable
from typing import TypeVar

from dnslab.errors import LabError

CLONE_NEWNET = 0x40000000
T = TypeVar("T")

_libc = ctypes.CDLL(None, use_errno=True)


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run `ip ARGS`; a failure raises LabError with ip's own message."""
    proc = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise LabError(f"ip {' '.join(args)} failed: {proc.stderr.strip()}",
                       hint="is iproute2 installed and are you root?")
    return proc


def run_in(netns_path: str, argv: list[str], hint: str = "is iproute2 installed?",
           check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run a command inside the network namespace at `netns_path` (either runtime)."""
    proc = subprocess.run(["nsenter", f"--net={netns_path}", *argv], capture_output=True,
                          text=True)
    if check and proc.returncode != 0:
        raise LabError(f"{' '.join(argv)} failed in {netns_path}: {proc.stderr.strip()}",
                       hint=hint)
    return proc


def list_namespaces() -> list[str]:
    out = ip("netns", "list", check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def namespace_pids(name: str) -> list[int]:
    out = ip("netns", "pids", name, check=False).stdout
    return [int(p) for p in out.split() if p.isdigit()]


def netns_path(name: str) -> str:
    return f"/run/netns/{name}"


def in_netns(path: str, fn: Callable[[], T]) -> T:
    """Call `fn()` in a thread that joined the network namespace at `path`; return its result."""
    result: dict[str, object] = {}

    def target() -> None:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError as exc:
            result["error"] = LabError(f"cannot open network namespace {path}: {exc.strerror}",
                                       hint="is the lab up? (make lab status)")
            return
        try:
            if _libc.setns(fd, CLONE_NEWNET) != 0:
                err = ctypes.get_errno()
                result["error"] = LabError(f"setns({path}) failed: {os.strerror(err)}",
                                           hint="the lab runtimes need root: use sudo")
                return
        finally:
            os.close(fd)
        try:
            result["value"] = fn()
        except BaseException as exc:  # handed to the caller's thread
            result["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join()
    if "error" in result:
        raise result["error"]  # type: ignore[misc]
    return result["value"]  # type: ignore[return-value]
