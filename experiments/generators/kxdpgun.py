"""kxdpgun (Knot's XDP query generator, knot-dnsutils) inside a lab node: an open-loop UDP
flood that sends at its rate whatever the answers do (F2, `dnsdist`); its raw output is kept,
its totals parsed into a `FloodResult` with the generator's own CPU time.

Knot 3.4's kxdpgun (the lab's, from Debian 13: the tools image and root pin knot-dnsutils
3.4.6) prints its statistics as JSON with `-j` (DNS-OARC's dns-metrics schema: a header with
its version, a summary per thread, `stats_sum` with nanosecond `since`/`until`); the lab reads
that (tests/fixtures/kxdpgun/: its output here). The text totals of older versions are still
read, for their kept raw output.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from dnslab.errors import LabError
from dnslab.lab import Lab
from dnslab.probe import check_lab_address
from experiments.generators.perf import run_tool

_KXDPGUN: dict[str, re.Pattern[str]] = {
    "sent": re.compile(r"total queries:\s+(\d+)"),
    "sent_pps": re.compile(r"total queries:\s+\d+\s+\((\d+) pps\)"),
    "received": re.compile(r"total replies:\s+(\d+)"),
    "received_pps": re.compile(r"total replies:\s+\d+\s+\((\d+) pps\)"),
    "duration_s": re.compile(r"^duration:\s+([0-9.]+) s", re.M),
}
_KXDPGUN_RCODE = re.compile(r"^responded (\S+):\s+(\d+)", re.M)
# -j's output: one JSON array, its brackets on lines of their own
_JSON_ARRAY = re.compile(r"^\[\s*$.*^\]\s*$", re.M | re.S)


@dataclass
class FloodResult:
    """What one open-loop kxdpgun run printed, and what it cost the generator."""

    sent: int = 0
    received: int = 0
    duration_s: float = 0.0
    sent_pps: float | None = None
    received_pps: float | None = None
    rcodes: dict[str, int] = field(default_factory=dict)
    generator_cpu_s: float | None = None
    wall_s: float | None = None
    target_qps: float = 0.0
    returncode: int = 0
    version: str | None = None  # what the tool said it is (its JSON header)

    # kxdpgun prints whole seconds but computes its pps from microseconds: use those
    @property
    def offered_qps(self) -> float:
        if self.sent_pps is not None:
            return self.sent_pps
        return self.sent / self.duration_s if self.duration_s else 0.0

    @property
    def qps(self) -> float:
        """Answers received per second."""
        if self.received_pps is not None:
            return self.received_pps
        return self.received / self.duration_s if self.duration_s else 0.0

    @property
    def failures_per_s(self) -> float:
        """Queries sent and never answered, per second."""
        return max(0, self.sent - self.received) / self.duration_s if self.duration_s else 0.0

    def row(self) -> dict[str, Any]:
        row = {k: v for k, v in asdict(self).items() if k != "rcodes"}
        row.update({"offered_qps": round(self.offered_qps, 1), "qps": round(self.qps, 1),
                    "failures_per_s": round(self.failures_per_s, 1),
                    "generator_cpu_pct": (round(100 * self.generator_cpu_s / self.wall_s, 1)
                                          if self.generator_cpu_s is not None and self.wall_s
                                          else None)})
        for name in ("NOERROR", "NXDOMAIN", "REFUSED", "SERVFAIL"):
            row[f"rcode_{name}"] = self.rcodes.get(name, 0)
        return row


def parse_kxdpgun_json(text: str) -> FloodResult:
    """kxdpgun -j's statistics: the `stats_sum` record's queries, responses and rcodes over
    its since..until span (the header's time units), and the header's version."""
    found = _JSON_ARRAY.search(text)  # a warning on stderr may come before it
    try:
        records = json.loads(found.group(0) if found else text)
    except json.JSONDecodeError as exc:
        raise LabError(f"kxdpgun's JSON does not parse: {exc}",
                       hint="see the raw kxdpgun output file in the cell folder") from None
    header = next((r for r in records if r.get("type") == "header"), {})
    total = next((r for r in reversed(records) if r.get("type") == "stats_sum"), None)
    if total is None:
        raise LabError("kxdpgun printed no stats_sum record",
                       hint="see the raw kxdpgun output file in the cell folder")
    units = float(header.get("time_units_per_sec") or 1e9)
    duration = max(0.0, (int(total["until"]) - int(total["since"])) / units)
    sent, received = int(total["queries"]), int(total["responses"])
    return FloodResult(sent=sent, received=received, duration_s=duration,
                       sent_pps=sent / duration if duration else None,
                       received_pps=received / duration if duration else None,
                       rcodes={str(k): int(v) for k, v in
                               (total.get("response_rcodes") or {}).items()},
                       version=header.get("generator_version"))


def parse_kxdpgun(text: str) -> FloodResult:
    """kxdpgun's totals: its JSON (`-j`, Knot 3.4+), else its text ("total queries: N (R
    pps)", "total replies: ...", "responded X: N", "duration: S s"); raises LabError without
    them."""
    if _JSON_ARRAY.search(text):
        return parse_kxdpgun_json(text)
    found: dict[str, float] = {}
    for name, pattern in _KXDPGUN.items():
        match = pattern.search(text)
        if match:
            found[name] = float(match.group(1))
    if "sent" not in found:
        last = (text.strip().splitlines() or ["no output"])[-1]
        raise LabError(f"kxdpgun printed no totals: {last}",
                       hint="see the raw kxdpgun output file in the cell folder")
    return FloodResult(sent=int(found["sent"]), received=int(found.get("received", 0)),
                       duration_s=found.get("duration_s", 0.0),
                       sent_pps=found.get("sent_pps"), received_pps=found.get("received_pps"),
                       rcodes={k: int(v) for k, v in _KXDPGUN_RCODE.findall(text)})


def kxdpgun(lab: Lab, node: str, server: str, query_file: Path, out: Path, *,
            duration_s: float, qps: float, cpu: int, remote_mac: str, batch: int = 10,
            iface: str = "eth1") -> FloodResult:
    """One open-loop UDP flood (Knot's XDP generator, knot-dnsutils) from `node` against
    `server` (a lab address): it sends at `qps` whatever the answers do, from the XDP socket
    of the node's `iface`, its one sending thread on CPU `cpu`; raw output in `out`."""
    check_lab_address(server)
    lab.push(node, [query_file])  # read on the node's host
    argv = ["kxdpgun", "-j", "-t", f"{max(1, round(duration_s))}", "-Q",
            str(max(1, int(qps))), "-b", str(batch), "-F", str(cpu), "-I", iface,
            "-R", remote_mac, "-i", str(query_file), server]
    text, cpu_s, wall, rc = run_tool(lab, node, argv, out, duration_s + 60)
    if rc != 0 and "stats_sum" not in text:
        last = (text.strip().splitlines() or [f"exit status {rc}"])[-1]
        raise LabError(f"kxdpgun failed in node {node!r}: {last}",
                       hint=f"see {out}; kxdpgun needs XDP on the node's {iface} (root)")
    result = parse_kxdpgun(text)
    lab.note_generator("kxdpgun", node, result.version)
    result.generator_cpu_s = round(cpu_s, 3) if cpu_s is not None else None
    result.wall_s = round(wall, 3)
    result.target_qps = qps
    result.returncode = rc
    return result


def interface_mac(lab: Lab, node: str, iface: str = "eth1") -> str:
    """The MAC address of a node's interface (read inside the node)."""
    return lab.run(node, ["cat", f"/sys/class/net/{iface}/address"], timeout=10).stdout.strip()
