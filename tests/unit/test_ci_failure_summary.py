"""CI's last lines name each failed test with its report's end: a lab error's detail (a node's
log tail, tests/conftest.py) reaches the JUnit XML, and scripts/test-times.py prints it."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _test_times():
    spec = importlib.util.spec_from_file_location("test_times", REPO / "scripts/test-times.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_daemons_log_tail_reaches_ci_s_summary(tmp_path):
    (tmp_path / "test_daemon.py").write_text(
        "import pytest\n"
        "from dnslab.errors import LabError\n"
        "@pytest.fixture\n"
        "def lab():\n"
        "    raise LabError(\"node 'res-kresd' (kresd) exited while starting\",\n"
        "                   detail='[system] error while loading config: cache.open failed')\n"
        "def test_answers(lab):\n"
        "    pass\n"
        "def test_passes():\n"
        "    assert 1 + 1 == 2\n")
    report = tmp_path / "report.xml"
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "-p", "tests.conftest", f"--junitxml={report}",
                          str(tmp_path / "test_daemon.py")],
                         cwd=REPO, capture_output=True, text=True)
    assert run.returncode == 1, run.stdout + run.stderr
    found = _test_times().failures([report], lines=12)
    assert [name for name, _ in found] == ["test_daemon::test_answers (error)"]
    text = "\n".join(found[0][1])
    assert "error while loading config: cache.open failed" in text
    printed = subprocess.run([sys.executable, str(REPO / "scripts/test-times.py"), str(report)],
                             capture_output=True, text=True, check=True).stdout
    assert printed.splitlines()[-1].strip().endswith(text.splitlines()[-1].strip())
    assert "failed: test_daemon::test_answers (error)" in printed
