"""BIND 9 (`named`): authoritative primary or secondary, controlled with rndc."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from dnslab.servers.base import Driver


class Bind(Driver):
    kind = "bind"
    transfer_events = (
        ("transfer_ok", re.compile(
            r"transfer of '([^/']+)/IN' from \S+: Transfer completed: [1-9]\d* messages")),
        ("connect_failed", re.compile(
            r"transfer of '([^/']+)/IN' from \S+: failed to connect: address not available")),
        ("transfer_failed", re.compile(
            r"transfer of '([^/']+)/IN' from \S+: Transfer status: (?!success|address not av)")),
    )
    # "Transfer completed: 47700 messages, 14000000 records, 691000000 bytes, 26.5 secs"
    transfer_stats_pattern = re.compile(
        r"Transfer completed: (?P<messages>\d+) messages, (?P<records>\d+) "
        r"records, (?P<bytes>\d+) bytes, (?P<secs>[\d.]+) secs")
    transfer_span_patterns = (r"zone {zone}/IN: Transfer started\.",
                              r"transfer of '{zone}/IN' from \S+: Transfer completed")

    def transfer_out_options(self, limit: int) -> dict[str, Any]:
        # Each outgoing transfer is a TCP client too, and BIND takes only 150 by default: a
        # BIND 9.20.26+ secondary keeps every transfer's connection open tcp-reuse-timeout
        # (5 s) after it ends, so a primary left at 150 serves it at most 150 / 5 s = 30
        # connections/s (9.18 secondaries close at once and never came near 150). A cold
        # secondary's connections come in bursts: a listen queue of BIND's 10 overflowed
        # 113-228 times a cold start, SYNs were retried after 1 s, and over TLS the primary
        # reset a few connections right after their 1.5 KB ClientHello (OpenSSL 3.5's post-
        # quantum key share, two segments); the kernel caps the queue at somaxconn.
        if not limit:
            return {}
        return {"transfers-out": limit, "tcp-clients": max(150, limit),
                "tcp-listen-queue": max(10, limit)}

    def worker_options(self, count: int) -> dict[str, Any]:
        return {"workers": count}

    def socket_buffer_options(self, size: int) -> dict[str, Any]:
        return {"udp-receive-buffer": size, "udp-send-buffer": size}

    def stub_resolver_options(self, zones: list[str]) -> dict[str, Any]:
        return {"static_stub": list(zones)}

    def payload_options(self, payload: int) -> dict[str, Any]:
        return {"max-udp-size": payload, "edns-udp-size": payload}

    def client_room_options(self, clients: int) -> dict[str, Any]:
        # tcp-clients holds TCP and DoT connections, http-listener-clients DoH's (default 300)
        return {"tcp-clients": max(150, 4 * clients),
                "http-listener-clients": max(300, 4 * clients)}

    def _rndc(self, node_dir: Path, *args: str) -> list[str]:
        return ["rndc", "-c", str(node_dir / "rndc.conf"), *args]

    def reload_argv(self, node_dir: Path, zone: str) -> list[str]:
        return self._rndc(node_dir, "reload", zone)

    def zone_status_argv(self, node_dir: Path, zone: str) -> list[str]:
        return self._rndc(node_dir, "zonestatus", zone)

    def flush_argvs(self, node_dir: Path) -> list[list[str]]:
        return [self._rndc(node_dir, "flush")]
