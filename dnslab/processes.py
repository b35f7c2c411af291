"""Processes the lab starts: whether one still runs, and stopping a group of them.

Light on purpose (the standard library only): a lab host runs it through `dnslab.hostcmd`
with Debian's python3.
"""

from __future__ import annotations

import os
import signal

from dnslab.wait import WaitTimeout, wait_until

STOP_GRACE_S = 2.0


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


def terminate(pids: list[int], grace: float = STOP_GRACE_S) -> None:
    """SIGTERM the processes, wait up to `grace` seconds, SIGKILL what is left."""
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
        return
    except WaitTimeout:
        pass
    for pid in alive:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        wait_until(all_gone, grace, "the node's processes to die", interval=0.02)
    except WaitTimeout:
        pass
