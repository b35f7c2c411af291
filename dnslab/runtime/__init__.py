"""Runtime selection: containerlab where it can deploy, network namespaces everywhere else."""

from __future__ import annotations

import sys

from dnslab.errors import LabError
from dnslab.runtime.base import Runtime
from dnslab.runtime.clab import ClabRuntime, clab_unusable_reason
from dnslab.runtime.netns import NetnsRuntime
from dnslab.topology import Topology

RUNTIMES = {"netns": NetnsRuntime, "clab": ClabRuntime}
__all__ = ["clab_unusable_reason", "get_runtime", "runtime_for_state", "all_runtimes"]


def get_runtime(name: str, topo: Topology | None = None, quiet: bool = False) -> Runtime:
    name = (name or "auto").lower()
    if name == "auto":
        reason = clab_unusable_reason(topo)
        if reason is None:
            chosen, why = "clab", "containerlab, a Docker engine and the lab's images work"
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
