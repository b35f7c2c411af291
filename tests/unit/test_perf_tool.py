"""perf.run_tool with a latency histogram: dnsperf -v's per-answer lines are binned (not
kept), everything else it printed is kept, and its own exit status comes back; the version
dnsperf and resperf print first is read."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from dnslab.hosts import LOCAL_HOST, Host
from dnslab.lab import Lab
from experiments.generators import perf


class LocalLab:
    """Runs a node's commands here (what run_tool needs of a Lab)."""

    runtime = SimpleNamespace(wrap_timeout=lambda argv, timeout: argv,
                              node_cpu_seconds=lambda state, node: None)
    state = None

    def popen(self, node: str, argv: list[str], **kwargs: Any) -> subprocess.Popen:
        return subprocess.Popen(argv, **kwargs)

    def host(self, node: str) -> Host:
        return LOCAL_HOST

    run_measured = Lab.run_measured  # the real one, on this machine


FAKE_DNSPERF = """
import sys
for i in range(20000):
    print(f"> NOERROR h{i}.tcp.test. A 0.00{1 + i % 9}")
print("Statistics:\\n  Queries sent:         20000")
print("a warning on stderr", file=sys.stderr)
sys.exit(3)
"""


def test_verbose_lines_are_binned_and_the_rest_is_kept(tmp_path: Path) -> None:
    histogram = perf.LatencyHistogram()
    out = tmp_path / "dnsperf-l100-1.txt"
    text, _cpu, wall, rc = perf.run_tool(LocalLab(), "client",  # type: ignore[arg-type]
                                         [sys.executable, "-c", FAKE_DNSPERF], out, 60,
                                         histogram)
    assert rc == 3 and wall > 0
    assert sum(histogram.counts) == 20000
    # per response code: the answers, their latencies' sum and the slowest
    noerror = histogram.by_rcode["NOERROR"]
    assert noerror.answers == 20000 and noerror.max_s == 0.009
    assert abs(noerror.sum_s - sum(0.001 * (1 + i % 9) for i in range(20000))) < 1e-6
    assert "Queries sent:         20000" in text and "a warning on stderr" in text
    assert "> NOERROR" not in text
    # the scratch files are gone: only the tool's summary stays in the cell
    assert sorted(p.name for p in tmp_path.iterdir()) == [out.name]


def test_the_version_the_tool_printed_is_read() -> None:
    started = "DNS Performance Testing Tool\nVersion 2.14.0\n\n[Status] Command line: dnsperf"
    assert perf.tool_version(started) == "2.14.0"
    assert perf.tool_version("DNS Resolution Performance Testing Tool\nVersion 2.10.0\n") \
        == "2.10.0"
    assert perf.tool_version("dnsperf: invalid option -- 'V'\nUsage: dnsperf") is None


def test_the_hang_guard_outlasts_a_slow_pass_over_a_long_query_list(tmp_path: Path) -> None:
    """A pass (-n) over 30,000 names at -q 100 with a 5 s timeout may take up to 1,500 s if
    every query waits out its timeout; the guard allows that, where a fixed 80 s stopped a
    cold pass that needed ~81 s (run c342). A timed run is its duration plus the margin."""
    names = tmp_path / "names.txt"
    names.write_text("; a comment line\n" + "".join(f"n{i}.test. A\n" for i in range(30000)))
    guard = perf.hang_guard_s(names, duration_s=None, runs=1, outstanding=100, timeout_s=5.0)
    assert guard == 30000 * 5.0 / 100 + 4 * 5.0 + 60
    assert perf.hang_guard_s(names, duration_s=60.0, runs=None, outstanding=100,
                             timeout_s=5.0) == 60 + 4 * 5.0 + 60
