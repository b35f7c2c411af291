"""F6's load, one trial at a time: one transport from the client node to one address, with
the generator the run chose for it (dnsperf `-m udp|tcp|dot|doh`, or `dnsload stream -m
udp|tcp|dot|doh`: UDP sockets, or TCP, DoT and DoH connections kept open), the same command
against a server or against `dnsload serve` (the generator's ceiling). Every trial gives
the same row, whichever tool ran it; with `histogram`, the answers' latencies are kept as
dnsperf -v's histogram file (`upper_s`, `count`), from either tool. `tls_session` reads
what a TLS listener negotiates with OpenSSL's defaults (dnsperf's library), from the
client's namespace; `server_nodelay` whether the server's own end of a connection has
TCP_NODELAY set (Nagle's algorithm off).
"""

from __future__ import annotations

import csv
import ctypes
import os
import re
import socket
import ssl
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dns.exception
import dns.message
import dns.query

from dnslab.errors import LabError
from dnslab.lab import Lab
from dnslab.nsenter import in_netns, run_in
from dnslab.probe import check_lab_address
from dnslab.servers.base import DOH_PATH, TRANSPORT_PORTS
from experiments.generators import perf
from experiments.generators.dnsload import STREAM_TRANSPORTS, parse_stream, stream_argv

GENERATORS = ("dnsperf", "dnsload")
ROW_COLUMNS = ["transport", "generator", "connections_asked", "outstanding", "target_qps",
               "qps", "sent", "completed", "lost", "run_time_s", "noerror", "avg_latency_ms",
               "generator_cpu_pct", "reconnections", "conn_ends", "tls", "latency_file"]


@dataclass(frozen=True)
class Load:
    """What one trial sends: a transport, the generator, its connections (dnsperf's clients)
    and queries in flight, for `seconds`; closed loop, or paced at `rate`; connections kept
    open (`queries_per_conn` 0), or reopened every that many queries (dnsperf; dnsload: a new
    one per query, `outstanding` of them at a time); dnsperf's sockets' buffers at
    `socket_buffer_kib` (its -b; 0: the system's default; dnsload has no such option)."""

    transport: str
    generator: str
    clients: int
    outstanding: int
    seconds: float
    timeout_s: float
    rate: float | None = None
    queries_per_conn: int = 0
    doh_method: str = "GET"
    doh_index_path: bool = False
    histogram: bool = False
    socket_buffer_kib: int = 0

    def check(self) -> None:
        """A one-line LabError for a load no generator can send (before any work)."""
        if self.generator not in GENERATORS:
            raise LabError(f"generator {self.generator!r} for {self.transport} is not one of "
                           "the lab's",
                           hint="GENERATORS maps each transport to " + " or ".join(GENERATORS))
        if self.generator == "dnsload" and self.transport not in STREAM_TRANSPORTS:
            raise LabError(f"dnsload stream cannot send {self.transport}",
                           hint=f"GENERATORS with {self.transport}: dnsperf")
        if self.generator == "dnsload" and self.queries_per_conn > 1:
            raise LabError("dnsload stream keeps a connection open or opens one per query",
                           hint=f"dnsperf for {self.transport} with {self.queries_per_conn} "
                                "queries per connection")
        if self.queries_per_conn and self.transport not in ("tcp", "dot"):
            raise LabError(f"a new connection per query over {self.transport}",
                           hint="connections per query over TCP or DoT")


def _dnsperf(lab: Lab, client: str, address: str, qfile: Path, load: Load, out: Path,
             latency: Path | None) -> dict[str, Any]:
    extra = ["-m", load.transport]
    if load.transport == "doh":
        extra += ["-O", f"doh-uri=https://{address}:{TRANSPORT_PORTS['doh']}{DOH_PATH}",
                  "-O", f"doh-method={load.doh_method}"]
    if load.queries_per_conn:
        extra += ["-O", f"num-queries-per-conn={load.queries_per_conn}"]
    if load.socket_buffer_kib:
        extra += ["-b", str(load.socket_buffer_kib)]
    result = perf.dnsperf(lab, client, address, qfile, out, duration_s=load.seconds,
                          clients=load.clients, outstanding=load.outstanding,
                          max_qps=load.rate, timeout_s=load.timeout_s, extra=extra,
                          latency_csv=latency)
    row = result.row()
    return {"qps": row["qps"], "sent": result.sent, "completed": result.completed,
            "lost": result.lost, "run_time_s": result.run_time_s,
            "noerror": result.rcodes.get("NOERROR", 0),
            "avg_latency_ms": row["avg_latency_ms"],
            "generator_cpu_pct": row["generator_cpu_pct"],
            "reconnections": result.reconnections, "conn_ends": "", "tls": ""}


