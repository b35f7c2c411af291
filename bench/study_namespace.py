"""A throwaway network namespace for the stand-alone studies of bench/ (servfail_timing,
kresd_doh_get): only its own loopback, so nothing a study's daemon sends can leave it, and the
study's work folder bind-mounted into a server version's root file system when one is given
(that root's daemon then runs under chroot and reads the same paths)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def study_namespace(name: str, work: Path, root: Path | None = None,
                    addresses: list[str] | tuple[str, ...] = ()
                    ) -> Iterator[tuple[list[str], list[str]]]:
    """Yields two argv prefixes: one that runs a command in the namespace, one that runs the
    study's daemon there (under chroot into `root` when given); `addresses` (/32 each) are put
    on its loopback. Everything is undone at exit; one left by a study killed before its exit
    is removed first."""
    subprocess.run(["ip", "netns", "del", name], capture_output=True, check=False)
    subprocess.run(["ip", "netns", "add", name], check=True)
    mounted: Path | None = None
    try:
        subprocess.run(["ip", "-n", name, "link", "set", "lo", "up"], check=True)
        for address in addresses:
            subprocess.run(["ip", "-n", name, "addr", "add", f"{address}/32", "dev", "lo"],
                           check=True)
        exec_in = ["ip", "netns", "exec", name]
        in_root = list(exec_in)
        if root is not None:
            inside = root / work.relative_to("/")
            inside.mkdir(parents=True, exist_ok=True)
            subprocess.run(["mount", "--bind", str(work), str(inside)], check=True)
            mounted = inside
            in_root += ["chroot", str(root)]
        yield exec_in, in_root
    finally:
        if mounted is not None:
            if subprocess.run(["umount", str(mounted)], check=False).returncode == 0:
                mounted.rmdir()  # the empty mount point made above
        subprocess.run(["ip", "netns", "del", name], check=False)
