"""The host commands: what the controller asks of a lab host, one command at a time.

A host of a lab split across machines (`dnslab.hosts`) runs these with its own python3 and
Debian's python3-yaml, python3-dnspython and python3-psutil; the controller copies the
package there first. Each is an ordinary command over ssh that ends when its work is done:

    python3 -m dnslab.hostcmd call VERB        arguments as JSON on stdin, result on stdout
    python3 -m dnslab.hostcmd monitor ...      1 Hz counter rows (CSV) until stdin closes
    python3 -m dnslab.hostcmd measured ...     run a command, then say its CPU time

On the controller's own machine `Host.call` runs the same verbs in-process, so one code path
serves both. Verbs that act inside a node take the node's namespace path and join it in a
thread (`nsenter.in_netns`). No verb keeps running after it answers; nothing listens.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from dnslab.errors import LabError

VERBS: dict[str, Callable[..., Any]] = {}
# daemons this process started (when the controller is the host): kept so they are reaped
_children: dict[int, subprocess.Popen] = {}


def verb(fn: Callable[..., Any]) -> Callable[..., Any]:
    VERBS[fn.__name__.replace("_", "-")] = fn
    return fn


def call(name: str, args: dict[str, Any]) -> Any:
    if name not in VERBS:
        raise LabError(f"unknown host command {name!r}", hint="one of " + ", ".join(VERBS))
    return VERBS[name](**args)


def decode_reply(returncode: int, stdout: str, stderr: str, host: Any) -> Any:
    """The result of `call` run over ssh, or the LabError it raised there."""
    try:
        reply = json.loads(stdout.strip().splitlines()[-1]) if stdout.strip() else None
    except json.JSONDecodeError:
        reply = None
    if isinstance(reply, dict) and "ok" in reply:
        return reply["ok"]
    if isinstance(reply, dict) and "error" in reply:
        raise LabError(f"host {host.name!r}: {reply['error']}", hint=reply.get("hint"))
    last = (stderr.strip().splitlines() or [f"exit status {returncode}"])[-1]
    if returncode == 255:
        raise LabError(f"host {host.name!r} ({host.spec.ssh}) cannot be reached over ssh: {last}",
                       hint=f"check that `ssh {host.spec.ssh} true` works without a password")
    raise LabError(f"host {host.name!r}: dnslab's host command failed: {last}",
                   hint="the host needs python3 >= 3.11 and, on Debian/Ubuntu: apt-get install "
                        "-y python3-yaml python3-dnspython python3-psutil")


# --- what the host is ------------------------------------------------------------------------

@verb
def facts(packages: list[str], peers: list[str] | None = None) -> dict[str, Any]:
    """Kernel, cores, python, versions of `packages` (None: not installed), the MTU of the
    route to each underlay peer, and the host's clock (for the offset between hosts)."""
    import dns.version

    versions = package_versions(packages)
    routes = {}
    for peer in peers or []:
        route = subprocess.run(["ip", "-j", "route", "get", peer], capture_output=True,
                               text=True)
        try:
            dev = json.loads(route.stdout)[0]["dev"]
            link = json.loads(subprocess.run(["ip", "-j", "link", "show", "dev", dev],
                                             capture_output=True, text=True).stdout)[0]
            routes[peer] = {"dev": dev, "mtu": link["mtu"], "driver": _driver(dev)}
        except (json.JSONDecodeError, IndexError, KeyError):
            routes[peer] = None
    return {"kernel": platform.release(), "machine": platform.machine(),
            "cpus": sorted(os.sched_getaffinity(0)), "python": platform.python_version(),
            "dnspython": dns.version.version, "versions": versions, "routes": routes,
            "hostname": platform.node(), "time": time.time()}


@verb
def package_versions(packages: list[str]) -> dict[str, str | None]:
    """The installed Debian version of each package (None: not installed)."""
    versions: dict[str, str | None] = {p: None for p in packages}
    proc = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${Status} ${Version}\\n",
                           *packages], capture_output=True, text=True)
    for line in proc.stdout.splitlines():
        name, *rest = line.split()
        if "installed" in rest and len(rest) >= 4:
            versions[name.split(":")[0]] = rest[-1]
    return versions


def _driver(dev: str) -> str | None:
    link = f"/sys/class/net/{dev}/device/driver"
    if os.path.exists(link):
        return os.path.basename(os.readlink(link))
    kind = subprocess.run(["ip", "-j", "-d", "link", "show", "dev", dev], capture_output=True,
                          text=True)
    try:
        return json.loads(kind.stdout)[0].get("linkinfo", {}).get("info_kind")
    except (json.JSONDecodeError, IndexError):
        return None


