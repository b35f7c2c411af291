"""What the F1 servers really send: the TAC and APN answers over UDP and TCP next to the
modelled full answer (`responses.csv`), and the share of a query file's UDP queries a server
truncates. Queries go through `dnslab.probe` (non-recursive, EDNS with the client's payload);
sizes are of the messages as received. Each TCP answer is compared with the model record by
record (`missing`, `extra`), re-encoded with dnspython's full name compression
(`size_full_compression`: the same records as the model's encoding would send them) and kept
as received (`answers/<qname>.tcp.bin`).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import dns.message

import zones
from dnslab import probe
from dnslab.errors import LabError
from dnslab.lab import Lab
from zones import model, wire

RESPONSE_COLUMNS = ["server", "records", "kind", "qname", "source", "size", "answer",
                    "authority", "additional", "truncated", "rcode", "missing", "extra",
                    "size_full_compression"]


def question(server: str, name: str, rdtype: str, tcp: bool, payload: int) -> probe.Query:
    """One non-recursive query with EDNS `payload`, as the F1 client sends it."""
    return probe.Query(server, name, rdtype, timeout=2.0, tcp=tcp,
                       options={"payload": payload, "recursion": False})


def from_client(lab: Lab, client: str, queries: list[probe.Query]) -> list[probe.Answer]:
    """The answers to `queries`, each sent from inside the `client` node one after the
    other: in a thread that joined its namespace on this machine, in one host command for
    them all on another host. A query nobody answered is a LabError."""
    answers = lab.ask_many(client, queries)
    for asked, answer in zip(queries, answers, strict=True):
        if answer is None:
            raise LabError(f"{asked.server} did not answer {asked.name} {asked.rdtype} "
                           f"from {client}", hint="see the server's log in the cell folder")
    return [a for a in answers if a is not None]


def compare_with_model(received_wire: bytes, full: dns.message.Message) -> dict[str, Any]:
    """A TCP answer as received against the modelled full answer: records missing and extra,
    and its size with dnspython's full name compression."""
    received = dns.message.from_wire(received_wire)
    missing, extra = model.record_difference(received, full)
    return {"missing": missing, "extra": extra,
            "size_full_compression": wire.wire_size(received, "full")}


def response_rows(lab: Lab, client: str, node: str, zone_set: zones.ZoneSet, server: str,
                  records: str, payload: int, keep: Path | None = None
                  ) -> list[dict[str, Any]]:
    """Every TAC and APN name of the zone set: real answers (UDP, TCP) from `node`, asked
    in the `client` node's namespace, and the model; the TCP answers as received go to
    `keep` when given."""
    zone_file = zone_set.zones[0]
    zone = model.load_zone(zone_file.path, zone_file.fqdn)
    extra = zone_set.manifest.get("extra", {})
    names = [("tac", n) for n in extra.get("tac_names", [])] + \
            [("apn", n) for n in extra.get("apn_names", [])]
    if not names:
        raise LabError(f"zone set {zone_set.set_id} lists no TAC or APN names",
                       hint="regenerate it with the current zones package (3gpp generator)")
    target = lab.address(node)
    sources = ("udp", "tcp")
    answers = iter(from_client(lab, client, [
        question(target, name, "NAPTR", source == "tcp", payload)
        for _kind, name in names for source in sources]))
    rows = []
    for kind, name in names:
        base = {"server": server, "records": records, "kind": kind, "qname": name}
        full = model.full_response(zone, name, "NAPTR", payload)
        for source in sources:
            r = next(answers)
            rows.append({**base, "source": source, "size": r.size, "answer": r.answers,
                         "authority": r.authority, "additional": r.additional,
                         "truncated": r.truncated, "rcode": r.rcode,
                         **(compare_with_model(r.wire, full) if source == "tcp" else {})})
            if source == "tcp" and keep is not None:
                keep.mkdir(parents=True, exist_ok=True)
                (keep / f"{name.rstrip('.')}.tcp.bin").write_bytes(r.wire)
        m = model.measure_message(full, payload)
        rows.append({**base, "source": "model", "size": m.size, "answer": m.answer,
                     "authority": m.authority, "additional": m.additional,
                     "truncated": m.truncated, "rcode": m.rcode})
    return rows


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
                for key in ("missing", "extra", "size_full_compression"):
                    if r.get(key) not in (None, ""):
                        figures[f"{kind}_{src}_{key}"] = r[key]
        figures[f"{kind}_name"] = name
    return figures


def tcp_share_of(truncated: float) -> float:
    """TCP share of all queries a server receives (UDP + TCP retries, the definition of
    experiments/stairs.py) when a fraction `truncated` of the UDP queries is truncated."""
    return truncated / (1 + truncated)


def truncated_share(lab: Lab, client: str, node: str, query_file: Path, payload: int) -> float:
    """Share of the file's (UDP) queries the server in `node` truncates: each distinct query
    asked once from the `client` node, weighted by how often the file holds it."""
    counts: Counter[tuple[str, str]] = Counter()
    with open(query_file) as handle:
        for line in handle:
            parts = line.split()
            if len(parts) >= 2 and not parts[0].startswith("#"):
                counts[(parts[0], parts[1])] += 1
    target = lab.address(node)
    keys = list(counts)
    answers = from_client(lab, client, [question(target, name, rdtype, False, payload)
                                        for name, rdtype in keys])
    truncated = {key: answer.truncated for key, answer in zip(keys, answers, strict=True)}
    total = sum(counts.values())
    return sum(n for key, n in counts.items() if truncated[key]) / total if total else 0.0
