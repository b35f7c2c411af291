"""Unbound: the recursive resolver, controlled with unbound-control over a unix socket in
its node folder."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from dnslab.servers.base import Driver

SERVFAIL = 2  # the rcode in the low 4 bits of a message's flags


class Unbound(Driver):
    kind = "unbound"

    def _control_argv(self, node_dir: Path, *args: str) -> list[str]:
        return ["unbound-control", "-c", str(node_dir / "unbound.conf"), *args]

    def flush_argvs(self, node_dir: Path) -> list[list[str]]:
        return [self._control_argv(node_dir, *args) for args in
                (["flush_zone", "."], ["flush_infra", "all"], ["flush_requestlist"])]

    def unsettled_commands(self, node_dir: Path) -> list[tuple[list[str], float]]:
        return [(self._control_argv(node_dir, "stats_noreset"), 30),
                (self._control_argv(node_dir, "dump_cache"), 60)]

    def parse_unsettled(self, outputs: list[str]) -> dict[str, int]:
        """`in_progress`: client queries Unbound is still resolving
        (`total.requestlist.current.all` of stats_noreset); `failures_cached`: SERVFAIL
        answers in its message cache (`dump_cache` msg lines, rcode 2). Unbound keeps a
        failed resolution for 5 s (NORR_TTL in util/data/msgparse.h, compiled in), so a name
        asked again within 5 s fails at once instead of after its round trips."""
        stats, dump = outputs
        match = re.search(r"^total\.requestlist\.current\.all=(\d+)", stats, re.M)
        failures = sum(1 for line in dump.splitlines() if line.startswith("msg ")
                       and len(parts := line.split()) > 4 and parts[4].isdigit()
                       and int(parts[4]) & 0xF == SERVFAIL)
        return {"in_progress": int(match.group(1)) if match else 0,
                "failures_cached": failures}

    def worker_options(self, count: int) -> dict[str, Any]:
        return {"server": {"num-threads": count}}

    def socket_buffer_options(self, size: int) -> dict[str, Any]:
        return {"server": {"so-rcvbuf": size, "so-sndbuf": size}}

    def client_room_options(self, clients: int) -> dict[str, Any]:
        # incoming-num-tcp: connections per thread (TCP, DoT and DoH alike; default 10), each
        # with a 64 KB buffer
        return {"server": {"incoming-num-tcp": max(10, 2 * clients)}}

    def no_rate_limit_options(self) -> dict[str, Any]:
        # ratelimit, ip-ratelimit: Unbound's defaults (0: unlimited), written out so that the
        # config says so; wait-limit: since the DNSBomb fix (CVE-2024-33655: Unbound 1.20,
        # Debian 12's 1.17.1-2+deb12u3, Debian 13's 1.26) at most 1,000 replies may wait for
        # recursion per client address, its man page's "ratelimit per IP address": a load
        # generator is one address with up to 5,000 queries in flight
        return {"server": {"ratelimit": 0, "ip-ratelimit": 0, "wait-limit": 0}}

    def discard_timeout_options(self, ms: int) -> dict[str, Any]:
        # discard-timeout (1,900 ms by default): CVE-2024-33655's fix, Unbound 1.20,
        # backported to Debian 12's 1.17.1-2+deb12u3; 0 answers as Unbound did before it
        return {"server": {"discard-timeout": ms}}

    def resolver_options(self, cores: int, extra: dict[str, Any]) -> dict[str, Any]:
        """Seed 003's server: block, with num-threads and outgoing-range scaled to `cores`.

        Left out on purpose: `ipsecmod`/`validator` modules and trust anchors (the lab zones
        are unsigned), `log-queries` (one log line per query would measure the logger),
        `ip-transparent`, and the seed's `access-control` (the template allows the lab LAN).
        """
        return {"server": {
            "num-threads": cores,
            "so-reuseport": "yes",
            "msg-cache-slabs": 4096, "rrset-cache-slabs": 4096,
            "infra-cache-slabs": 4096, "key-cache-slabs": 4096,
            "rrset-cache-size": "100m", "msg-cache-size": "50m",
            # the seed's rule: 1024 / cores - 50
            "outgoing-range": max(64, 1024 // cores - 50),
            "so-rcvbuf": "4m",
            "incoming-num-tcp": 1000, "outgoing-num-tcp": 1000,
            "statistics-interval": 0, "statistics-cumulative": "no",
            "extended-statistics": "yes",
            "harden-glue": "yes", "harden-below-nxdomain": "yes",
            "harden-referral-path": "yes",
            "unwanted-reply-threshold": 10000000,
            "prefetch": "yes", "rrset-roundrobin": "yes", "minimal-responses": "yes",
            **extra,
        }}