@verb
def affinity_self(allowed: str | None = None) -> list[int]:
    """The CPUs the lab may use on this host: what a process here may run on, within the
    inventory's `cpus` for it; a LabError when those name a CPU the host lacks."""
    from dnslab import cpus

    mine = sorted(os.sched_getaffinity(0))
    if allowed is None:
        return mine
    return cpus.parse(cpus.check(allowed, "this host's inventory cpus", mine))


@verb
def clock() -> float:
    return time.time()


@verb
def clab_facts(images: list[str]) -> dict[str, Any]:
    """What the clab runtime needs of this host: a containerlab (its own installed one, else
    the project's build, when copied here) and its version, the Docker engine's version
    (None: no engine answers), and the id of each image (None: missing)."""
    import re
    import shutil

    from dnslab import paths

    binary = shutil.which("containerlab")
    if binary is None and (paths.BIN / "containerlab").exists():
        binary = str(paths.BIN / "containerlab")
    version = None
    if binary:
        out = subprocess.run([binary, "version"], capture_output=True, text=True).stdout
        found = re.search(r"version:\s*v?(\d+\.\d+\.\d+)", out)
        version = found.group(1) if found else None
    engine = subprocess.run(["docker", "version", "--format", "{{.Server.Version}}"],
                            capture_output=True, text=True) if shutil.which("docker") else None
    ids: dict[str, str | None] = {}
    for image in images:
        found_id = subprocess.run(["docker", "image", "inspect", "--format", "{{.Id}}", image],
                                  capture_output=True, text=True) if engine else None
        ids[image] = found_id.stdout.strip() if found_id and found_id.returncode == 0 else None
    return {"containerlab": binary, "containerlab_version": version,
            "docker": engine.stdout.strip() if engine and engine.returncode == 0 else None,
            "images": ids}


# --- namespaces and processes ----------------------------------------------------------------

@verb
def netns_list(prefix: str = "") -> list[str]:
    from dnslab.nsenter import list_namespaces

    return [ns for ns in list_namespaces() if ns.startswith(prefix)]


@verb
def netns_pids(names: list[str]) -> dict[str, list[int]]:
    from dnslab.nsenter import namespace_pids

    return {name: namespace_pids(name) for name in names}


@verb
def spawn(argv: list[str], log: str, cwd: str) -> int:
    """Start a daemon in its own session, output appended to `log`; its pid."""
    with open(log, "ab") as handle:
        proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=handle,
                                stderr=subprocess.STDOUT, start_new_session=True)
    _children[proc.pid] = proc
    return proc.pid


@verb
def alive(pids: list[int]) -> dict[str, bool]:
    from dnslab.processes import pid_alive

    found = {}
    for pid in pids:
        child = _children.get(pid)
        found[str(pid)] = child.poll() is None if child is not None else pid_alive(pid)
    return found


@verb
def terminate(pids: list[int]) -> list[int]:
    """Stop the processes and wait until they have left the process table; the pids still
    there (none, unless one would not die or was not reaped within seconds)."""
    from dnslab.processes import terminate as stop

    left = stop(pids)
    for pid in pids:
        child = _children.pop(pid, None)
        if child is not None:
            child.poll()
    return left


@verb
def lab_processes(labs_folder: str, lab: str | None = None) -> list[list[Any]]:
    """[pid, lab] of the processes of a lab (every lab, for None) still on this host, by the
    lab folder their command line names (processes.lab_processes)."""
    from dnslab.processes import lab_processes as find

    return [[pid, name] for pid, name in find(labs_folder, lab)]


@verb
def cgroup_cpu(pid: int) -> float | None:
    """CPU seconds of everything in the cgroup of `pid` (a container's)."""
    from dnslab.processes import cgroup_cpu_seconds

    return cgroup_cpu_seconds(pid)


@verb
def affinity(pids: list[int]) -> dict[str, list[int]]:
    found = {}
    for pid in pids:
        try:
            found[str(pid)] = sorted(os.sched_getaffinity(pid))
        except OSError:
            continue
    return found


# --- inside a node -----------------------------------------------------------------------------

