"""What the lab knows about one kind of DNS server: the `Driver`, a catalogue entry.

A driver per server kind (the `dnslab.server` label: bind, knot, nsd, ...) reads what the
kind is from its manifest (`<kind>.yaml`: roles, Debian package and binary, configuration
files, XoT, health query; `dnslab.servers.manifest`) and holds its behaviour as pure
functions: how the lab's generic options (UDP payload, room for TCP clients, rate limiting,
tuned settings) translate into its own, its log lines (transfer events, transfer statistics
and span), its state files, and the argv of its control commands (reload, flush, zone
status, what a resolver still has unsettled) with the parsing of their output. A driver
never touches a running lab: a node of a lab (`dnslab.node.LabNode`, from `lab.node(name)`)
runs those commands and waits, modelled on Knot's `tests-extra/tools/dnstest/server.py` and
BIND's isctest `instance.py`. Procedures ask a node's driver (`dnslab.servers.driver(kind)`)
or the node itself, and never name a daemon.

The generic parts live here; a kind's module sets its log patterns and overrides what
differs.
"""

from __future__ import annotations

import datetime as dt
import glob
import re
import shutil
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar

from dnslab.errors import LabError
from dnslab.servers.manifest import (
    ENCRYPTED_TRANSPORTS,
    Manifest,
    kinds_for_role,
    kinds_serving,
    manifest,
    xot_kinds,
)

# A daemon's own timestamps on the log lines that open and close an AXFR (BIND -g:
# "23-Nov-2026 15:18:06.991", Knot: ISO 8601, NSD: "[2026-11-23 15:18:06.991]").
LOG_TIMESTAMP = (r"(?P<ts>\d{2}-[A-Z][a-z]{2}-\d{4} \d{2}:\d{2}:\d{2}(?:\.\d+)?"
                 r"|\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[+-]\d{2}:?\d{2}|Z)?)")
_LOG_TIME_FORMATS = ("%d-%b-%Y %H:%M:%S.%f", "%d-%b-%Y %H:%M:%S", "%Y-%m-%dT%H:%M:%S.%f%z",
                     "%Y-%m-%dT%H:%M:%S%z", "%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d %H:%M:%S")
# folders of a node that hold what a server transferred or built (render creates them)
STATE_DIRS = ("zones", "db", "xfr")

LogEvents = tuple[tuple[str, re.Pattern[str]], ...]

# where every kind serves each transport (the templates read them; generators and probes
# connect to them): DNS over TLS on 853 (RFC 7858), DNS over HTTPS on 443 at /dns-query
TRANSPORTS = ("udp", "tcp", *ENCRYPTED_TRANSPORTS)
TRANSPORT_PORTS = {"udp": 53, "tcp": 53, "dot": 853, "doh": 443}
DOH_PATH = "/dns-query"
# the lab's certificate and key of a node with an encrypted listener, in its node folder
# (dnslab.certificates makes them when the lab is rendered)
TLS_CERT, TLS_KEY = "tls.crt", "tls.key"


def log_time(text: str) -> dt.datetime | None:
    """A daemon's log timestamp (any of the formats in LOG_TIMESTAMP), or None."""
    for fmt in _LOG_TIME_FORMATS:
        try:
            return dt.datetime.strptime(text, fmt)
        except ValueError:
            continue
    return None


