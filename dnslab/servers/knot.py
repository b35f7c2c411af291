"""Knot DNS (`knotd`): authoritative primary or secondary, controlled with knotc over the
control socket in its run directory (the node folder)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from dnslab.servers.base import Driver


class Knot(Driver):
    kind = "knot"
    transfer_events = (
        ("transfer_ok", re.compile(r"\[([^\]]+)\] AXFR, incoming, remote \S+, finished")),
        ("connect_failed", re.compile(
            r"\[([^\]]+)\] .*(?:address (?:is )?not available|Cannot assign requested address)")),
        ("transfer_failed", re.compile(r"\[([^\]]+)\] refresh, remote \S+, failed")),
    )
    # "AXFR, incoming, remote 198.18.0.11@53, finished, 26.50 seconds, 47700 messages,
    # 691000000 bytes"
    transfer_stats_pattern = re.compile(
        r"AXFR, incoming, remote \S+, finished, (?P<secs>[\d.]+) seconds, "
        r"(?P<messages>\d+) messages, (?P<bytes>\d+) bytes")
    transfer_span_patterns = (r"\[{zone}\.\] AXFR, incoming, remote \S+, started",
                              r"\[{zone}\.\] AXFR, incoming, remote \S+, finished")

    def worker_options(self, count: int) -> dict[str, Any]:
        return {"udp-workers": count, "tcp-workers": count}

    def payload_options(self, payload: int) -> dict[str, Any]:
        return {"server": {"udp-max-payload": payload}}

    def _knotc(self, node_dir: Path, *args: str) -> list[str]:
        return ["knotc", "-c", str(node_dir / "knot.conf"), *args]

    def reload_argv(self, node_dir: Path, zone: str) -> list[str]:
        return self._knotc(node_dir, "zone-reload", f"{zone}.")

    def zone_status_argv(self, node_dir: Path, zone: str) -> list[str]:
        return self._knotc(node_dir, "zone-status", f"{zone}.")
