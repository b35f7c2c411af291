"""Runtime selection: containerlab where it can deploy, network namespaces everywhere else."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from dnslab import paths
from dnslab.errors import LabError
from dnslab.runtime.base import Runtime
from dnslab.runtime.clab import (
    ClabRuntime,
    containerlab_binary,
    containerlab_version,
    docker_works,
    engine_default_runtime,
    is_project_build,
    missing_images,
)
from dnslab.runtime.netns import NetnsRuntime
from dnslab.topology import Topology

RUNTIMES = {"netns": NetnsRuntime, "clab": ClabRuntime}


# containerlab treats a missing /proc/modules as "every module built in" from this release on
# (the project's own build carries that change, tools/containerlab/no-proc-modules.patch)
NO_PROC_MODULES_OK = (0, 76, 1)


def missing_capabilities() -> list[str]:
    proc = subprocess.run([str(paths.REPO / "scripts" / "runc-capdrop"), "--list"],
                          capture_output=True, text=True)
    listed = proc.stdout.strip()
    return [] if proc.returncode != 0 or listed == "(none)" else listed.split()


def clab_unusable_reason(topo: Topology | None = None) -> str | None:
    """Why containerlab cannot deploy here, or None when it can."""
    binary = containerlab_binary()
    if binary is None:
        return "containerlab is not installed (make containerlab builds it)"
    if not Path("/proc/modules").exists() and not is_project_build(binary):
        version = containerlab_version(binary)
        if version is None or version < NO_PROC_MODULES_OK:
            return (f"this kernel has no /proc/modules, and the installed containerlab "
                    f"({binary}) aborts without it before v0.76.1")
    if not docker_works():
        return "no Docker engine answers"
    lacking = missing_capabilities()
    if lacking and engine_default_runtime() != "dnslab-runc":
        return (f"the capability bounding set lacks {', '.join(lacking)}, so privileged "
                "containers fail under this Docker engine (a dockerd started by "
                "scripts/start-dockerd.sh drops them)")
    if topo is not None:
        missing = missing_images(topo)
        if missing:
            return f"image {missing[0]} is not built (make images)"
    return None


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
