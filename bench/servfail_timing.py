"""How long Unbound takes to answer SERVFAIL for a zone whose name servers all fail: the study
behind F4's broken tier (experiments/f4_resolver_cache/NOTES.md, "the 1.9 s cliff"). In a
throwaway network namespace, a stand-alone Unbound resolves from a fake root that delegates
`b<n>.lab.` to K name servers (in the zone, with glue), each answering SERVFAIL (or REFUSED, or
nothing) after DELAY ms; each name's time to answer and the datagrams the servers received are
printed.

    python -m bench.servfail_timing --servers 1 2 3 --delay-ms 80
        [--discard-timeout-ms 1900] [--wait-limit 1000] [--mode servfail|refused|drop]
        [--root build/rootfs/<suite-root>]   (that root's Unbound, e.g. Debian 13's 1.26)

Measured (2026-11-28, Unbound 1.17.1-2+deb12u4 and 1.26.2, 80 ms): 5 tries per name server
for the name, then again for each name server's own address, one at a time: 5K(K+1) = 10 /
30 / 60 datagrams and SERVFAIL after 0.84 / 2.45 / 4.90 s with K = 1 / 2 / 3 servers and
discard-timeout 0 (4.91 s on 1.26); with today's default discard-timeout (1,900 ms) the 2-
and 3-server names got no answer at all (tests/integration/test_servfail_timing.py). Nothing
leaves the namespace (its addresses are on its own loopback).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import dns.flags
import dns.message
import dns.name
import dns.query
import dns.rcode
import dns.rrset

from bench.study_namespace import study_namespace

NETNS = "dnslab-servfail-study"
ROOT_ADDRESS = "10.99.0.1"
UNBOUND_PORT = 5353


def server_addresses(count: int) -> list[str]:
    return [f"10.99.0.{i + 2}" for i in range(count)]


class _Authority(asyncio.DatagramProtocol):
    """The fake root (referrals to the broken zone's servers) or one broken server."""

    def __init__(self, address: str, servers: list[str], mode: str, delay_s: float,
                 seen: Path):
        self.address, self.servers, self.mode, self.delay_s = address, servers, mode, delay_s
        self.seen = seen

    def connection_made(self, transport) -> None:  # type: ignore[no-untyped-def]
        self.transport = transport

    def datagram_received(self, data: bytes, peer) -> None:  # type: ignore[no-untyped-def]
        query = dns.message.from_wire(data)
        name = query.question[0].name
        with self.seen.open("a") as out:
            out.write(f"{self.address} {name}\n")
        reply = dns.message.make_response(query)
        if self.address == ROOT_ADDRESS:
            if len(name.labels) >= 3 and name.labels[-2] == b"lab":
                zone = dns.name.Name(name.labels[-3:])
                reply.authority.append(dns.rrset.from_text_list(
                    zone, 3600, "IN", "NS", [f"ns{i}.{zone}" for i in range(len(self.servers))]))
                for i, address in enumerate(self.servers):
                    reply.additional.append(
                        dns.rrset.from_text(f"ns{i}.{zone}", 3600, "IN", "A", address))
            else:
                reply.flags |= dns.flags.AA
                if name == dns.name.root and query.question[0].rdtype == 2:
                    reply.answer.append(dns.rrset.from_text(".", 3600, "IN", "NS", "a.root."))
                elif name != dns.name.root:
                    reply.set_rcode(dns.rcode.NXDOMAIN)
            self.transport.sendto(reply.to_wire(), peer)
            return
        if self.mode == "drop":
            return
        reply.set_rcode(dns.rcode.SERVFAIL if self.mode == "servfail" else dns.rcode.REFUSED)
        asyncio.get_running_loop().call_later(self.delay_s, self.transport.sendto,
                                              reply.to_wire(), peer)


async def _serve(servers: list[str], mode: str, delay_s: float, seen: Path) -> None:
    loop = asyncio.get_running_loop()
    for address in [ROOT_ADDRESS, *servers]:
        await loop.create_datagram_endpoint(
            lambda a=address: _Authority(a, servers, mode, delay_s, seen),
            local_addr=(address, 53))
    await asyncio.Event().wait()


def unbound_config(work: Path, discard_timeout_ms: int | None, wait_limit: int | None) -> str:
    lines = ["server:", f"  interface: 127.0.0.1@{UNBOUND_PORT}", "  do-ip6: no",
             "  do-daemonize: no", '  username: ""', '  chroot: ""', f'  directory: "{work}"',
             '  pidfile: ""', "  use-syslog: no", '  logfile: ""',
             f'  root-hints: "{work}/root.hints"', '  module-config: "iterator"',
             "  access-control: 127.0.0.0/8 allow", "  qname-minimisation: no"]
    if discard_timeout_ms is not None:
        lines.append(f"  discard-timeout: {discard_timeout_ms}")
    if wait_limit is not None:
        lines.append(f"  wait-limit: {wait_limit}")
    return "\n".join(lines) + "\n"


def time_servfails(servers: int, delay_ms: float, mode: str = "servfail", names: int = 2,
                   discard_timeout_ms: int | None = None, wait_limit: int | None = None,
                   root: Path | None = None, timeout_s: float = 15.0) -> list[dict]:
    """Per name (`www.b<n>.lab.`, after a first one that primes the root): its rcode (None:
    no answer within `timeout_s`), seconds and the datagrams the broken servers got for it."""
    addresses = server_addresses(servers)
    with tempfile.TemporaryDirectory(prefix="servfail-study-", dir="/tmp") as tmp:
        work = Path(tmp)
        (work / "root.hints").write_text(f". 3600 IN NS a.root.\na.root. 3600 IN A "
                                         f"{ROOT_ADDRESS}\n")
        (work / "unbound.conf").write_text(unbound_config(work, discard_timeout_ms, wait_limit))
        seen = work / "seen.txt"
        seen.touch()
        procs: list[subprocess.Popen] = []
        namespace = study_namespace(NETNS, work, root, [ROOT_ADDRESS, *addresses])
        with namespace as (exec_in, in_root):
            try:
                procs.append(subprocess.Popen([*exec_in, sys.executable, "-m", __spec__.name,
                                               "--serve", json.dumps([addresses, mode, delay_ms,
                                                                      str(seen)])]))
                procs.append(subprocess.Popen(
                    [*in_root, "unbound", "-c", str(work / "unbound.conf")],
                    stderr=subprocess.DEVNULL))
                # evidence that Unbound is up and has primed the root: its answer to ". NS"
                deadline = time.monotonic() + 10
                while _ask(".", 0.5, seen, "NS")["rcode"] != "NOERROR":
                    if time.monotonic() > deadline:
                        raise RuntimeError("the study's Unbound did not answer within 10 s")
                return [_ask(f"www.b{n}.lab.", timeout_s, seen) for n in range(1, names + 1)]
            finally:
                for proc in procs:
                    proc.kill()
                    proc.wait()


def _ask(name: str, timeout_s: float, seen: Path, rdtype: str = "A") -> dict:
    query = dns.message.make_query(name, rdtype)
    # timed inside the namespace, around the query alone
    answer, seconds = subprocess.run(
        ["ip", "netns", "exec", NETNS, sys.executable, "-c",
         "import time, dns.message, dns.query, dns.rcode\n"
         f"q = dns.message.from_wire(bytes.fromhex('{query.to_wire().hex()}'))\n"
         "start = time.monotonic()\n"
         "try:\n"
         f"    r = dns.rcode.to_text(dns.query.udp(q, '127.0.0.1', port={UNBOUND_PORT}, "
         f"timeout={timeout_s}).rcode())\n"
         "except Exception:\n"
         "    r = 'none'\n"
         "print(r, time.monotonic() - start)\n"],
        capture_output=True, text=True, check=True).stdout.split()
    zone = ".".join(name.split(".")[1:])
    datagrams = sum(1 for line in seen.read_text().splitlines()
                    if line.endswith(f".{zone}") and not line.startswith(ROOT_ADDRESS))
    return {"name": name, "rcode": None if answer == "none" else answer,
            "seconds": round(float(seconds), 2), "datagrams": datagrams}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    parser.add_argument("--servers", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--delay-ms", type=float, default=80.0)
    parser.add_argument("--mode", choices=["servfail", "refused", "drop"], default="servfail")
    parser.add_argument("--names", type=int, default=2)
    parser.add_argument("--discard-timeout-ms", type=int)
    parser.add_argument("--wait-limit", type=int)
    parser.add_argument("--root", type=Path)
    args = parser.parse_args(argv)
    if args.serve:
        addresses, mode, delay_ms, seen = json.loads(args.serve)
        asyncio.run(_serve(addresses, mode, delay_ms / 1000, Path(seen)))
        return 0
    for count in args.servers:
        for row in time_servfails(count, args.delay_ms, args.mode, args.names,
                                  args.discard_timeout_ms, args.wait_limit, args.root):
            print(f"{count} server(s), {args.delay_ms:g} ms, {args.mode}: {row['name']} "
                  f"{row['rcode'] or 'no answer'} after {row['seconds']} s, "
                  f"{row['datagrams']} datagrams")
    return 0


if __name__ == "__main__":
    sys.exit(main())
