"""WAN emulation on lab links: per-node delay, jitter and loss on what a node sends on eth1.

An experiment gives `LabData.wan = {node: {"delay_ms": 40, "jitter_ms": 10, "loss_pct": 1}}`;
`lab.up` applies it inside each node's network namespace once the node exists, on both
runtimes (the netns path of a container is /proc/<pid>/ns/net, entered with nsenter), reads
it back and keeps the read-back in `Lab.wan` (the runner writes it into meta.json per cell).
Across hosts it is applied on the node's own host (`apply_on`: the `wan-apply` host command
there), and the delayer's counters are read there.
Egress only: a node that answers queries delays its answers, so a round trip to it takes
`delay_ms` more (give the server, not the client, the delay to model a distant server).

Two backends, chosen per kernel:
- `netem`: `tc qdisc replace dev eth1 root netem delay D J distribution normal loss L%`, read
  back with `tc qdisc show dev eth1`.
- `nfqueue`, for kernels built without sch_netem (this project's CI VM): an iptables-legacy
  rule in the node's namespace queues its eth1 output to NFQUEUE, and a delayer process in the
  same namespace (`python -m dnslab.wan serve`, python NetfilterQueue over
  libnetfilter_queue) holds each packet for a normal(delay, jitter) time (never below zero)
  and drops `loss_pct` % of them. Read back: the iptables rule and the delayer's counters
  (`build/labs/<lab>/wan/<node>.json`, rewritten every second and at exit). Its pid file sits
  beside; `lab down` stops it (a container's removal would not: it is a host process).

Either way a delayed packet stays its sender's until it leaves the node, and Linux's TCP
autocorking holds a socket's next small write back until an earlier one has left (on a real
link microseconds): on a delayed node it held that write for the whole delay, so a TLS
client's first query, written right after its Finished, left one delay late (F6 NOTES.md,
"Where the ~40 ms stalls come from"). `apply` turns autocorking off in the shaped node's
namespace (`net.ipv4.tcp_autocorking` 0, per namespace, gone with it) and reads it back.
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import random
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from dnslab import sysctl
from dnslab.errors import LabError
from dnslab.nsenter import run_in
from dnslab.wait import WaitTimeout, wait_until

IFACE = "eth1"
QUEUE_NUM = 7
KEYS = ("delay_ms", "jitter_ms", "loss_pct")
# set in every shaped node's namespace (module docstring)
SHAPED_SYSCTLS = {"net.ipv4.tcp_autocorking": "0"}


class LabHost(Protocol):
    """What WAN emulation needs of the host a node runs on (`dnslab.hosts.Host` is one)."""

    @property
    def local(self) -> bool: ...

    def call(self, verb: str, call_timeout: float | None = None, **args: Any) -> Any: ...

    def push(self, sources: Iterable[Path]) -> None: ...

    def read_bytes(self, path: Path, offset: int = 0) -> bytes: ...


@dataclass(frozen=True)
class LinkShape:
    delay_ms: float = 0.0
    jitter_ms: float = 0.0
    loss_pct: float = 0.0

    def netem_args(self) -> list[str]:
        args = ["netem", "delay", f"{self.delay_ms:g}ms"]
        if self.jitter_ms:
            args += [f"{self.jitter_ms:g}ms", "distribution", "normal"]
        if self.loss_pct:
            args += ["loss", f"{self.loss_pct:g}%"]
        return args


def parse(node: str, spec: dict[str, Any]) -> LinkShape:
    """A node's link shape from experiment data; a clear error for anything else."""
    if not isinstance(spec, dict):
        raise LabError(f"wan for {node!r} is not a mapping",
                       hint="e.g. {delay_ms: 40, jitter_ms: 10, loss_pct: 1}")
    unknown = set(spec) - set(KEYS)
    if unknown:
        raise LabError(f"wan for {node!r}: unknown key(s) {', '.join(sorted(unknown))}",
                       hint="keys: " + ", ".join(KEYS))
    try:
        shape = LinkShape(**{k: float(v) for k, v in spec.items()})
    except (TypeError, ValueError):
        raise LabError(f"wan for {node!r}: values must be numbers", hint=str(spec)) from None
    if min(shape.delay_ms, shape.jitter_ms, shape.loss_pct) < 0 or shape.loss_pct > 100:
        raise LabError(f"wan for {node!r}: negative value or loss above 100 %", hint=str(spec))
    return shape


