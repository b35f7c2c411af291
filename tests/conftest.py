"""Shared fixtures: markers that skip with a stated reason when the host cannot run a test;
a lab error's detail (a node's log tail) kept in the failure's report, so JUnit XML and CI's
summary of failures (scripts/test-times.py) show why a daemon stopped, not only that it did."""

from __future__ import annotations

import os
import shutil

import pytest

from dnslab.errors import LabError


def pytest_collection_modifyitems(config, items):
    not_root = os.geteuid() != 0
    # the clean-root tests take minutes per Debian suite: only in a session that asks for
    # them by marker (make test runs one last)
    clean_root_asked = "clean_root" in (config.getoption("markexpr", "") or "")
    for item in items:
        if "integration" in item.keywords and not_root:
            item.add_marker(pytest.mark.skip(reason="integration tests need root (sudo make test)"))
        elif "clean_root" in item.keywords and not clean_root_asked:
            item.add_marker(pytest.mark.skip(
                reason="minutes per Debian suite, in a session of their own: make "
                       "test-clean-root (pytest -m clean_root), the last part of make test"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    error = call.excinfo.value if call.excinfo is not None else None
    if isinstance(error, LabError) and error.detail and hasattr(report.longrepr, "addsection"):
        report.longrepr.addsection("the lab error's detail", error.detail)


def need_binary(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed (make setup installs it)")
    return path
