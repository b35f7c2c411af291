"""The server drivers: one manifest and one module per server kind, found by kind
(`driver("knot")`).

A server kind is its manifest `<kind>.yaml` (what it is, as data: `manifest.py`), its driver
module `<kind>.py` (a `Driver` subclass with that `kind`: what it does), its templates
(`topologies/templates/<kind>/`) and, only where images/common/Dockerfile does not fit,
its own Dockerfile. Every manifest without `variant_of` is a server kind, so a new kind
touches nothing else.
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import Any

from dnslab.errors import LabError
from dnslab.servers import manifest
from dnslab.servers.base import Driver, LogFollower, merge_options

__all__ = ["Driver", "LogFollower", "driver", "drivers", "kinds", "kinds_for_role",
           "kind_param", "merge_options"]


def _driver_class(kind: str) -> type[Driver]:
    module = importlib.import_module(f"{__name__}.{kind}")
    found = [value for value in vars(module).values()
             if isinstance(value, type) and issubclass(value, Driver)
             and value.__module__ == module.__name__ and vars(value).get("kind") == kind]
    if len(found) != 1:
        raise LabError(f"dnslab/servers/{kind}.py must define one Driver subclass with "
                       f"kind = {kind!r} (found {len(found)})",
                       hint=f"its manifest dnslab/servers/{kind}.yaml names the kind")
    return found[0]


@cache
def _registry() -> dict[str, Driver]:
    return {kind: _driver_class(kind)() for kind in manifest.server_kinds()}


def drivers() -> list[Driver]:
    return list(_registry().values())


def kinds() -> list[str]:
    """Every server kind the lab knows (the values of the `dnslab.server` label)."""
    return list(_registry())


def kinds_for_role(role: str) -> list[str]:
    """The server kinds a node of `role` may run."""
    return manifest.kinds_for_role(role)


def _kind(name: str) -> str:
    """The kind a name of a version stands for (`bind@9.20`, `bind916` -> `bind`)."""
    if name in _registry():
        return name
    try:
        return manifest.kind_version(name).kind
    except manifest.ManifestError:
        return name


def kind_param(params: dict[str, Any], name: str, suffix: str = "options") -> Any:
    """An experiment's per-kind parameter for a version's name (`bind@9.16`): its own
    (`bind916_options`: the kind and the version's digits) when the experiment has one,
    else the kind's (`bind_options`), else None."""
    found = manifest.kind_version(name) if _kind(name) in _registry() else None
    if found is not None:
        own = f"{found.kind}{found.version.replace('.', '')}_{suffix}"
        if own in params:
            return params[own]
    return params.get(f"{_kind(name)}_{suffix}")


def driver(kind: str) -> Driver:
    """The driver of a server kind (or of a version's name: `bind@9.20`); a LabError naming
    the known kinds otherwise."""
    try:
        return _registry()[_kind(kind)]
    except KeyError:
        raise LabError(f"unknown server kind {kind!r}",
                       hint="known kinds: " + ", ".join(kinds())) from None
