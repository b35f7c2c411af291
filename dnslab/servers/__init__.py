"""The server drivers: one module per server kind, found by kind (`driver("knot")`).

Every module of this package that defines a `Driver` subclass with a `kind` registers it, so
a new server kind is one new module here (plus its templates and image), nothing else.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from dnslab.errors import LabError
from dnslab.servers.base import Driver, LogFollower, merge_options

__all__ = ["Driver", "LogFollower", "driver", "drivers", "kinds", "kinds_for_role",
           "merge_options"]


@cache
def _registry() -> dict[str, Driver]:
    found: dict[str, Driver] = {}
    for module in pkgutil.iter_modules(__path__):
        if module.name == "base":
            continue
        loaded = importlib.import_module(f"{__name__}.{module.name}")
        for value in vars(loaded).values():
            if (isinstance(value, type) and issubclass(value, Driver) and value is not Driver
                    and value.__module__ == loaded.__name__ and "kind" in vars(value)):
                found[value.kind] = value()
    return dict(sorted(found.items()))


def drivers() -> list[Driver]:
    return list(_registry().values())


def kinds() -> list[str]:
    """Every server kind the lab knows (the values of the `dnslab.server` label)."""
    return list(_registry())


def kinds_for_role(role: str) -> list[str]:
    """The server kinds a node of `role` may run."""
    return [d.kind for d in drivers() if d.supports(role)]


def driver(kind: str) -> Driver:
    """The driver of a server kind; a LabError naming the known kinds otherwise."""
    try:
        return _registry()[kind]
    except KeyError:
        raise LabError(f"unknown server kind {kind!r}",
                       hint="known kinds: " + ", ".join(kinds())) from None
