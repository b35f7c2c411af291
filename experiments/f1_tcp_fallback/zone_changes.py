"""The seed's function test on the primary's zone: add, then delete, a record (a new SOA
serial, a reload, NOTIFY to the secondaries) and measure how long the server under test takes
to serve the change (`function.csv`).
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from dnslab.errors import LabError
from dnslab.lab import Lab
from dnslab.wait import WaitTimeout, wait_until

FUNCTION_COLUMNS = ["change", "action", "name", "serial", "sync_s", "ok"]
SOA_SERIAL = re.compile(r"^(@\s+(?:\d+\s+)?(?:IN\s+)?SOA\s+\S+\s+\S+\s+)(\d+)", re.MULTILINE)


def _bump_serial(text: str) -> tuple[str, int]:
    match = SOA_SERIAL.search(text)
    if match is None:
        raise LabError("cannot find the zone's SOA serial to bump",
                       hint="the function test expects '@ SOA mname rname serial ...'")
    serial = int(match.group(2)) + 1
    return text[:match.start(2)] + str(serial) + text[match.end(2):], serial


def sync_changes(lab: Lab, node: str, zone_file: Path, origin: str, changes: int,
                 timeout_s: float, *, primary: str, client: str) -> list[dict[str, Any]]:
    """The seed's function test: add, then delete, a record on the `primary` node (new
    serial, a zone reload by the primary's control command, NOTIFY to the secondaries) and
    wait for the evidence on the server under test in `node`, asked from the `client` node:
    its SOA serial, then the record present (add) or gone (delete)."""
    rows: list[dict[str, Any]] = []
    primary_node = lab.node(primary)
    for k in range(changes):
        name = f"dnslab-function-{k}.{origin}"
        for action in ("add", "delete"):
            text = zone_file.read_text()
            if action == "add":
                text = text.rstrip("\n") + f'\n{name} 300 IN TXT "dnslab function test {k}"\n'
            else:
                text = "".join(line for line in text.splitlines(keepends=True)
                               if not line.startswith(name + " "))
            text, serial = _bump_serial(text)
            zone_file.write_text(text)
            lab.push(primary, [zone_file])  # where the primary reads it, on its own host
            start = time.monotonic()
            primary_node.reload_zone(origin)
            synced = _time_to_serve(lab, client, node, origin, serial, name, action == "add",
                                    start, timeout_s)
            rows.append({"change": k, "action": action, "name": name, "serial": serial,
                         "sync_s": round(synced, 3) if synced is not None else None,
                         "ok": synced is not None})
    return rows


def _time_to_serve(lab: Lab, client: str, node: str, origin: str, serial: int, name: str,
                   present: bool, start: float, timeout_s: float) -> float | None:
    """Seconds from `start` until `node` serves the new serial and then the record present
    (or gone), asked from `client`; None when not within `timeout_s` of `start`."""
    target = lab.address(node)

    def left() -> float:
        return max(0.0, start + timeout_s - time.monotonic())

    try:
        lab.node(node).wait_for_serial(origin, serial, left(), from_node=client)
    except LabError:
        return None

    def changed() -> bool:
        answer = lab.ask(client, target, name, "TXT", timeout=0.5)
        return answer is not None and (answer.answers == 1 if present
                                       else answer.rcode == "NXDOMAIN")

    try:
        wait_until(changed, left(), f"{name} {'present' if present else 'gone'} on {node}")
    except WaitTimeout:
        return None
    return time.monotonic() - start