def _stream(lab: Lab, client: str, address: str, qfile: Path, load: Load, out: Path,
            latency: Path | None) -> dict[str, Any]:
    port = TRANSPORT_PORTS[load.transport]
    argv = stream_argv(f"{address}:{port}", load.transport, qfile, connections=load.clients,
                       outstanding=load.outstanding, duration_s=load.seconds,
                       timeout_s=load.timeout_s, rate=load.rate, doh_method=load.doh_method,
                       doh_index_path=load.doh_index_path,
                       per_query=bool(load.queries_per_conn))
    lab.push(client, [qfile])
    with open(out, "w") as handle:
        measured = lab.run_measured(client, argv, timeout=load.seconds + 4 * load.timeout_s + 60,
                                    stdout=handle, stderr=subprocess.STDOUT)
    total = parse_stream(out.read_text(errors="replace"))
    if latency is not None:
        write_histogram(latency, total.get("lat_hist_ms") or [])
    answered = int(total["answered"])
    hist = total.get("lat_hist_ms") or []
    mean = (sum(ms * n for ms, n in hist) / sum(n for _, n in hist)) if hist else None
    cpu = (round(100 * measured.cpu_s / measured.wall_s, 1)
           if measured.cpu_s is not None and measured.wall_s else None)
    return {"qps": float(total["answered_qps"]), "sent": int(total["sent"]),
            "completed": answered, "lost": int(total["timeouts"]),
            "run_time_s": float(total["seconds"]),
            "noerror": int((total.get("rcodes") or {}).get("NOERROR", 0)),
            "avg_latency_ms": round(mean, 3) if mean is not None else None,
            "generator_cpu_pct": cpu, "reconnections": int(total["reconnects"]),
            "conn_ends": conn_ends(total.get("conn_ends") or {}),
            "tls": "; ".join(sorted(total.get("tls_sessions") or {}))}


def conn_ends(counts: dict[str, int]) -> str:
    """Why connections ended before the trial's end, as dnsload counted them (`conn_ends`:
    the first error of a connection's reader or writer, or the server's GOAWAY), most
    frequent first: "read: eof 5; read: goaway FRAME_SIZE_ERROR 2"."""
    ranked = sorted(counts.items(), key=lambda item: (-int(item[1]), item[0]))
    return "; ".join(f"{reason} {int(n)}" for reason, n in ranked)


def write_histogram(path: Path, buckets: list[list[float]]) -> None:
    """dnsload's histogram ([upper edge ms, answers]) as dnsperf -v's file (`upper_s`,
    `count`), so the analysis reads both tools' latencies alike."""
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["upper_s", "count"])
        for upper_ms, count in buckets:
            writer.writerow([f"{upper_ms / 1000:.6g}", int(count)])


def run_load(lab: Lab, client: str, address: str, qfile: Path, load: Load,
             folder: Path, name: str) -> dict[str, Any]:
    """One trial from `client` to `address`; raw output `<name>.txt` in `folder` (and with
    `histogram` the answers' latencies in `latency-<name>.csv`); returns its row
    (ROW_COLUMNS)."""
    check_lab_address(address)
    load.check()
    latency = folder / f"latency-{name}.csv" if load.histogram else None
    send = _dnsperf if load.generator == "dnsperf" else _stream
    found = send(lab, client, address, qfile, load, folder / f"{load.generator}-{name}.txt",
                 latency)
    return {"transport": load.transport, "generator": load.generator,
            "connections_asked": 0 if load.transport == "udp" else load.clients,
            "outstanding": load.outstanding,
            "target_qps": round(load.rate, 1) if load.rate else "", **found,
            "latency_file": latency.name if latency else ""}


