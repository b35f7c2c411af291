"""Stopping a lab's processes (dnslab/processes.py): `terminate` returns once they have left
the process table, a zombie too; `lab_processes` finds a lab's process by the lab folder its
command line names, whatever namespace it runs in."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from dnslab.processes import lab_processes, terminate
from dnslab.wait import wait_until

SLEEPER = "import time; time.sleep(60)"


def test_terminate_returns_once_the_processes_are_gone_from_the_table(tmp_path: Path) -> None:
    # one that ends at SIGTERM, one that ignores it (SIGKILL after the grace)
    stubborn = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); " \
               "print(flush=True); time.sleep(60)"
    gentle = subprocess.Popen([sys.executable, "-c", SLEEPER])
    hard = subprocess.Popen([sys.executable, "-c", stubborn], stdout=subprocess.PIPE)
    assert hard.stdout is not None and hard.stdout.readline()  # its handler is set
    assert terminate([gentle.pid, hard.pid], grace=0.5) == []
    for pid in (gentle.pid, hard.pid):
        assert not Path(f"/proc/{pid}").exists(), "not even a zombie is left"


# a parent that reaps its child a second after it died (as init reaps a daemon whose starter
# has exited, at its own pace)
SLOW_REAPER = """
import os, sys, time
child = os.fork()
if child == 0:
    time.sleep(60)
    os._exit(0)
print(child, flush=True)
while open(f"/proc/{child}/stat").read().rsplit(")", 1)[1].split()[0] != "Z":
    time.sleep(0.02)
time.sleep(1.0)
os.waitpid(child, 0)
"""


def test_terminate_waits_for_a_zombie_to_be_reaped_by_its_parent() -> None:
    for within, left in ((0.2, True), (10.0, False)):
        parent = subprocess.Popen([sys.executable, "-c", SLOW_REAPER], stdout=subprocess.PIPE,
                                  text=True)
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        started = time.monotonic()
        assert terminate([child], grace=0.5, reaped_within=within) == ([child] if left else [])
        if not left:
            assert time.monotonic() - started >= 0.9, "returned before the zombie was reaped"
        parent.wait(timeout=10)


def test_a_labs_processes_are_found_by_the_folder_their_command_line_names(
        tmp_path: Path) -> None:
    labs = tmp_path / "labs"
    (labs / "xfr" / "nodes").mkdir(parents=True)
    (labs / "reference").mkdir()
    mine = subprocess.Popen([sys.executable, "-c", SLEEPER, f"{labs}/xfr/nodes/primary.conf"])
    other = subprocess.Popen([sys.executable, "-c", SLEEPER, f"-c={labs}/reference/x.conf"])
    both = sorted([(mine.pid, "xfr"), (other.pid, "reference")])
    try:
        # once both have started (on a busy machine the second can take a moment)
        wait_until(lambda: sorted(lab_processes(str(labs))) == both, 10, "both processes")
        assert lab_processes(str(labs), "xfr") == [(mine.pid, "xfr")]
        assert lab_processes(str(tmp_path / "nowhere")) == []
    finally:
        terminate([mine.pid, other.pid], grace=0.5)
    assert lab_processes(str(labs)) == []
