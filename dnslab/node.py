"""A handle on one running node of a lab: what acts on its server.

`lab.node("primary")` gives a `LabNode`, built by the lab from the catalogue (the node's
server kind's driver, `dnslab.servers`). It runs the driver's control commands inside the
node (reload a zone, zone status, flush caches, what a resolver still has unsettled), asks
the server (health, version) and waits on evidence (a log line, an SOA serial). The driver
says what to run and how to read the answer; the node runs it.

The node needs only a small part of its lab (`NodeHost`: run a command in a node, a node's
folder, log, liveness, network namespace and address), so this module does not import
`dnslab.lab`.
"""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path
from typing import Protocol

from dnslab import probe
from dnslab.errors import LabError
from dnslab.servers.base import Driver, LogFollower
from dnslab.wait import WaitTimeout, wait_until


class NodeHost(Protocol):
    """What a node handle needs from its lab (`dnslab.lab.Lab` is one)."""

    def run(self, node: str, argv: list[str], timeout: float | None = None,
            check: bool = True) -> subprocess.CompletedProcess[str]: ...

    def node_dir(self, node: str) -> Path: ...

    def log(self, node: str) -> Path: ...

    def alive(self, node: str) -> bool: ...

    def netns(self, node: str) -> str: ...

    def address(self, node: str) -> str: ...

    def ask(self, from_node: str, server: str, name: str, rdtype: str = "SOA",
            timeout: float = 1.0, tcp: bool = False,
            **options: object) -> probe.Answer | None: ...


class LabNode:
    """One node of a running lab, with its server kind's driver."""

    def __init__(self, host: NodeHost, name: str, driver: Driver):
        self.host = host
        self.name = name
        self.driver = driver

    def __repr__(self) -> str:
        return f"LabNode({self.name!r}, {self.driver.kind})"

    @property
    def kind(self) -> str:
        return self.driver.kind

    @property
    def dir(self) -> Path:
        return self.host.node_dir(self.name)

    # --- control commands ----------------------------------------------------------------

    def _control(self, what: str, argv: list[str] | None) -> str:
        if argv is None:
            raise LabError(f"node {self.name!r} ({self.kind}) has no {what} command in the lab",
                           hint="add one to its driver in dnslab/servers/")
        proc = self.host.run(self.name, argv, timeout=30)
        return f"$ {' '.join(argv)}\n{proc.stdout}{proc.stderr}"

    def reload_zone(self, zone: str) -> str:
        """Make the server load `zone` from its file again (a primary after an edit);
        returns the command and its output."""
        return self._control("reload", self.driver.reload_argv(self.dir, zone.rstrip(".")))

    def zone_status(self, zone: str) -> str:
        return self._control("zone status",
                             self.driver.zone_status_argv(self.dir, zone.rstrip(".")))

    def flush(self) -> str:
        """Empty the server's caches; returns the commands and their output."""
        argvs = self.driver.flush_argvs(self.dir)
        if argvs is None:
            return self._control("cache flush", None)
        return "".join(self._control("cache flush", argv) for argv in argvs)

    def unsettled(self) -> dict[str, int] | None:
        """A resolver's leftovers from the last load (`Driver.parse_unsettled`); None: this
        kind cannot tell."""
        commands = self.driver.unsettled_commands(self.dir)
        if commands is None:
            return None
        outputs = [self.host.run(self.name, argv, timeout=timeout).stdout
                   for argv, timeout in commands]
        return self.driver.parse_unsettled(outputs)

    # --- evidence: health, version, log lines, serials -----------------------------------

    def ask_health(self, zone: str, timeout: float) -> probe.Answer | None:
        """The node's answer to its health query for `zone`, asked from inside its own
        namespace; None when no answer came (or the kind has no health query)."""
        rdtype = self.driver.health_query
        if rdtype is None:
            return None
        return self.host.ask(self.name, self.host.address(self.name), zone, rdtype,
                             timeout=timeout)

    def version(self, from_node: str) -> str | None:
        """What the server says it is (`version.bind CH TXT`, asked from `from_node`, the
        lab's client), or None if it will not say."""
        answer = self.host.ask(from_node, self.host.address(self.name), "version.bind", "TXT",
                               timeout=2.0, rdclass="CH", edns=False)
        return answer.texts[0] if answer and answer.texts else None

    def wait_for_log(self, pattern: str | re.Pattern[str], timeout: float,
                     since: int = 0) -> str:
        """Wait until the node's log has a line matching `pattern` after byte `since`;
        return that line, or raise a LabError after `timeout` seconds or if it exits."""
        wanted = re.compile(pattern) if isinstance(pattern, str) else pattern
        path = self.host.log(self.name)
        follower = LogFollower(path, ())
        follower.offset = since

        def logged() -> str | None:
            for line in follower.lines():
                if wanted.search(line):
                    return line
            if not self.host.alive(self.name):
                raise LabError(f"node {self.name!r} ({self.kind}) exited",
                               hint=f"its log: {path}")
            return None

        return wait_until(logged, timeout, f"node {self.name!r} ({self.kind}) to log a line "
                          f"matching {wanted.pattern!r}", interval=0.05,
                          hint=f"its log: {path}")

    def wait_for_serial(self, zone: str, serial: int, timeout: float, from_node: str) -> float:
        """Wait until the node answers `zone` SOA with `serial` (asked from `from_node`, the
        lab's client); return the seconds it took."""
        start = time.monotonic()

        def has_serial() -> bool:
            soa = self.host.ask(from_node, self.host.address(self.name), zone, "SOA",
                                timeout=0.5)
            return soa is not None and soa.serial == serial

        try:
            wait_until(has_serial, timeout, f"serial {serial} of {zone} on {self.name}",
                       interval=0.1)
            took: float | None = time.monotonic() - start
        except WaitTimeout:
            took = None
        if took is None:
            raise LabError(f"node {self.name!r} ({self.kind}) did not serve {zone} serial "
                           f"{serial} within {timeout:.0f} s",
                           hint=f"its log: {self.host.log(self.name)}")
        return took
