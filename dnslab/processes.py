"""Processes the lab starts: whether one still runs, and stopping a group of them.

Light on purpose (the standard library only): a lab host runs it through `dnslab.hostcmd`
with Debian's python3.
"""

from __future__ import annotations

import os
import signal

from dnslab.wait import WaitTimeout, wait_until

STOP_GRACE_S = 2.0
REAP_WAIT_S = 10.0


def pid_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        # gone before or while its stat was read (a read after the exit is ESRCH)
        return False
    if state == "Z":
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        return False
    return True


def _start_time(pid: int) -> str | None:
    """When the process started (clock ticks since boot), telling it from a later process
    that reuses its pid; None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def terminate(pids: list[int], grace: float = STOP_GRACE_S,
              reaped_within: float = REAP_WAIT_S) -> list[int]:
    """SIGTERM the processes, wait up to `grace` seconds, SIGKILL what is left; then wait up
    to `reaped_within` seconds until each has left the process table, a zombie too (a
    daemon whose starter has exited is reaped by init, at init's pace). Returns the pids
    still there."""
    started = {pid: _start_time(pid) for pid in pids}
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    alive = [p for p in pids if pid_alive(p)]

    def all_gone() -> bool:
        alive[:] = [p for p in alive if pid_alive(p)]
        return not alive

    try:
        wait_until(all_gone, grace, "the node's processes to end", interval=0.02)
    except WaitTimeout:
        for pid in alive:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            wait_until(all_gone, grace, "the node's processes to die", interval=0.02)
        except WaitTimeout:
            pass
    listed = [p for p in pids if started[p] is not None]

    def reaped() -> bool:
        for pid in listed:
            pid_alive(pid)  # reaps a zombie child of this process
        listed[:] = [p for p in listed if _start_time(p) == started[p]]
        return not listed

    try:
        wait_until(reaped, reaped_within, "the node's processes to be reaped", interval=0.05)
    except WaitTimeout:
        pass
    return listed


def lab_processes(labs_folder: str, lab: str | None = None) -> list[tuple[int, str]]:
    """(pid, lab) of every process whose command line names a file of a lab's folder
    (`<labs_folder>/<lab>/...`: a node's daemon, by its configuration's path), of one lab or
    of every lab: a daemon still running once its namespace is gone is found so. Only those
    that see this host's folder there (another host emulated on this machine, with its own
    folder at that path, has its own)."""
    from pathlib import Path

    try:
        here = os.stat(labs_folder)
    except OSError:
        return []
    prefix = (labs_folder.rstrip("/") + "/").encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            if prefix not in cmdline:
                continue
            # the path as the process sees it, through its own mount namespace
            seen = os.stat(f"{entry}/root{labs_folder}")
        except OSError:
            continue
        if (seen.st_dev, seen.st_ino) != (here.st_dev, here.st_ino):
            continue
        for arg in cmdline.split(b"\0"):
            at = arg.find(prefix)
            if at < 0:
                continue
            name = arg[at + len(prefix):].split(b"/", 1)[0].decode(errors="replace")
            if name and (lab is None or name == lab):
                found.append((int(entry.name), name))
                break
    return found


def signal_cmdline(argv: list[str], sig: int = signal.SIGTERM) -> list[int]:
    """Send `sig` to every process whose command line is exactly `argv`; their pids. Reaches
    a tool started through `docker exec`, which passes no signal on: the tool in the
    container is a process of its host all the same."""
    from pathlib import Path

    wanted = "\0".join(argv).encode()
    hit = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().rstrip(b"\0")
        except OSError:
            continue
        if cmdline == wanted:
            try:
                os.kill(int(entry.name), sig)
                hit.append(int(entry.name))
            except ProcessLookupError:
                pass
    return hit


def cgroup_cpu_seconds(pid: int) -> float | None:
    """CPU seconds used so far by everything in the cgroup of `pid` (a container's: v1
    cpuacct.usage or v2 cpu.stat); None when it cannot be read."""
    from pathlib import Path

    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "cpuacct" in controllers.split(","):
            for mount in ("cpu,cpuacct", "cpuacct", "cpuacct,cpu"):
                usage = Path(f"/sys/fs/cgroup/{mount}{path}/cpuacct.usage")
                if usage.exists():
                    return int(usage.read_text()) / 1e9
        if controllers == "":
            stat = Path(f"/sys/fs/cgroup{path}/cpu.stat")
            if stat.exists():
                for row in stat.read_text().splitlines():
                    if row.startswith("usage_usec "):
                        return int(row.split()[1]) / 1e6
    return None
