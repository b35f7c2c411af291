#!/usr/bin/env python3
"""Where a test session's time went: seconds per test file (and its slowest test), from the
JUnit XML files `make test` writes (build/test-unit.xml, build/test-labs.xml), slowest first.
CI prints it last, so the part of its output a reader sees says what to trim when the session
nears its budget; after it, the last lines of each failed or erroring test's report (a lab
error's detail, such as a node's log tail, is among them: tests/conftest.py), since a reader
of CI may see only the end of its output.

    scripts/test-times.py build/test-unit.xml build/test-labs.xml [--top 25] [--failure-lines 12]
"""

from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path


def file_times(reports: list[Path]) -> list[tuple[str, float, int, str, float]]:
    """(file, seconds, tests, slowest test, its seconds) per test file, slowest file first."""
    total: dict[str, float] = defaultdict(float)
    count: dict[str, int] = defaultdict(int)
    slowest: dict[str, tuple[str, float]] = {}
    cases = [case for report in reports for case in ET.parse(report).getroot().iter("testcase")]
    for case in cases:
        seconds = float(case.get("time") or 0)
        module = (case.get("classname") or "?").replace(".", "/") + ".py"
        total[module] += seconds
        count[module] += 1
        if seconds > slowest.get(module, ("", -1.0))[1]:
            slowest[module] = (case.get("name") or "?", seconds)
    return sorted(((m, total[m], count[m], *slowest[m]) for m in total),
                  key=lambda row: row[1], reverse=True)


def failures(reports: list[Path], lines: int) -> list[tuple[str, list[str]]]:
    """(test id, the last `lines` lines of its report) per failed or erroring test."""
    found = []
    for report in reports:
        for case in ET.parse(report).getroot().iter("testcase"):
            for problem in [*case.iter("failure"), *case.iter("error")]:
                text = (problem.text or problem.get("message") or "").rstrip().splitlines()
                name = f"{case.get('classname')}::{case.get('name')} ({problem.tag})"
                found.append((name, text[-lines:]))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="+", type=Path)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--failure-lines", type=int, default=12)
    args = parser.parse_args(argv)
    found = [r for r in args.reports if r.is_file()]
    if not found:
        print("test-times: none of " + ", ".join(map(str, args.reports)) + " (make test "
              "writes them)", file=sys.stderr)
        return 1
    rows = file_times(found)
    print(f"test time by file (top {args.top} of {len(rows)}, "
          f"{sum(r[1] for r in rows) / 60:.1f} min in all):")
    for module, seconds, tests, name, worst in rows[:args.top]:
        print(f"{seconds:7.0f} s {tests:4d} tests  {module}  (slowest {worst:.0f} s: {name})")
    for name, text in failures(found, args.failure_lines):
        print(f"failed: {name}, its report's last lines:")
        for line in text:
            print(f"    {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
