"""NSD: authoritative primary or secondary. Its remote control is off in the lab, so a zone
reload is a SIGHUP to the pid in its pidfile (NSD rereads changed zone files on it)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from dnslab.servers.base import Driver


class Nsd(Driver):
    kind = "nsd"
    transfer_events = (
        ("transfer_ok", re.compile(r"zone (\S+?)\.? (?:serial \d+ )?is updated")),
        ("connect_failed", re.compile(
            r"(?:connect|xfrd).*?(?:Cannot assign requested address|address not available)"
            r"(?:.*?zone (\S+))?")),
        ("transfer_failed", re.compile(r"xfrd: zone (\S+?)\.? .*(?:failed|bad)")),
    )
    # "received update to serial 1 at ... from 198.18.0.11 of 691000000 bytes in 26.5 seconds"
    transfer_stats_pattern = re.compile(r"received update to serial \d+ .* of (?P<bytes>\d+) "
                                        r"bytes in (?P<secs>[\d.e-]+) seconds")
    transfer_span_patterns = (r"xfrd: zone {zone} .*(?:AXFR|xfr).*(?:request|started)",
                              r"zone {zone} .*received update")
    state_files = ("xfrd.state", "zone.list")

    def transfer_out_options(self, limit: int) -> dict[str, Any]:
        return {"tcp-count": limit} if limit else {}

    def worker_options(self, count: int) -> dict[str, Any]:
        # one server process per core; SO_REUSEPORT gives each its own socket (nsd.conf(5):
        # "only really useful if you also configure a server-count higher than 1")
        return {"server-count": count, **({"server": {"reuseport": "yes"}} if count > 1 else {})}

    def payload_options(self, payload: int) -> dict[str, Any]:
        return {"server": {"ipv4-edns-size": payload}}

    def client_room_options(self, clients: int) -> dict[str, Any]:
        return {**self.no_rate_limit_options(), "tcp-count": max(100, 4 * clients)}

    def no_rate_limit_options(self) -> dict[str, Any]:
        # Debian builds NSD with RRL on (200 qps per /24); both limits at 0 turn it off
        # (nsd.conf(5): "also set the whitelist-ratelimit to 0 to disable ratelimit
        # processing")
        return {"server": {"rrl-ratelimit": 0, "rrl-whitelist-ratelimit": 0}}

    def extra_address_options(self, addresses: list[str]) -> dict[str, Any]:
        # bound before the addresses exist (nsd.conf(5) ip-freebind: "bind to nonlocal
        # addresses"): the experiment adds them to the node after it is up
        return {"extra_addresses": list(addresses)} if addresses else {}

    def reload_argv(self, node_dir: Path, zone: str) -> list[str]:
        return ["sh", "-c", f'kill -HUP "$(cat "{node_dir}/nsd.pid")"']
