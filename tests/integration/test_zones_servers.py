"""The 3GPP `after` zone in real named, knotd and nsd: what they send compared with the model.

Each server runs in its own network namespace `zt-<server>-<pid>` on the namespace's loopback;
a dnspython client inside the namespace queries the TAC and mass APN names over UDP (EDNS
4096, no fallback) and TCP and records size, dig-style section counts and TC. The figures are
printed (run with `-s`) and written to `<tmp>/servers.json`; the asserts check what must hold
whatever the server's additional-section policy: the full ANSWER over TCP, TC over UDP for
answers that cannot fit, and never more than the modelled full response.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import zones
from zones import model, queries

pytestmark = pytest.mark.integration

SERVERS = ("bind", "knot", "nsd")
QUERY_SAMPLE = 2000
DAEMONS = {"bind": "named", "knot": "knotd", "nsd": "nsd"}

CLIENT = r'''
import json, socket, struct, sys
import dns.message, dns.rcode

def counts(msg):
    return {"answer": sum(len(r) for r in msg.answer),
            "authority": sum(len(r) for r in msg.authority),
            "additional": sum(len(r) for r in msg.additional) + (1 if msg.edns >= 0 else 0),
            "tc": bool(msg.flags & 0x0200), "rcode": dns.rcode.to_text(msg.rcode())}

def udp(q):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(3)
    s.sendto(q.to_wire(), ("127.0.0.1", 53)); data = s.recv(65535); s.close()
    return {"size": len(data), **counts(dns.message.from_wire(data, ignore_trailing=True))}

def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk: raise EOFError("short read")
        buf += chunk
    return buf

def tcp(q):
    s = socket.create_connection(("127.0.0.1", 53), timeout=5)
    w = q.to_wire(); s.sendall(struct.pack("!H", len(w)) + w)
    (n,) = struct.unpack("!H", recv_exact(s, 2)); data = recv_exact(s, n); s.close()
    return {"size": len(data), **counts(dns.message.from_wire(data))}

if sys.argv[1] == "--share":
    # the share of a query file's queries answered with TC over UDP (EDNS 4096)
    total = truncated = 0
    for line in open(sys.argv[2]):
        name, rdtype = line.split()
        q = dns.message.make_query(name, rdtype, use_edns=0, payload=4096)
        q.flags &= ~0x0100
        total += 1
        truncated += udp(q)["tc"]
    print(json.dumps({"queries": total, "truncated": truncated}))
    sys.exit(0)

out = {}
for name in sys.argv[1:]:
    q = dns.message.make_query(name, "NAPTR", use_edns=0, payload=4096)
    q.flags &= ~0x0100  # no RD: authoritative query, as the MME's resolver would send
    out[name] = {"udp": udp(q), "tcp": tcp(q)}
print(json.dumps(out))
'''


def _need_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to create network namespaces (run the integration tests as root)")
    missing = [t for t in ("ip", *DAEMONS.values()) if not shutil.which(t)]
    if missing:
        pytest.skip(f"missing tools: {', '.join(missing)}")


def _config(server: str, d: Path, origin: str, zone_file: Path) -> list[str]:
    if server == "bind":
        (d / "named.conf").write_text(
            f'options {{ directory "{d}"; pid-file "{d}/named.pid"; '
            f'session-keyfile "{d}/session.key"; managed-keys-directory "{d}"; '
            f"listen-on port 53 {{ 127.0.0.1; }}; listen-on-v6 {{ none; }}; recursion no; "
            f"minimal-responses no; edns-udp-size 4096; max-udp-size 4096; }};\n"
            f"controls {{ }};\n"
            f'zone "{origin}" {{ type primary; file "{zone_file}"; }};\n'
        )
        return ["named", "-g", "-c", str(d / "named.conf")]
    if server == "knot":
        (d / "knot.conf").write_text(
            f"server:\n  rundir: {d}\n  listen: 127.0.0.1@53\n  udp-max-payload: 4096\n"
            f"database:\n  storage: {d}\n"
            f"log:\n  - target: stderr\n    any: info\n"
            f"template:\n  - id: default\n    storage: {d}\n"
            f"zone:\n  - domain: {origin}.\n    file: {zone_file}\n"
        )
        return ["knotd", "-c", str(d / "knot.conf")]
    (d / "nsd.conf").write_text(
        f'server:\n  ip-address: 127.0.0.1\n  port: 53\n  username: ""\n  chroot: ""\n'
        f'  zonesdir: "{d}"\n  pidfile: "{d}/nsd.pid"\n  database: ""\n'
        f'  xfrdfile: "{d}/xfrd.state"\n  zonelistfile: "{d}/zone.list"\n  xfrdir: "{d}"\n'
        f"  ipv4-edns-size: 4096\n  verbosity: 1\n"
        f"remote-control:\n  control-enable: no\n"
        f'zone:\n  name: "{origin}"\n  zonefile: "{zone_file}"\n'
    )
    return ["nsd", "-d", "-c", str(d / "nsd.conf")]


@pytest.fixture(scope="module")
def after_set(tmp_path_factory: pytest.TempPathFactory) -> zones.ZoneSet:
    return zones.ensure("3gpp", {"profile": "after"}, 1, out_root=tmp_path_factory.mktemp("z"))


@pytest.fixture
def namespace(request: pytest.FixtureRequest) -> Iterator[str]:
    _need_root()
    ns = f"zt-{request.node.callspec.params['server']}-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        subprocess.run(["ip", "-n", ns, "link", "set", "lo", "up"], check=True)
        yield ns
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=False)


def _client(ns: str, script: Path, names: list[str]) -> dict:
    r = subprocess.run(["ip", "netns", "exec", ns, sys.executable, str(script), *names],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip().splitlines()[-1] if r.stderr else "client failed")
    return json.loads(r.stdout)


@pytest.mark.parametrize("server", SERVERS)
def test_server_answers_compared_with_model(server: str, namespace: str,
                                            after_set: zones.ZoneSet, tmp_path: Path) -> None:
    z = after_set.zones[0]
    names = [after_set.manifest["extra"]["tac_names"][0],
             after_set.manifest["extra"]["apn_names"][0]]
    script = tmp_path / "client.py"
    script.write_text(CLIENT)
    cmd = _config(server, tmp_path, z.name, z.path)
    log = open(tmp_path / "daemon.log", "w")  # noqa: SIM115 - closed in finally
    proc = subprocess.Popen(["ip", "netns", "exec", namespace, *cmd], stdout=log,
                            stderr=subprocess.STDOUT)
    try:
        measured = None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                break
            try:
                measured = _client(namespace, script, names)
                break
            except (RuntimeError, json.JSONDecodeError):
                time.sleep(0.5)
        if measured is None:
            log.flush()
            tail = (tmp_path / "daemon.log").read_text().splitlines()[-15:]
            pytest.fail(f"{server} did not answer:\n" + "\n".join(tail))
        # the default mobile-core mix, as real queries: how many come back truncated
        mix = queries.mobile_core(after_set, count=QUERY_SAMPLE, seed=1)
        share = _client(namespace, script, ["--share", str(mix.path)])
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()

    zone = model.load_zone(z.path, z.fqdn)
    report = {"server": server, "version": _version(server), "queries": {}}
    for name in names:
        full = model.measure(zone, name, "NAPTR", 4096).as_dict()
        got = measured[name]
        report["queries"][name] = {**got, "model": full}
        assert got["tcp"]["rcode"] == "NOERROR"
        assert got["tcp"]["answer"] == full["answer"]
        assert not got["tcp"]["tc"]
        assert got["tcp"]["size"] <= full["size"]
        assert got["tcp"]["additional"] <= full["additional"]
        # the answer sections alone exceed 4096 bytes, so UDP must come back truncated
        assert got["udp"]["tc"] and got["udp"]["size"] <= 4096
    modelled = float(mix.manifest["measured"]["truncated_share"])
    real = share["truncated"] / share["queries"]
    report["query_file"] = {"queries": share["queries"], "truncated_share": real,
                            "modelled_share": modelled}
    # a server never sends more than the full response, so never truncates more often
    assert 0 < real <= modelled + 0.02
    (tmp_path / "servers.json").write_text(json.dumps(report, indent=1))
    print(f"\n{server}: mobile-core mix, {share['queries']} real UDP queries: {real:.1%} "
          f"truncated (model with full additional processing: {modelled:.1%})")
    print(f"\n{server} ({report['version']})")
    for name, q in report["queries"].items():
        short = name.split(".epc.")[0]
        for proto in ("udp", "tcp"):
            r = q[proto]
            print(f"  {short:24s} {proto}: {r['size']:6d} B  ANSWER {r['answer']:3d}  AUTHORITY "
                  f"{r['authority']:3d}  ADDITIONAL {r['additional']:3d}  TC {int(r['tc'])}")
        m = q["model"]
        print(f"  {short:24s} model: {m['size']:6d} B  ANSWER {m['answer']:3d}  AUTHORITY "
              f"{m['authority']:3d}  ADDITIONAL {m['additional']:3d}")


def _version(server: str) -> str:
    cmd = {"bind": ["named", "-v"], "knot": ["knotd", "--version"], "nsd": ["nsd", "-v"]}[server]
    r = subprocess.run(cmd, capture_output=True, text=True)
    return (r.stdout + r.stderr).strip().splitlines()[0]
