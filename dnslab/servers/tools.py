"""The client node: no daemon, the query and load tools the procedures run in it."""

from __future__ import annotations

from dnslab.servers.base import Driver


class Tools(Driver):
    kind = "tools"
