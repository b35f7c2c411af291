"""stop_serve: the responder itself gets SIGTERM and prints its totals, also when the process
the lab started is a wrapper that does not pass signals on (clab's `docker exec` client);
serving: the responder for a block, its output kept, a failed start a one-line error."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from dnslab.errors import LabError
from dnslab.hosts import LOCAL_HOST, Host
from experiments.generators.dnsload import serving, stop_serve

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


class _HostLab:
    """A lab whose one node is the host: `serving` runs its argv as given."""

    def address(self, node: str) -> str:
        return "127.0.0.1"

    def popen(self, node: str, argv: list[str], **kwargs) -> subprocess.Popen:
        return subprocess.Popen(argv, **kwargs)

    def host(self, node: str) -> Host:
        return LOCAL_HOST


def _serve_script(tmp_path, monkeypatch, code: str) -> None:
    # `serving` runs [dnsload, "serve", ...]; with the interpreter as dnsload and the working
    # directory holding a script named "serve", that argv is the script's own command line
    (tmp_path / "serve").write_text(code)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("experiments.generators.dnsload.ensure_dnsload",
                        lambda: Path(sys.executable))


def test_serving_keeps_the_ready_line_and_the_totals(tmp_path, monkeypatch):
    _serve_script(tmp_path, monkeypatch, RESPONDER)
    with serving(_HostLab(), "srv", 30, tmp_path / "log", ["-tc", "0.3"]):
        pass
    lines = (tmp_path / "log" / "serve.jsonl").read_text().splitlines()
    assert lines == ['{"type": "serve_ready"}', '{"type": "serve_total"}']


def test_a_responder_that_does_not_start_is_one_line_error(tmp_path, monkeypatch):
    _serve_script(tmp_path, monkeypatch,
                  "import sys\nsys.stderr.write('listen udp 127.0.0.1:53: bind: in use\\n')\n"
                  "sys.exit(1)\n")
    with pytest.raises(LabError, match="did not start in node srv: listen udp .*in use$"):
        with serving(_HostLab(), "srv", 30, tmp_path / "log"):
            raise AssertionError("the block must not run")
    assert not (tmp_path / "log").exists()
