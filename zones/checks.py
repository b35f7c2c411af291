"""Check generated zone files with the server packages' own checkers (named-checkzone, kzonecheck).

named-checkzone runs with `-i local`: its default `full` mode resolves out-of-zone NS/MX/SRV
targets through the system resolver, which would send queries off the machine. When run as
root the checkers also run inside a fresh, empty network namespace (`unshare -n`), so no
check can send a packet anywhere. `signatures=False` leaves out kzonecheck's DNSSEC checks
(`-d off`), for zones whose RRSIGs are random bytes of the real size (zones/tld.py, signed).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from dnslab.errors import LabError

CHECKERS = ("named-checkzone", "kzonecheck")


def available_checkers() -> list[str]:
    return [t for t in CHECKERS if shutil.which(t)]


def _isolated(cmd: list[str]) -> list[str]:
    if os.geteuid() == 0 and shutil.which("unshare"):
        return ["unshare", "-n", *cmd]
    return cmd


def check_zone_file(origin: str, path: Path, checkers: list[str] | None = None,
                    signatures: bool = True) -> list[str]:
    """Run every available checker on one zone file; raise LabError with the checker's output
    when one rejects it. Returns the names of the checkers that ran."""
    ran = []
    for tool in checkers or available_checkers():
        if tool == "named-checkzone":
            cmd = ["named-checkzone", "-i", "local", "-q", origin, str(path)]
        elif tool == "kzonecheck":
            cmd = ["kzonecheck", "-o", origin, *([] if signatures else ["-d", "off"]),
                   str(path)]
        else:
            raise LabError(f"unknown zone checker {tool!r}", hint=f"use {', '.join(CHECKERS)}")
        r = subprocess.run(_isolated(cmd), capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            out = (r.stdout + r.stderr).strip().splitlines()
            raise LabError(f"{tool} rejected {path.name} ({origin})",
                           detail="\n".join(out[-20:]))
        ran.append(tool)
    return ran