def _in_ns(netns_path: str, argv: list[str], check: bool = True
           ) -> subprocess.CompletedProcess[str]:
    return run_in(netns_path, argv, check=check,
                  hint="WAN emulation needs tc (iproute2), or iptables-legacy and "
                       "libnetfilter-queue (make setup)")


def kernel_has_netem(netns_path: str) -> bool:
    """Try netem on the node's loopback and take it off again (a kernel without sch_netem
    says 'Specified qdisc kind is unknown')."""
    probe = _in_ns(netns_path, ["tc", "qdisc", "add", "dev", "lo", "root", "netem",
                                "delay", "0ms"], check=False)
    if probe.returncode == 0:
        _in_ns(netns_path, ["tc", "qdisc", "del", "dev", "lo", "root"], check=False)
        return True
    return False


def state_dir(lab_root: Path) -> Path:
    return lab_root / "wan"


def apply(lab_root: Path, node: str, netns_path: str, shape: LinkShape,
          seed: int = 0, python_path: list[str] | None = None) -> dict[str, Any]:
    """Shape the node's eth1 output; return what was applied and read back. `python_path`:
    folders the delayer's python also imports from (where NetfilterQueue was copied to on a
    host that has no package of it)."""
    sysctls = sysctl.apply_in_netns(netns_path, SHAPED_SYSCTLS)
    if kernel_has_netem(netns_path):
        _in_ns(netns_path, ["tc", "qdisc", "replace", "dev", IFACE, "root",
                            *shape.netem_args()])
        readback = _in_ns(netns_path, ["tc", "qdisc", "show", "dev", IFACE]).stdout.strip()
        return {"backend": "netem", **asdict(shape), "readback": readback,
                "sysctls": sysctls}
    out = state_dir(lab_root)
    out.mkdir(parents=True, exist_ok=True)
    stats = out / f"{node}.json"
    stats.unlink(missing_ok=True)
    argv = ["nsenter", f"--net={netns_path}", sys.executable, "-m", "dnslab.wan", "serve",
            "--queue", str(QUEUE_NUM), "--delay-ms", str(shape.delay_ms),
            "--jitter-ms", str(shape.jitter_ms), "--loss-pct", str(shape.loss_pct),
            "--seed", str(seed), "--stats", str(stats)]
    env = dict(os.environ)
    if python_path:
        env["PYTHONPATH"] = os.pathsep.join([*python_path, *filter(None, [
            env.get("PYTHONPATH")])])
    log = open(out / f"{node}.log", "w")  # noqa: SIM115 - the delayer outlives this call
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    (out / f"{node}.pid").write_text(str(proc.pid))
    try:  # the stats file is evidence the queue is bound before any packet is queued
        wait_until(lambda: stats.exists() or proc.poll() is not None, 10,
                   f"the WAN delayer for {node}", interval=0.02)
    except WaitTimeout:
        pass
    if not stats.exists():
        proc.kill()
        raise LabError(f"the WAN delayer for {node} did not start: "
                       + (out / f"{node}.log").read_text().strip()[-300:],
                       hint="it needs python NetfilterQueue and iptables-legacy "
                            "(make setup)")
    _in_ns(netns_path, ["iptables-legacy", "-w", "-A", "OUTPUT", "-o", IFACE, "-j",
                        "NFQUEUE", "--queue-num", str(QUEUE_NUM)])
    rules = _in_ns(netns_path, ["iptables-legacy", "-w", "-S", "OUTPUT"]).stdout.strip()
    return {"backend": "nfqueue", **asdict(shape), "readback": rules,
            "delayer_pid": proc.pid, "stats_file": str(stats), "sysctls": sysctls}


def apply_on(host: LabHost, lab_root: Path, node: str, netns_path: str, shape: LinkShape,
             seed: int = 0) -> dict[str, Any]:
    """`apply` on the host the node runs on (a host command there, this process here). A
    delayer on another host imports the NetfilterQueue this machine has, copied there by
    `ship_delayer` (no Debian package has it)."""
    if host.local:
        return apply(lab_root, node, netns_path, shape, seed)
    library = _netfilterqueue_folder()
    return host.call("wan-apply", lab_root=str(lab_root), node=node, netns=netns_path,
                     shape=asdict(shape), seed=seed,
                     python_path=[str(library.parent)] if library else [])


def _netfilterqueue_folder() -> Path | None:
    """Where this machine's python NetfilterQueue package is (None: not installed)."""
    import importlib.util

    spec = importlib.util.find_spec("netfilterqueue")
    locations = list(spec.submodule_search_locations or []) if spec else []
    return Path(locations[0]) if locations else None