def tls_session(lab: Lab, node: str, address: str, transport: str) -> str:
    """"<version> <cipher>[ <ALPN>]" of a TLS handshake with `address`'s listener for
    `transport` (dot, doh), from `node`'s namespace with OpenSSL's client defaults (the
    library dnsperf uses); "" for UDP and TCP."""
    if transport not in ("dot", "doh"):
        return ""
    check_lab_address(address)
    port = TRANSPORT_PORTS[transport]

    def handshake() -> str:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE  # the lab's own self-signed certificates
        if transport == "doh":
            context.set_alpn_protocols(["h2"])
        with socket.create_connection((address, port), timeout=5) as raw, \
                context.wrap_socket(raw) as tls:
            cipher = tls.cipher()
            alpn = tls.selected_alpn_protocol()
            return " ".join(p for p in (tls.version() or "", cipher[0] if cipher else "",
                                        alpn or "") if p)

    try:
        return in_netns(lab.netns(node), handshake)
    except (OSError, ssl.SSLError) as exc:
        raise LabError(f"no TLS handshake with {address}:{port} ({transport}): {exc}",
                       hint="is its listener up? see the server's log in the cell folder") from None


# pidfd_getfd(2), Linux 5.6+: the same number on every architecture
SYS_PIDFD_GETFD = 438
_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def server_nodelay(lab: Lab, client: str, server_node: str, address: str,
                   transport: str) -> bool | None:
    """Whether the server's own end of a connection over `transport` (tcp, dot, doh) has
    TCP_NODELAY set: with it off (Nagle's algorithm), a small answer written while an earlier
    segment is unacknowledged waits for the client's ACK, which Linux delays up to 40 ms.
    One connection from `client`'s namespace, set up as a client's is (TCP: a query answered;
    DoT: the TLS handshake and a query answered; DoH: the handshake), then the server's end
    of it found in `server_node`'s namespace (`ss -p`) and its option read with getsockopt
    on a duplicate of the server's file descriptor (pidfd_getfd). None for UDP, or where it
    cannot be read (no such socket found, a kernel without pidfd_getfd)."""
    if transport not in ("tcp", "dot", "doh"):
        return None
    check_lab_address(address)
    port = TRANSPORT_PORTS[transport]

    def connect() -> socket.socket:
        raw = socket.create_connection((address, port), timeout=5)
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as the generators'
        if transport == "tcp":
            conn: socket.socket = raw
        else:
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE  # the lab's own self-signed certificates
            if transport == "doh":
                context.set_alpn_protocols(["h2"])
            conn = context.wrap_socket(raw)
        if transport != "doh":
            expiration = time.time() + 5
            try:  # an answer: the server has set up its end as it does for any client
                dns.query.send_tcp(conn, dns.message.make_query("example.test.", "SOA"),
                                   expiration)
                dns.query.receive_tcp(conn, expiration)
            except (dns.exception.DNSException, OSError):
                pass  # its socket's option is read all the same
        return conn

    try:
        conn = in_netns(lab.netns(client), connect)
    except (OSError, ssl.SSLError) as exc:
        raise LabError(f"no {transport} connection to {address}:{port}: {exc}",
                       hint="is its listener up? see the server's log in the cell folder"
                       ) from None
    try:
        local = conn.getsockname()[1]
        listed = run_in(lab.netns(server_node),
                        ["ss", "-Htnp", "state", "established",
                         f"( sport = :{port} and dport = :{local} )"], check=False).stdout
        owner = re.search(r"pid=(\d+),fd=(\d+)", listed)
        return socket_nodelay(int(owner[1]), int(owner[2])) if owner else None
    finally:
        conn.close()


def socket_nodelay(pid: int, fd: int) -> bool | None:
    """TCP_NODELAY of process `pid`'s socket `fd`, read on a duplicate of it (pidfd_getfd:
    root, Linux 5.6+; closing the duplicate leaves the process's socket as it was)."""
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        return None
    try:
        copy = int(_libc.syscall(SYS_PIDFD_GETFD, pidfd, fd, 0))
        if copy < 0:
            return None
        with socket.socket(fileno=copy) as sock:
            return bool(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
    finally:
        os.close(pidfd)