def merge_options(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """`extra` over `base`; the nested `server` block (options of the daemon's `server:`
    section, for the kinds whose templates have one) is merged key by key."""
    merged = dict(base)
    for key, value in extra.items():
        if key == "server" and isinstance(value, dict):
            merged["server"] = {**merged.get("server", {}), **value}
        else:
            merged[key] = value
    return merged


class LogFollower:
    """Reads the lines a daemon appends to its log and classifies them by `events`
    (event name, pattern whose first non-empty group is the zone)."""

    def __init__(self, path: Path, events: LogEvents):
        self.path = path
        self.patterns = events
        self.offset = path.stat().st_size if path.exists() else 0
        self.partial = ""

    def lines(self) -> list[str]:
        """The whole lines written since the last call."""
        if not self.path.exists():
            return []
        with open(self.path, errors="replace") as handle:
            handle.seek(self.offset)
            chunk = handle.read()
            self.offset = handle.tell()
        lines = (self.partial + chunk).split("\n")
        self.partial = lines.pop()
        return lines

    def poll(self) -> list[tuple[str, str]]:
        events = []
        for line in self.lines():
            for event, pattern in self.patterns:
                match = pattern.search(line)
                if match:
                    zone = next((g for g in match.groups() if g), "") if match.groups() else ""
                    events.append((event, zone.rstrip(".")))
                    break
        return events


class Driver:
    """One server kind: its manifest's data, and the behaviour subclasses override."""

    kind: ClassVar[str]
    # a secondary's log lines: transfer_ok | connect_failed | transfer_failed, zone in group 1
    transfer_events: ClassVar[LogEvents] = ()
    # the daemon's own figures for a finished AXFR (named groups messages/records/bytes/secs)
    transfer_stats_pattern: ClassVar[re.Pattern[str] | None] = None
    # the log lines that open and close an AXFR of `{zone}` (format strings, zone escaped)
    transfer_span_patterns: ClassVar[tuple[str, str] | None] = None
    # files in the node folder that keep a secondary's state between starts
    state_files: ClassVar[tuple[str, ...]] = ()

    # --- what it is and what the host needs (its manifest) --------------------------------

    @cached_property
    def manifest(self) -> Manifest:
        return manifest(self.kind)

    @property
    def roles(self) -> frozenset[str]:
        """The lab roles (dnslab.role) a node of this kind may have."""
        return self.manifest.roles

    @property
    def package(self) -> str | None:
        """The Debian package of the daemon (None: no daemon)."""
        return self.manifest.package

    @property
    def binary(self) -> str | None:
        """The daemon binary the netns runtime needs (None: no daemon)."""
        return self.manifest.binary

    @property
    def commands(self) -> dict[str, str]:
        """Other commands a node of this kind needs on the netns runtime -> their package
        (those in the daemon's own package need not be listed)."""
        return self.manifest.commands

    @property
    def files(self) -> dict[str, str]:
        """Files (glob patterns) the daemon needs that no command stands for, e.g. a
        backend library -> their package."""
        return self.manifest.files

    @property
    def config_files(self) -> tuple[str, ...]:
        """Files rendered into the node folder from `topologies/templates/<kind>/<file>.j2`."""
        return self.manifest.config_files

    @property
    def xot(self) -> bool:
        """Zone transfers over TLS (XoT, RFC 9103), as primary and as secondary."""
        return self.manifest.xot

    @property
    def encrypted_transports(self) -> tuple[str, ...]:
        """The encrypted transports (dot, doh) its packaged version serves to clients."""
        return self.manifest.encrypted_transports

    @property
    def health_query(self) -> str | None:
        """The record type of the query whose answer shows a node works (None: no daemon)."""
        return self.manifest.health_query

    def config_check_argv(self, node_dir: Path) -> list[str] | None:
        """The kind's own checker of a rendered node folder (its manifest's `config_check`);
        None for a kind without one (a client)."""
        if not self.manifest.config_check:
            return None
        return [arg.replace("{node_dir}", str(node_dir)) for arg in self.manifest.config_check]

    @property
    def runs_daemon(self) -> bool:
        return self.binary is not None

    def templates(self) -> dict[str, str]:
        """Node-folder file -> its template; `run.sh` (which execs the daemon) included."""
        files = {name: f"{self.kind}/{name}.j2" for name in self.config_files}
        if self.runs_daemon:
            files["run.sh"] = f"{self.kind}/run.sh.j2"
        return files

    def missing_packages(self, which: Callable[[str], str | None] | None = None) -> list[str]:
        """The Debian packages the netns runtime lacks for this kind (its control commands
        come with the daemon's package)."""
        which = which or shutil.which
        needed = dict(self.commands)
        if self.binary and self.package:
            needed[self.binary] = self.package
        missing = {pkg for command, pkg in needed.items() if which(command) is None}
        missing |= {pkg for pattern, pkg in self.files.items() if not glob.glob(pattern)}
        return sorted(missing)

    def supports(self, role: str) -> bool:
        return role in self.roles

    def check_xot(self) -> None:
        if not self.xot:
            raise LabError(f"the packaged {self.kind} cannot transfer zones over TLS (XoT)",
                           hint="TRANSPORTS=tcp, or servers that can: "
                           + ", ".join(xot_kinds()))

    # --- option translation (the node options its templates read) -----------------------

    def payload_options(self, payload: int) -> dict[str, Any]:
        """The options that cap the UDP answers it sends (and the EDNS size it offers)."""
        return {}

    def client_room_options(self, clients: int) -> dict[str, Any]:
        """Room for `clients` concurrent TCP clients, and no response rate limiting."""
        return {}

    def no_rate_limit_options(self) -> dict[str, Any]:
        """Response rate limiting off (where the packaged default has it on)."""
        return {}

    def discard_timeout_options(self, ms: int) -> dict[str, Any]:
        """A resolver that drops the reply of a resolution taking longer than `ms` (0: answers
        however long it took); {} for a kind without such a limit."""
        return {}

    def transfer_out_options(self, limit: int) -> dict[str, Any]:
        """A primary that runs up to `limit` outgoing zone transfers at once (0: its default)."""
        return {}

    def worker_options(self, count: int) -> dict[str, Any]:
        """Serve with `count` worker threads or processes (one per core it may use)."""
        return {}

    def socket_buffer_options(self, size: int) -> dict[str, Any]:
        """Its UDP sockets' receive and send buffers at `size` bytes, by its own option
        (SO_RCVBUF/SO_SNDBUF, within the kernel's rmem_max/wmem_max); {}: it has none."""
        return {}

    def stub_resolver_options(self, zones: list[str]) -> dict[str, Any]:
        """A secondary's kind run as a resolver instead: recursion through static-stub
        `zones` to the lab's primary (F6's seed ran BIND so); a LabError where it cannot."""
        raise self._not_for("stub resolver")

    def benchmark_options(self, cores: int) -> dict[str, Any]:
        """What every node of this kind gets before an experiment's own options, whoever
        brings the lab up (render.py): one worker per core the node is given and no
        response rate limiting. Query logging is off in the templates themselves."""
        return merge_options(self.worker_options(cores), self.no_rate_limit_options())

    def tuned_options(self, base: dict[str, Any], tuned: dict[str, Any]) -> dict[str, Any]:
        """An experiment's tuned settings for this kind over its base options."""
        return merge_options(base, tuned)

    def _not_for(self, what: str) -> LabError:
        return LabError(f"the lab has no {what} settings for {self.kind}",
                        hint=f"add them to its driver (dnslab/servers/{self.kind}.py)")

    def transport_options(self, transports: list[str] | tuple[str, ...]) -> dict[str, Any]:
        """Listeners for `transports` beside UDP and TCP on 53, which every kind serves: DoT on
        853, DoH on 443 at DOH_PATH (TRANSPORT_PORTS), with the certificate the lab makes
        for the node (`tls.crt`, `tls.key` in its folder). A transport its packaged version
        does not serve (its manifest's `encrypted_transports`) is a LabError naming the
        kinds that do."""
        unknown = [t for t in transports if t not in TRANSPORTS]
        if unknown:
            raise LabError(f"unknown transport(s) {', '.join(unknown)}",
                           hint="transports: " + ", ".join(TRANSPORTS))
        missing = [t for t in transports if t in ENCRYPTED_TRANSPORTS
                   and t not in self.encrypted_transports]
        if missing:
            raise LabError(f"the packaged {self.kind} does not serve {', '.join(missing)} "
                           "(its manifest says why)",
                           hint="; ".join(f"{t}: {', '.join(kinds_serving(t))}" for t in missing))
        return {t: True for t in transports if t in ENCRYPTED_TRANSPORTS}

    def extra_address_options(self, addresses: list[str]) -> dict[str, Any]:
        """Serve on `addresses` as well as the node's own, addresses an experiment puts on
        the node once it is up (F4's broken tier behind several name-server addresses)."""
        raise self._not_for("extra listen address")

    def resolver_options(self, cores: int, extra: dict[str, Any]) -> dict[str, Any]:
        """A resolver's tuned settings for `cores` cores (seed 003), `extra` over them."""
        raise self._not_for("resolver")

    def listener_options(self, cpus: list[int] | None) -> dict[str, Any]:
        """A front-end's listeners: one plain listener (cpus None), or the seed's tuning
        with one listener per CPU in `cpus` (seed 001)."""
        raise self._not_for("front-end listener")

    def refuse_all_options(self) -> dict[str, Any]:
        """Answer REFUSED to every query, with no back-ends (a flood target)."""
        raise self._not_for("refuse-all")

    # --- control commands (argv run inside the node; None: the kind has no such command) --

    def reload_argv(self, node_dir: Path, zone: str) -> list[str] | None:
        return None

    def zone_status_argv(self, node_dir: Path, zone: str) -> list[str] | None:
        return None

    def flush_argvs(self, node_dir: Path) -> list[list[str]] | None:
        return None

    def unsettled_commands(self, node_dir: Path) -> list[tuple[list[str], float]] | None:
        """The commands (argv, timeout in s) whose outputs `parse_unsettled` reads; None:
        this kind cannot tell what it still has unsettled."""
        return None

    def parse_unsettled(self, outputs: list[str]) -> dict[str, int]:
        """A resolver's leftovers from the last load, from the outputs of
        `unsettled_commands`: `in_progress` (queries it is still resolving) and
        `failures_cached` (failed resolutions it answers from its cache for a while)."""
        raise self._not_for("unsettled")

    # --- evidence ------------------------------------------------------------------------

    def answer_healthy(self, rcode: str, options: dict[str, Any]) -> bool:
        """Whether an answer to the node's health query shows it works: NOERROR, or an rcode
        the node's options list as its own (`health_rcodes`: a server meant to fail)."""
        return rcode == "NOERROR" or rcode in options.get("health_rcodes", ())

    # --- a secondary's transfers, from its log -------------------------------------------

    def log_follower(self, path: Path) -> LogFollower:
        """Follows a secondary's log for `transfer_events`."""
        if not self.transfer_events:
            raise LabError(f"the lab cannot read {self.kind}'s transfer log",
                           hint="SECONDARY=" + " | ".join(kinds_for_role("secondary")))
        return LogFollower(path, self.transfer_events)

    def transfer_stats(self, log_text: str) -> dict[str, float]:
        """The daemon's own figures for the last AXFR in `log_text` (empty when none)."""
        if self.transfer_stats_pattern is None:
            return {}
        found = list(self.transfer_stats_pattern.finditer(log_text))
        if not found:
            return {}
        return {k: float(v) for k, v in found[-1].groupdict().items() if v is not None}

    def transfer_span(self, zone: str, log_text: str) -> dict[str, Any]:
        """Start and end of the last AXFR of `zone` as the secondary logged them, the time
        between them (None where the log has no timestamped line for it) and the resolution
        of the log's clock."""
        start = end = None
        if self.transfer_span_patterns is not None:
            opening, closing = (re.compile(LOG_TIMESTAMP + r".*?" + p.format(zone=re.escape(zone)))
                                for p in self.transfer_span_patterns)
            starts = [m.group("ts") for m in opening.finditer(log_text)]
            ends = [m.group("ts") for m in closing.finditer(log_text)]
            start, end = (starts[-1] if starts else None), (ends[-1] if ends else None)
        t0, t1 = (log_time(start) if start else None), (log_time(end) if end else None)
        span = (t1 - t0).total_seconds() if t0 is not None and t1 is not None else None
        fraction = re.search(r":\d{2}\.(\d+)", start or end or "")
        return {"log_start": start, "log_end": end,
                "log_span_s": round(span, 4) if span is not None else None,
                "log_resolution_s": 10.0 ** -len(fraction.group(1)) if fraction else 1.0}

    def wipe_state(self, node_dir: Path) -> None:
        """Leave the node with nothing transferred on disk, as on a first start."""
        for sub in STATE_DIRS:
            shutil.rmtree(node_dir / sub, ignore_errors=True)
            (node_dir / sub).mkdir()
        for name in self.state_files:
            (node_dir / name).unlink(missing_ok=True)
        for journal in node_dir.glob("*.jnl"):
            journal.unlink()

