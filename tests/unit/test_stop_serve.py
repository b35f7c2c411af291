"""stop_serve: the responder itself gets SIGTERM and prints its totals, also when the process
the lab started is a wrapper that does not pass signals on (clab's `docker exec` client)."""

from __future__ import annotations

import subprocess
import sys
import uuid

from experiments.dnsload import stop_serve

RESPONDER = """
import signal, sys, time
def done(*_):
    print('{"type": "serve_total"}', flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, done)
print('{"type": "serve_ready"}', flush=True)
while True:
    time.sleep(0.05)
"""

# like `docker exec`: ignores SIGTERM itself, runs the command, passes its output through
WRAPPER = """
import signal, subprocess, sys
signal.signal(signal.SIGTERM, signal.SIG_IGN)
sys.exit(subprocess.run(sys.argv[1:], preexec_fn=lambda: signal.signal(
    signal.SIGTERM, signal.SIG_DFL)).returncode)
"""


def _responder_argv() -> list[str]:
    return [sys.executable, "-c", RESPONDER, f"marker-{uuid.uuid4().hex}"]


def _started(argv: list[str]) -> subprocess.Popen:
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and "serve_ready" in proc.stdout.readline()
    return proc


def test_a_responder_run_directly_prints_its_totals():
    argv = _responder_argv()
    out = stop_serve(_started(argv), argv, timeout=10)
    assert "serve_total" in out


def test_a_responder_behind_a_wrapper_that_swallows_signals_prints_its_totals():
    argv = _responder_argv()
    wrapper = _started([sys.executable, "-c", WRAPPER, *argv])
    out = stop_serve(wrapper, argv, timeout=10)
    assert "serve_total" in out
    assert wrapper.returncode == 0
