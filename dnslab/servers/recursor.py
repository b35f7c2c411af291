"""PowerDNS Recursor (`pdns_recursor`, Debian's pdns-recursor): the recursive resolver of
PowerDNS, worker threads in one process; controlled with rec_control over the control socket
in its node folder (`socket-dir`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from dnslab.servers.base import Driver


class Recursor(Driver):
    kind = "recursor"

    def _rec_control(self, node_dir: Path, *args: str) -> list[str]:
        return ["rec_control", f"--socket-dir={node_dir}", *args]

    def flush_argvs(self, node_dir: Path) -> list[list[str]]:
        # `<name>$` wipes the name and everything below it: the record cache, the negative
        # cache and the packet cache
        return [self._rec_control(node_dir, "wipe-cache", ".$")]

    def unsettled_commands(self, node_dir: Path) -> list[tuple[list[str], float]]:
        return [(self._rec_control(node_dir, "get", "concurrent-queries", "throttle-entries"),
                 30)]

    def parse_unsettled(self, outputs: list[str]) -> dict[str, int]:
        """`in_progress`: the client queries Recursor is still resolving (its
        `concurrent-queries` metric); `failures_cached`: the failures it holds
        (`throttle-entries`: after a failed resolution Recursor throttles that server, name
        and type, and answers the name SERVFAIL at once while it does, besides keeping the
        SERVFAIL answer in its packet cache for packetcache-servfail-ttl; measured in the
        resolver lab, Recursor 4.8: a broken name failed after 250-390 ms, asked again in
        1-6 ms, one throttle entry per name, and as fast with packetcache-servfail-ttl 0)."""
        values = [int(v) for v in re.findall(r"^\s*(\d+)\s*$", outputs[0], re.M)]
        in_progress, failures = (values + [0, 0])[:2]
        return {"in_progress": in_progress, "failures_cached": failures}

    def worker_options(self, count: int) -> dict[str, Any]:
        # threads: the workers (4.8: UDP and TCP; 5.x: UDP); tcp-threads: 5.x's TCP workers
        return {"threads": count, "tcp-threads": count}

    def client_room_options(self, clients: int) -> dict[str, Any]:
        # max-tcp-clients: 128 on 4.8, 1024 on 5.x; Recursor has no response rate limiting
        return {"max-tcp-clients": max(128, 4 * clients)}

    def resolver_options(self, cores: int, extra: dict[str, Any]) -> dict[str, Any]:
        """Workers for `cores` cores, `extra` (recursor.conf settings) over them. Recursor
        sizes its caches in entries, not bytes: its defaults (1,000,000 records, 500,000
        answer packets) hold the lab's name sets as Unbound's 150 MB does. Seed 003's other
        Unbound settings (slabs, outgoing-range, prefetch, socket buffers) are left at
        Recursor's own."""
        return {**self.worker_options(cores), **extra}
