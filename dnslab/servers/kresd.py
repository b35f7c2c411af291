"""Knot Resolver (kresd): the recursive resolver of CZ.NIC, one single-threaded kresd process
per core the node is given, on shared sockets and one shared cache (LMDB in the node folder);
each process answers Lua commands on its control socket `control/<pid>` in the node folder,
sent with socat."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from dnslab.servers.base import Driver

# what each kresd answers on its control socket before a command's result
_PROMPT = "> "
# the cache size the lab's Unbound gets as a resolver (rrset-cache-size 100m + msg-cache-size
# 50m), for one cache that every kresd of the node shares
RESOLVER_CACHE_MB = 150


class Kresd(Driver):
    kind = "kresd"

    def _each_control(self, node_dir: Path, command: str) -> list[str]:
        """`command` sent to every kresd of the node, one answer each (the sockets are named
        after the processes' pids, so a shell finds them)."""
        return ["sh", "-c",
                f'for socket in "{node_dir}"/control/*; do '
                f"echo '{command}' | socat - UNIX-CONNECT:\"$socket\"; echo; done"]

    def flush_argvs(self, node_dir: Path) -> list[list[str]]:
        # one cache for all of them; each also forgets what it holds in memory of it
        return [self._each_control(node_dir, "cache.clear()")]

    def unsettled_commands(self, node_dir: Path) -> list[tuple[list[str], float]]:
        return [(self._each_control(node_dir, "worker.stats().concurrent"), 30)]

    def parse_unsettled(self, outputs: list[str]) -> dict[str, int]:
        """`in_progress`: the client queries the node's kresd processes are still resolving
        (`worker.stats().concurrent` of each, summed); `failures_cached`: 0, as kresd holds
        no failed answer: a name whose resolution failed is resolved again when asked again
        (measured in the resolver lab, Knot Resolver 5.6: a name of the broken tier asked
        three times in a row failed after 0.96-1.5 s each time)."""
        counts = re.findall(rf"^{re.escape(_PROMPT)}(\d+)\s*$", outputs[0], re.M)
        return {"in_progress": sum(int(n) for n in counts), "failures_cached": 0}

    def worker_options(self, count: int) -> dict[str, Any]:
        return {"workers": count}

    def client_room_options(self, clients: int) -> dict[str, Any]:
        # kresd takes TCP connections without a limit of its own (the process's descriptors),
        # and Knot Resolver 5 has no response rate limiting
        return {}

    def resolver_options(self, cores: int, extra: dict[str, Any]) -> dict[str, Any]:
        """One kresd per core and the cache the lab's Unbound gets as a resolver (150 MB),
        `extra` (kresd.conf options: `cache_mb`, `tcp_pipeline`, `lua`: statements) over
        them. Seed 003's other Unbound settings (slabs, outgoing-range, prefetch, socket
        buffers) are left at kresd's own."""
        return {"workers": cores, "cache_mb": RESOLVER_CACHE_MB, **extra}
