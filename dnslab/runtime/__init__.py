"""Runtime selection: containerlab where it can deploy, network namespaces everywhere else."""

from __future__ import annotations

import sys
from pathlib import Path

from dnslab.errors import LabError
from dnslab.runtime.base import Runtime
from dnslab.runtime.clab import ClabRuntime, containerlab_binary, docker_works
from dnslab.runtime.netns import NetnsRuntime
from dnslab.topology import Topology

RUNTIMES = {"netns": NetnsRuntime, "clab": ClabRuntime}


def clab_unusable_reason() -> str | None:
    """Why containerlab cannot deploy here, or None when it can."""
    if containerlab_binary() is None:
        return "containerlab is not installed"
    if not Path("/proc/modules").exists():
        return "this kernel has no /proc/modules, and containerlab aborts without it"
    if not docker_works():
        return "no Docker engine answers"
    return None


def get_runtime(name: str, topo: Topology | None = None, quiet: bool = False) -> Runtime:
    name = (name or "auto").lower()
    if name == "auto":
        reason = clab_unusable_reason()
        if reason is None:
            chosen, why = "clab", "containerlab and a Docker engine work"
        else:
            chosen, why = "netns", reason
        if not quiet:
            print(f"runtime: {chosen} ({why})", file=sys.stderr)
        name = chosen
    if name not in RUNTIMES:
        raise LabError(f"unknown runtime {name!r}", hint="RUNTIME=auto, clab or netns")
    return RUNTIMES[name]()


def runtime_for_state(name: str) -> Runtime:
    return get_runtime(name, quiet=True)


def all_runtimes() -> list[Runtime]:
    return [NetnsRuntime(), ClabRuntime()]
