"""Calibrate the load generator: how many qps can dnsload offer and count on this machine?

Runs `dnsload serve` (a canned responder) and `dnsload run` on loopback, or across a veth pair
between two `lt-` network namespaces (`--netns`), at increasing rates, and prints the
generator's ceiling: the highest rate at which answered ~= offered, nothing failed and p99 stayed
small. Modes: plain UDP; TCP fallback (a fraction of UDP answers truncated, each retried over
a new TCP connection, TCP answers padded to the seed's 23 KB); the same with reused TCP
connections. Generator and responder share the machine's cores, so the ceiling is a lower bound
for the generator alone; the CPU seconds each used are printed beside every step.

    .venv/bin/python bench/bench_dnsload.py [--netns] [--pin] [--step-s 5] [--tc 0.3]
    .venv/bin/python -m bench.bench_dnsload --netns --pin --modes kxdpgun \
        --rates 50000,100000,200000,300000,400000

The kxdpgun mode is the open-loop UDP flood F2 uses (Knot's XDP generator, one sending
thread): its steps pass while it sends the rate asked and the responder answers 99 %.

TC 0.3 is the seed's mix: 23 % of all queries over TCP = 0.3 / (1 + 0.3).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

import psutil
import typer

from dnslab.errors import LabError
from dnslab.paths import BIN, BUILD
from experiments.generators.kxdpgun import parse_kxdpgun

DNSLOAD = BIN / "dnsload"
NS_GEN, NS_SRV = "lt-gen", "lt-srv"
ADDR_GEN, ADDR_SRV = "198.18.0.1", "198.18.0.2"
PORT = 5353

QUERIES = [
    "tac-lb10.tac-hb10.tac.epc.mnc010.mcc440.3gppnetwork.org NAPTR",
    "spmode.ne.jp.apn.epc.mnc010.mcc440.3gppnetwork.org NAPTR",
    "_x-3gpp-pgw._x-s5-gtp.pgw.00.node.epc.mnc010.mcc440.3gppnetwork.org SRV",
    "topon.S5.pgw.00.TAC10.node.epc.mnc010.mcc440.3gppnetwork.org A",
]


@dataclass
class Step:
    mode: str
    target_qps: float
    offered_qps: float
    answered_qps: float
    tcp: int
    timeouts: int
    errors: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    gen_cpu_s: float
    srv_cpu_s: float
    passed: bool  # p99 <= the strict limit
    passed_loose: bool  # p99 <= the loose limit


def sh(argv: list[str]) -> None:
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        raise LabError(f"{' '.join(argv)} failed: {proc.stderr.strip()}")


@contextmanager
def netns_pair() -> Iterator[None]:
    """lt-gen <-veth-> lt-srv with 198.18.0.1/.2; the generator namespace may reuse
    TIME_WAIT ports (a new TCP connection per retry would otherwise run out of them)."""
    existing = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    for ns in (NS_GEN, NS_SRV):
        if ns in existing.split():
            raise LabError(f"namespace {ns} exists", hint=f"ip netns del {ns}")
    try:
        sh(["ip", "netns", "add", NS_GEN])
        sh(["ip", "netns", "add", NS_SRV])
        sh(["ip", "link", "add", "lt-veth0", "netns", NS_GEN, "type", "veth", "peer",
            "name", "lt-veth1", "netns", NS_SRV])
        for ns, dev, addr in ((NS_GEN, "lt-veth0", ADDR_GEN), (NS_SRV, "lt-veth1", ADDR_SRV)):
            sh(["ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", dev])
            sh(["ip", "-n", ns, "link", "set", dev, "up"])
            sh(["ip", "-n", ns, "link", "set", "lo", "up"])
        sh(["ip", "netns", "exec", NS_GEN, "sysctl", "-qw", "net.ipv4.tcp_tw_reuse=1",
            "net.ipv4.ip_local_port_range=1024 65535"])
        yield
    finally:
        for ns in (NS_GEN, NS_SRV):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def cpu_s(pid: int) -> float:
    t = psutil.Process(pid).cpu_times()
    return t.user + t.system


def run_step(mode: str, rate: float, seconds: float, server: str, qfile: str, srv_pid: int,
             prefix: list[str], extra: list[str], p99_limit_ms: float,
             p99_loose_ms: float) -> Step:
    argv = prefix + [str(DNSLOAD), "run", "-s", server, "-d", qfile, "-Q", f"{rate:g}",
                     "-l", f"{seconds:g}", "-warmup", "1", "-t", "1", *extra]
    srv0 = cpu_s(srv_pid)
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = proc.stdout.read() if proc.stdout else ""
    err = proc.stderr.read() if proc.stderr else ""
    # wait4 gives the generator's own CPU time
    _, status, ru = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise LabError(f"dnsload run failed: {err.strip()}")
    steady = [json.loads(x) for x in out.splitlines() if '"type":"steady"' in x][-1]
    errors = (steady["timeouts"] + steady["net_errors"] + steady["throttled"]
              + sum(n for k, n in steady["rcodes"].items() if k != "NOERROR"))
    offered = steady["udp"] + steady["throttled"]
    delivered = (steady["answered"] >= 0.99 * offered and errors <= 0.001 * offered
                 and steady["offered_qps"] >= 0.98 * rate)
    lat = steady["lat_ms"]
    return Step(mode=mode, target_qps=rate, offered_qps=steady["offered_qps"],
                answered_qps=steady["answered_qps"], tcp=steady["tcp"],
                timeouts=steady["timeouts"], errors=errors, p50_ms=lat["p50"],
                p99_ms=lat["p99"], max_ms=lat["max"],
                gen_cpu_s=round(ru.ru_utime + ru.ru_stime, 2),
                srv_cpu_s=round(cpu_s(srv_pid) - srv0, 2),
                passed=delivered and lat["p99"] <= p99_limit_ms,
                passed_loose=delivered and lat["p99"] <= p99_loose_ms)


def run_flood_step(rate: float, seconds: float, server: str, qfile: str, srv_pid: int,
                   prefix: list[str], remote_mac: str, cpu: int) -> Step:
    """One open-loop kxdpgun step (XDP, one sending thread on `cpu`) at `rate` against the
    responder: it passes when kxdpgun sent >= 98 % of the rate and >= 99 % came back."""
    argv = prefix + ["kxdpgun", "-t", f"{max(1, round(seconds))}", "-Q", f"{int(rate)}",
                     "-F", str(cpu), "-I", "lt-veth0", "-R", remote_mac, "-p", str(PORT),
                     "-i", qfile, server.split(":")[0]]
    srv0 = cpu_s(srv_pid)
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = proc.stdout.read() if proc.stdout else ""
    _, status, ru = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0 and "total queries" not in out:
        raise LabError(f"kxdpgun failed: {out.strip()[-300:]}")
    flood = parse_kxdpgun(out)
    delivered = (flood.offered_qps >= 0.98 * rate and flood.received >= 0.99 * flood.sent)
    return Step(mode="kxdpgun", target_qps=rate, offered_qps=flood.offered_qps,
                answered_qps=flood.qps, tcp=0, timeouts=flood.sent - flood.received,
                errors=0, p50_ms=0.0, p99_ms=0.0, max_ms=0.0,
                gen_cpu_s=round(ru.ru_utime + ru.ru_stime, 2),
                srv_cpu_s=round(cpu_s(srv_pid) - srv0, 2), passed=delivered,
                passed_loose=delivered)


def main(
    rates: str = typer.Option("5000,10000,20000,30000,40000,50000,60000,80000,100000,120000",
                              help="comma-separated rates to try, ascending"),
    step_s: float = typer.Option(5.0, help="seconds per rate (the first is not counted)"),
    tc: float = typer.Option(0.3, help="fraction of UDP answers truncated in fallback modes"),
    tcp_size: int = typer.Option(23069, help="TCP answer size in bytes (the seed's TAC answer)"),
    p99_ms: float = typer.Option(10.0, help="strict ceiling: p99 above this (ms) fails a step"),
    p99_loose_ms: float = typer.Option(100.0, help="loose ceiling: p99 limit (ms), a tenth "
                                       "of the seed's 1 s TAT criterion"),
    netns: bool = typer.Option(False, help="run across a veth pair of lt- namespaces"),
    pin: bool = typer.Option(False, help="pin the generator to CPU 0 and the responder to CPU 1"),
    modes: str = typer.Option("udp,fallback,fallback-reuse", help="modes to run; kxdpgun "
                              "(open-loop UDP over XDP, needs --netns) is available too"),
) -> None:
    if not DNSLOAD.exists():
        raise LabError("build/bin/dnsload missing", hint="run scripts/build-dnsload.sh")
    rate_list = [float(r) for r in rates.split(",")]
    mode_args = {
        "udp": ([], []),
        "fallback": (["-tc", str(tc), "-tcp-size", str(tcp_size)], []),
        "fallback-reuse": (["-tc", str(tc), "-tcp-size", str(tcp_size)], ["-tcp-reuse"]),
        "kxdpgun": ([], []),
    }
    if "kxdpgun" in modes.split(",") and not netns:
        raise LabError("the kxdpgun mode sends over XDP on a veth", hint="add --netns")
    with tempfile.TemporaryDirectory(prefix="lt-bench-") as tmp:
        qfile = str(Path(tmp) / "queries.txt")
        Path(qfile).write_text("\n".join(QUERIES) + "\n")
        ctx = netns_pair() if netns else _nothing()
        with ctx:
            gen_prefix = ["ip", "netns", "exec", NS_GEN] if netns else []
            srv_prefix = ["ip", "netns", "exec", NS_SRV] if netns else []
            if pin:
                gen_prefix += ["taskset", "-c", "0"]
                srv_prefix += ["taskset", "-c", "1"]
            host = ADDR_SRV if netns else "127.0.0.1"
            results: list[Step] = []
            where = "veth between lt- namespaces" if netns else "loopback"
            cores = "generator on CPU 0, responder on CPU 1" if pin else f"{os.cpu_count()} cores"
            print(f"dnsload calibration on {where}, {cores}, {step_s:g} s per rate "
                  f"(first second dropped), TC on {tc:g} of UDP answers in fallback modes")
            print(f"{'mode':15} {'target':>8} {'offered':>9} {'answered':>9} {'tcp/s':>7} "
                  f"{'errors':>6} {'p50ms':>6} {'p99ms':>7} {'maxms':>7} {'genCPU':>6} "
                  f"{'srvCPU':>6} p99<={p99_ms:g}ms p99<={p99_loose_ms:g}ms")
            for mode in modes.split(","):
                srv_extra, gen_extra = mode_args[mode]
                budget = len(rate_list) * (step_s + 3) + 10
                srv = subprocess.Popen(
                    srv_prefix + [str(DNSLOAD), "serve", "-a", f"{host}:{PORT}",
                                  "-l", f"{budget:g}", *srv_extra],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                try:
                    ready = srv.stdout.readline() if srv.stdout else ""
                    if '"serve_ready"' not in ready:
                        raise LabError(f"dnsload serve did not start: {srv.stderr.read()}")
                    srv_pid = srv.pid
                    fails = 0
                    for rate in rate_list:
                        if mode == "kxdpgun":
                            mac = Path("/sys/class/net/lt-veth1/address")
                            remote = subprocess.run(
                                ["ip", "netns", "exec", NS_SRV, "cat", str(mac)],
                                capture_output=True, text=True).stdout.strip()
                            s = run_flood_step(rate, step_s, f"{host}:{PORT}", qfile, srv_pid,
                                               gen_prefix, remote, 0)
                        else:
                            s = run_step(mode, rate, step_s, f"{host}:{PORT}", qfile, srv_pid,
                                         gen_prefix, gen_extra, p99_ms, p99_loose_ms)
                        results.append(s)
                        print(f"{mode:15} {rate:8.0f} {s.offered_qps:9.0f} "
                              f"{s.answered_qps:9.0f} {s.tcp / (step_s - 1):7.0f} "
                              f"{s.errors:6d} {s.p50_ms:6.2f} {s.p99_ms:7.2f} "
                              f"{s.max_ms:7.1f} {s.gen_cpu_s:6.2f} {s.srv_cpu_s:6.2f} "
                              f"{'yes' if s.passed else 'NO':>9} "
                              f"{'yes' if s.passed_loose else 'NO':>10}", flush=True)
                        fails = 0 if s.passed_loose else fails + 1
                        if fails >= 2:
                            break
                        time.sleep(1)
                finally:
                    srv.terminate()
                    srv.wait(timeout=10)
    print("\nceiling = highest rate passing before the first failing one "
          "(answered >= 99 % of offered, errors <= 0.1 %, and the p99 limit):")
    summary: dict[str, dict[str, float | None]] = {}
    for mode in modes.split(","):
        summary[mode] = {}
        for key in ("passed", "passed_loose"):
            ceiling = None
            for st in (x for x in results if x.mode == mode):
                if not getattr(st, key):
                    break
                ceiling = st.target_qps
            summary[mode][key] = ceiling
        strict, loose = summary[mode]["passed"], summary[mode]["passed_loose"]
        print(f"  {mode:15} p99<={p99_ms:g}ms: {'none' if strict is None else f'{strict:.0f} qps'}"
              f"   p99<={p99_loose_ms:g}ms: {'none' if loose is None else f'{loose:.0f} qps'}")
    tag = ("netns" if netns else "loopback") + ("-pinned" if pin else "")
    out = BUILD / "bench" / f"dnsload-{tag}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"ceiling_qps": summary, "steps": [asdict(s) for s in results],
                               "netns": netns, "pin": pin, "step_s": step_s, "tc": tc}, indent=1))
    print(f"wrote {out}")


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def cli() -> None:
    try:
        typer.run(main)
    except LabError as exc:
        print(exc.one_line())
        raise SystemExit(1) from None


if __name__ == "__main__":
    cli()
