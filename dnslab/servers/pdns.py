"""PowerDNS Authoritative Server (`pdns_server`, Debian's pdns-server) with its bind backend:
a secondary whose zones are listed in a named.conf-style file (`named.conf` in the node
folder), written by the backend into `zones/` after each transfer (the only state it keeps:
wiping `zones/` is a first start); controlled with pdns_control over the control socket in
the node folder; `version.bind CH TXT` says "PowerDNS Authoritative Server 4.7.3".

What it logs (loglevel 6 on stderr; syslog-style timestamps, no year, whole seconds), as
pdns_server 4.7.3 logged it as a secondary of the lab's BIND primary:
- start: "AXFR-in zone '<z>', primary '<ip>', retrieval started"; success: "AXFR-in zone:
  '<z>', primary: '<ip>', zone committed with serial <n>" (no message, record or byte counts);
- refused: "XFR-in zone: '<z>', primary: '<ip>', unable to xfr zone (ResolverException): AXFR
  chunk error: Query Refused (... Excluding zone from slave-checks until <epoch>)";
- out of ephemeral ports it does not fail in connect() as BIND, Knot and NSD do ("address not
  available"): pdns binds its transfer socket (to query-local-address, 0.0.0.0 by default)
  first, and that bind() fails with EADDRINUSE once TIME_WAIT holds every port: "XFR-in zone:
  '<z>', primary: '<ip>', unable to xfr zone (PDNSException): Resolver binding to local TCP
  socket on '<ip>': Address already in use". Such a zone is queued again at once (no
  back-off), so this line comes hundreds of times a second; with 100 ports it transferred
  exactly 100 of 1,000 zones and then none until TIME_WAIT expired;
- at start it sends one SOA query per zone at once; a few of them time out with no UDP loss
  in either namespace ("had 19 timeouts" of 1,003), and each such zone is left alone for 60 s
  ("Unable to retrieve SOA for <z>, this was the first time"), a NOTIFY excepted.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

from dnslab.servers.base import Driver

# pdns's own timestamp (log-timestamp=yes), syslog style: "Nov 23 18:45:44"
_TIMESTAMP = r"(?P<ts>[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2})"


def _log_time(text: str) -> dt.datetime | None:
    # no year in the log: a leap year, so that 29 Feb parses (only differences are used)
    try:
        return dt.datetime.strptime(f"2000 {text}", "%Y %b %d %H:%M:%S")
    except ValueError:
        return None


class Pdns(Driver):
    kind = "pdns"
    transfer_events = (
        ("transfer_ok", re.compile(
            r"AXFR-in zone: '([^']+)', primary: '\S+', zone committed with serial")),
        ("connect_failed", re.compile(
            r"XFR-in zone: '([^']+)', primary: '\S+', unable to xfr zone .*"
            r"(?:Address already in use|Cannot assign requested address)")),
        ("transfer_failed", re.compile(
            r"XFR-in zone: '([^']+)', primary: '\S+', unable to xfr zone"
            r"|Unable to retrieve SOA for ([^,\s]+),")),
    )
    transfer_span_patterns = (r"AXFR-in zone '{zone}', primary '\S+', retrieval started",
                              r"AXFR-in zone: '{zone}', primary: '\S+', zone committed")

    def payload_options(self, payload: int) -> dict[str, Any]:
        return {"udp-truncation-threshold": payload}

    def client_room_options(self, clients: int) -> dict[str, Any]:
        # pdns has no response rate limiting; it takes 20 TCP connections by default
        return {"max-tcp-connections": max(20, 4 * clients)}

    def worker_options(self, count: int) -> dict[str, Any]:
        return {"receiver-threads": count, "reuseport": "yes"}

    def _pdns_control(self, node_dir: Path, *args: str) -> list[str]:
        return ["pdns_control", f"--config-dir={node_dir}", *args]

    def reload_argv(self, node_dir: Path, zone: str) -> list[str]:
        return self._pdns_control(node_dir, "bind-reload-now", zone)

    def zone_status_argv(self, node_dir: Path, zone: str) -> list[str]:
        return self._pdns_control(node_dir, "bind-domain-status", zone)

    def flush_argvs(self, node_dir: Path) -> list[list[str]]:
        return [self._pdns_control(node_dir, "purge")]

    def transfer_span(self, zone: str, log_text: str) -> dict[str, Any]:
        """As Driver.transfer_span, on pdns's own timestamps (whole seconds)."""
        assert self.transfer_span_patterns is not None
        opening, closing = (re.compile(rf"^{_TIMESTAMP} .*?" + p.format(zone=re.escape(zone)),
                                       re.MULTILINE) for p in self.transfer_span_patterns)
        starts = [m.group("ts") for m in opening.finditer(log_text)]
        ends = [m.group("ts") for m in closing.finditer(log_text)]
        start, end = (starts[-1] if starts else None), (ends[-1] if ends else None)
        t0, t1 = (_log_time(start) if start else None), (_log_time(end) if end else None)
        span = (t1 - t0).total_seconds() if t0 is not None and t1 is not None else None
        return {"log_start": start, "log_end": end,
                "log_span_s": round(span, 4) if span is not None else None,
                "log_resolution_s": 1.0}
