"""What the F1 servers really send: the TAC and APN answers over UDP and TCP next to the
modelled full answer (`responses.csv`), and the share of a query file's UDP queries a server
truncates.

`ask` is a wire-level client: the size it reports is the length of the message as received
(not re-encoded), with dig-style section counts (OPT counted in the additional section).
"""

from __future__ import annotations

import socket
import struct
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dns.exception
import dns.flags
import dns.message
import dns.query
import dns.rcode

import zones
from dnslab.errors import LabError
from dnslab.lab import Lab
from dnslab.nsenter import in_netns
from dnslab.probe import check_lab_address
from zones import model

RESPONSE_COLUMNS = ["server", "records", "kind", "qname", "source", "size", "answer",
                    "authority", "additional", "truncated", "rcode"]


@dataclass
class Response:
    """One answer as received: wire size, dig-style section counts, TC flag."""

    size: int
    answer: int
    authority: int
    additional: int  # OPT included, as dig counts it
    truncated: bool
    rcode: str


def _read_exact(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise OSError("connection closed before the whole answer arrived")
        data += chunk
    return data


def ask(server: str, name: str, rdtype: str = "NAPTR", tcp: bool = False,
        payload: int = 4096, timeout: float = 2.0, port: int = 53) -> Response:
    """One non-recursive query with EDNS `payload` from the calling thread's namespace; the
    size is the length of the wire message as received (not re-encoded)."""
    check_lab_address(server)
    query = dns.message.make_query(name, rdtype, use_edns=0, payload=payload)
    query.flags &= ~dns.flags.RD
    wire = query.to_wire()
    if tcp:
        with socket.create_connection((server, port), timeout=timeout) as sock:
            sock.sendall(struct.pack("!H", len(wire)) + wire)
            (length,) = struct.unpack("!H", _read_exact(sock, 2))
            data = _read_exact(sock, length)
    else:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.settimeout(timeout)
            sock.sendto(wire, (server, port))
            while True:
                data = sock.recv(65535)
                if data[:2] == wire[:2]:
                    break
    reply = dns.message.from_wire(data, ignore_trailing=True)
    return Response(
        size=len(data),
        answer=sum(len(r) for r in reply.answer),
        authority=sum(len(r) for r in reply.authority),
        additional=sum(len(r) for r in reply.additional) + (1 if reply.edns >= 0 else 0),
        truncated=bool(reply.flags & dns.flags.TC),
        rcode=dns.rcode.to_text(reply.rcode()),
    )


def response_rows(lab: Lab, node: str, zone_set: zones.ZoneSet, server: str, records: str,
                  payload: int) -> list[dict[str, Any]]:
    """Every TAC and APN name of the zone set: real answers (UDP, TCP) and the model."""
    zone_file = zone_set.zones[0]
    zone = model.load_zone(zone_file.path, zone_file.fqdn)
    extra = zone_set.manifest.get("extra", {})
    names = [("tac", n) for n in extra.get("tac_names", [])] + \
            [("apn", n) for n in extra.get("apn_names", [])]
    if not names:
        raise LabError(f"zone set {zone_set.set_id} lists no TAC or APN names",
                       hint="regenerate it with the current zones package (3gpp generator)")
    target = lab.address(node)

    def probe_all() -> list[dict[str, Any]]:
        rows = []
        for kind, name in names:
            base = {"server": server, "records": records, "kind": kind, "qname": name}
            for source in ("udp", "tcp"):
                r = ask(target, name, "NAPTR", tcp=source == "tcp", payload=payload)
                rows.append({**base, "source": source, **r.__dict__})
            m = model.measure(zone, name, "NAPTR", payload)
            rows.append({**base, "source": "model", "size": m.size, "answer": m.answer,
                         "authority": m.authority, "additional": m.additional,
                         "truncated": m.truncated, "rcode": m.rcode})
        return rows

    return in_netns(lab.netns("client"), probe_all)


def response_figures(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Sizes of the largest TAC and APN answer (by modelled size), per source."""
    figures: dict[str, Any] = {}
    for kind in ("tac", "apn"):
        models = [r for r in rows if r["kind"] == kind and r["source"] == "model"]
        if not models:
            continue
        name = max(models, key=lambda r: r["size"])["qname"]
        for r in rows:
            if r["kind"] == kind and r["qname"] == name:
                src = r["source"]
                figures[f"{kind}_{src}_size"] = r["size"]
                if src == "udp":
                    figures[f"{kind}_udp_truncated"] = r["truncated"]
                else:
                    figures[f"{kind}_{src}_answer"] = r["answer"]
                    figures[f"{kind}_{src}_additional"] = r["additional"]
        figures[f"{kind}_name"] = name
    return figures


def tcp_share_of(truncated: float) -> float:
    """TCP share of all queries a server receives (UDP + TCP retries, the definition of
    experiments/stairs.py) when a fraction `truncated` of the UDP queries is truncated."""
    return truncated / (1 + truncated)


def truncated_share(lab: Lab, node: str, query_file: Path, payload: int) -> float:
    """Share of the file's (UDP) queries the server truncates: each distinct query asked
    once, weighted by how often the file holds it."""
    counts: Counter[tuple[str, str]] = Counter()
    with open(query_file) as handle:
        for line in handle:
            parts = line.split()
            if len(parts) >= 2 and not parts[0].startswith("#"):
                counts[(parts[0], parts[1])] += 1
    target = lab.address(node)

    def probe_all() -> dict[tuple[str, str], bool]:
        return {key: ask(target, key[0], key[1], payload=payload).truncated for key in counts}

    truncated = in_netns(lab.netns("client"), probe_all)
    total = sum(counts.values())
    return sum(n for key, n in counts.items() if truncated[key]) / total if total else 0.0