def ship_delayer(host: LabHost) -> None:
    """Copy this machine's NetfilterQueue package to another host at the same path, for the
    delayers `apply_on` may start there (used when that host's kernel has no netem; its
    python must be this one's version, as the package is compiled)."""
    library = _netfilterqueue_folder()
    if library is not None and not host.local:
        host.push([library])


def read_stats(applied: dict[str, Any], host: LabHost | None = None) -> dict[str, Any] | None:
    """The nfqueue delayer's counters now (None for netem), read on the node's `host`."""
    path = applied.get("stats_file")
    if not path:
        return None
    if host is None or host.local:
        data = Path(path).read_bytes() if Path(path).exists() else b""
    else:
        data = host.read_bytes(Path(path))
    try:
        return json.loads(data) if data else None
    except ValueError:
        return None


def _gone(pid: int, timeout: float) -> bool:
    def gone() -> bool:
        try:
            done, _status = os.waitpid(pid, os.WNOHANG)  # our own child: reap it
            if done:
                return True
        except ChildProcessError:
            pass
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False

    try:
        return wait_until(gone, timeout, f"process {pid} to end", interval=0.02)
    except WaitTimeout:
        return False


def stop_all(lab_root: Path) -> list[str]:
    """Stop every delayer of a lab (lab down); returns what was stopped."""
    stopped = []
    for pid_file in sorted(state_dir(lab_root).glob("*.pid")):
        try:
            pid = int(pid_file.read_text())
            os.kill(pid, signal.SIGTERM)
        except (ValueError, ProcessLookupError):
            pid_file.unlink(missing_ok=True)
            continue
        if not _gone(pid, timeout=2.0):
            os.kill(pid, signal.SIGKILL)
            _gone(pid, timeout=2.0)
        stopped.append(f"wan delayer {pid_file.stem} (pid {pid})")
        pid_file.unlink(missing_ok=True)
    return stopped


# --- the delayer process ----------------------------------------------------------------------

def serve(queue: int, shape: LinkShape, seed: int, stats_path: Path) -> None:
    """Hold each queued packet for its delay, drop the lost ones; until SIGTERM."""
    from netfilterqueue import NetfilterQueue

    rng = random.Random(seed)
    held: list[tuple[float, int, Any]] = []
    counters = {"queued": 0, "accepted": 0, "dropped": 0, "max_held": 0,
                "delay_ms": shape.delay_ms, "jitter_ms": shape.jitter_ms,
                "loss_pct": shape.loss_pct}
    sequence = 0

    def on_packet(packet: Any) -> None:
        nonlocal sequence
        counters["queued"] += 1
        if shape.loss_pct and rng.random() * 100 < shape.loss_pct:
            packet.drop()
            counters["dropped"] += 1
            return
        delay = max(0.0, rng.gauss(shape.delay_ms, shape.jitter_ms)) / 1000
        sequence += 1
        heapq.heappush(held, (time.monotonic() + delay, sequence, packet))
        counters["max_held"] = max(counters["max_held"], len(held))

    def write_stats() -> None:
        tmp = stats_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(counters))
        tmp.replace(stats_path)

    stopping = False

    def stop(_sig: int, _frame: Any) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    nfq = NetfilterQueue()
    nfq.bind(queue, on_packet, max_len=65536)
    fd = nfq.get_fd()
    write_stats()
    next_stats = time.monotonic() + 1
    try:
        while not stopping:
            now = time.monotonic()
            timeout = min(held[0][0] - now if held else 0.2, next_stats - now)
            readable, _, _ = select.select([fd], [], [], max(timeout, 0))
            if readable:
                nfq.run(block=False)
            now = time.monotonic()
            while held and held[0][0] <= now:
                heapq.heappop(held)[2].accept()
                counters["accepted"] += 1
            if now >= next_stats:
                write_stats()
                next_stats = now + 1
    finally:
        for _due, _seq, packet in held:
            packet.accept()
        write_stats()
        nfq.unbind()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m dnslab.wan")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("serve", help="the NFQUEUE delayer (inside a node's namespace)")
    run.add_argument("--queue", type=int, default=QUEUE_NUM)
    run.add_argument("--delay-ms", type=float, default=0.0)
    run.add_argument("--jitter-ms", type=float, default=0.0)
    run.add_argument("--loss-pct", type=float, default=0.0)
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--stats", type=Path, required=True)
    args = parser.parse_args(argv)
    serve(args.queue, LinkShape(args.delay_ms, args.jitter_ms, args.loss_pct), args.seed,
          args.stats)


if __name__ == "__main__":
    main()