@verb
def query(netns: str, server: str, name: str, rdtype: str = "SOA", timeout: float = 1.0,
          tcp: bool = False, options: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """One DNS query from inside a node (`probe.query`); None when nothing answered."""
    from dnslab import probe

    try:
        answer = probe.query_in(netns, server, name, rdtype, timeout, tcp, **(options or {}))
    except probe.UNANSWERED:
        return None
    return probe.answer_to_dict(answer)


@verb
def queries(netns: str, asked: list[dict[str, Any]]) -> list[dict[str, Any] | None]:
    """Many queries from inside a node in one command (`probe.try_queries_in`): a procedure
    that asks hundreds in a row pays one round trip to the host, not one a query."""
    from dnslab import probe

    answers = probe.try_queries_in(netns, [probe.Query(**one) for one in asked])
    return [probe.answer_to_dict(a) if a is not None else None for a in answers]


IP_UDP_HEADERS = 28  # IPv4 20 + UDP 8 bytes
CLOSED_PORT = 9  # discard: no lab node listens there, so the far kernel answers ICMP
# Linux's <netinet/in.h> values (python's socket module names them from 3.12 on)
IP_MTU_DISCOVER, IP_PMTUDISC_DO = 10, 2


def datagram_crosses(target: str, size: int, timeout: float) -> bool | None:
    """Whether an IP packet of `size` bytes (a UDP datagram, don't-fragment set) reaches
    `target` and back: the far kernel answers a closed port with ICMP port unreachable,
    which a connected socket reports as refused. None: it cannot leave (over the local
    link's MTU)."""
    import errno
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.setsockopt(socket.IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_DO)
        sock.settimeout(timeout)
        sock.connect((target, CLOSED_PORT))
        try:
            sock.send(bytes(size - IP_UDP_HEADERS))
        except OSError as exc:
            if exc.errno == errno.EMSGSIZE:
                return None
            raise
        try:
            sock.recv(1)
        except ConnectionRefusedError:
            return True
        except OSError:  # a timeout, or an ICMP error other than the port's
            return False
    return True


@verb
def lan_mtu(netns: str, target: str, mtu: int, floor: int = 1280, timeout: float = 1.0,
            bisect: int = 4) -> dict[str, Any]:
    """From inside a node: does a small packet reach `target`, does one of the LAN's full
    `mtu`, and if not, the largest size that did (`bisect` more packets between `floor` and
    `mtu`: the far kernel answers six in a burst, then one a second)."""
    from dnslab import probe
    from dnslab.nsenter import in_netns

    probe.check_lab_address(target)

    def measure() -> dict[str, Any]:
        found: dict[str, Any] = {"small": datagram_crosses(target, 100, timeout),
                                 "full": None, "largest": None}
        if not found["small"]:
            return found
        found["full"] = datagram_crosses(target, mtu, timeout)
        if found["full"]:
            found["largest"] = mtu
            return found
        low, high = (floor, mtu) if datagram_crosses(target, floor, timeout) else (None, floor)
        for _ in range(bisect - 1 if low else 0):
            middle = (low + high) // 2
            if datagram_crosses(target, middle, timeout):
                low = middle
            else:
                high = middle
        found["largest"] = low
        return found

    return in_netns(netns, measure)


@verb
def count_served(netns: str, server: str, zones: list[str], timeout: float = 1.0,
                 parallel: int = 64) -> list[Any]:
    from dnslab import probe

    served, missing = probe.count_served(netns, server, zones, timeout, parallel)
    return [served, missing]


@verb
def interface_addresses(netns: str, iface: str) -> list[str] | None:
    """The IPv4 addresses on `iface` inside the namespace once the link is up; None while it
    is missing or down."""
    from dnslab.nsenter import run_in

    proc = run_in(netns, ["ip", "-j", "-4", "addr", "show", "dev", iface], check=False)
    links = json.loads(proc.stdout or "[]") if proc.returncode == 0 else []
    if not links or "UP" not in links[0].get("flags", []):
        return None
    return [a["local"] for a in links[0].get("addr_info", [])]


@verb
def split_host_wide(netns: str, keys: list[str]) -> list[list[str]]:
    from dnslab import sysctl

    return [list(part) for part in sysctl.split_host_wide(netns, keys)]


@verb
def apply_sysctls(netns: str, sysctls: dict[str, str]) -> dict[str, str]:
    from dnslab import sysctl

    return sysctl.apply_in_netns(netns, sysctls)


@verb
def read_sysctls(netns: str, keys: list[str]) -> dict[str, str | None]:
    from dnslab import sysctl

    return sysctl.read_in_netns(netns, keys)


@verb
def apply_host_sysctls(sysctls: dict[str, str], saved_file: str) -> dict[str, str]:
    """Host-wide keys (allowed by the user), the old values saved for teardown."""
    from pathlib import Path

    from dnslab import sysctl

    return sysctl.apply_host(sysctls, Path(saved_file))


@verb
def restore_host_sysctls(saved_file: str) -> dict[str, str]:
    from pathlib import Path

    from dnslab import sysctl

    return sysctl.restore_host(Path(saved_file))


@verb
def tables(netns: str) -> dict[str, dict[str, int]]:
    from dnslab.counters import tables_in

    return tables_in(netns)


@verb
def tables_of(netns: list[str]) -> dict[str, dict[str, dict[str, int]]]:
    """`tables` of many namespaces in one command (one round trip to the host)."""
    from dnslab.counters import tables_in

    return {one: tables_in(one) for one in netns}


@verb
def sample(netns: str) -> dict[str, int]:
    from dnslab.counters import sample_in

    return sample_in(netns)


@verb
def wan_apply(lab_root: str, node: str, netns: str, shape: dict[str, float], seed: int,
              python_path: list[str]) -> dict[str, Any]:
    """WAN emulation on a node's link, on this host (`wan.apply`)."""
    from pathlib import Path

    from dnslab import wan

    return wan.apply(Path(lab_root), node, netns, wan.LinkShape(**shape), seed, python_path)


# --- streams: a monitor, a measured command ----------------------------------------------------

def _until_stdin_closes(stop: threading.Event) -> None:
    """Set `stop` once the controller goes away (ssh closes our stdin)."""
    def watch() -> None:
        try:
            while sys.stdin.buffer.read(4096):
                pass
        except (OSError, ValueError):
            pass
        stop.set()

    threading.Thread(target=watch, daemon=True).start()


def monitor_main(args: argparse.Namespace) -> int:
    """Node or core rows once a second on stdout (CSV with a header) until stdin closes."""
    from dnslab.monitor import CoreMonitor, NodeMonitor

    stop = threading.Event()
    _until_stdin_closes(stop)
    t0 = time.monotonic() - args.t0_offset  # rows on the cell's time origin
    if args.cores:
        mon: Any = CoreMonitor(None, args.interval, t0=t0, stream=sys.stdout)
    else:
        from pathlib import Path

        from dnslab.nsenter import namespace_pids

        def daemon() -> int | None:
            if args.pid:  # -1: the node runs no daemon (a client)
                return args.pid if args.pid > 0 else None
            found = namespace_pids(Path(args.netns).name)
            return min(found) if found else None

        mon = NodeMonitor(args.node, args.netns, daemon, None, args.interval, t0=t0,
                          stream=sys.stdout)
    mon.start()
    stop.wait()
    mon.stop()
    return 0


def measured_main(args: argparse.Namespace) -> int:
    """Run a command (its output is ours), stop it when stdin closes (the controller was
    interrupted, or asks it to stop) or after `timeout` s, then write its exit code, wall
    time and CPU time (wait4's rusage) as JSON to the `--report` file."""
    started = time.monotonic()
    proc = subprocess.Popen(args.argv, stdin=subprocess.DEVNULL, start_new_session=True)
    stop = threading.Event()
    _until_stdin_closes(stop)

    def stopper() -> None:
        asked = stop.wait(args.timeout if args.timeout > 0 else None)
        if proc.poll() is None:  # asked to stop (SIGTERM with --term), or out of time
            if asked and args.term and args.term_cmdline:
                from dnslab.processes import signal_cmdline

                signal_cmdline(json.loads(args.term_cmdline))  # the tool behind docker exec
                return
            try:
                os.killpg(proc.pid, signal.SIGTERM if asked and args.term else signal.SIGKILL)
            except ProcessLookupError:
                pass

    threading.Thread(target=stopper, daemon=True).start()
    _, status, usage = os.wait4(proc.pid, 0)
    code = os.waitstatus_to_exitcode(status)
    with open(args.report, "w") as report:
        json.dump({"cpu_s": usage.ru_utime + usage.ru_stime,
                   "wall_s": time.monotonic() - started, "rc": code}, report)
    return code if code >= 0 else 128 - code


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m dnslab.hostcmd", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    one = sub.add_parser("call", help="one verb, JSON arguments on stdin")
    one.add_argument("verb")
    mon = sub.add_parser("monitor", help="1 Hz rows until stdin closes")
    mon.add_argument("--node", default="")
    mon.add_argument("--netns", default="")
    mon.add_argument("--pid", type=int, default=0)
    mon.add_argument("--cores", action="store_true")
    mon.add_argument("--interval", type=float, default=1.0)
    mon.add_argument("--t0-offset", type=float, default=0.0,
                     help="seconds the controller's monitors had run when this one started")
    run = sub.add_parser("measured", help="run a command and report its CPU time")
    run.add_argument("--timeout", type=float, default=0)
    run.add_argument("--term", action="store_true", help="SIGTERM instead of SIGKILL")
    run.add_argument("--term-cmdline", default="",
                     help="with --term: SIGTERM the processes whose command line is this JSON "
                          "list instead (a tool behind `docker exec`, which passes no signal)")
    run.add_argument("--report", required=True, help="where the exit code and CPU time go")
    run.add_argument("argv", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.command == "monitor":
        return monitor_main(args)
    if args.command == "measured":
        if args.argv and args.argv[0] == "--":
            args.argv = args.argv[1:]
        return measured_main(args)
    try:
        result = call(args.verb, json.loads(sys.stdin.read() or "{}"))
    except LabError as exc:
        print(json.dumps({"error": exc.message, "hint": exc.hint}))
        return 2
    print(json.dumps({"ok": result}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
