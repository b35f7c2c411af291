"""Shared fixtures: markers that skip with a stated reason when the host cannot run a test."""

from __future__ import annotations

import os
import shutil

import pytest


def pytest_collection_modifyitems(config, items):
    not_root = os.geteuid() != 0
    # the clean-root tests take minutes per Debian suite: only when asked for by marker
    clean_root_asked = "clean_root" in (config.getoption("markexpr", "") or "")
    for item in items:
        if "integration" in item.keywords and not_root:
            item.add_marker(pytest.mark.skip(reason="integration tests need root (sudo make test)"))
        elif "clean_root" in item.keywords and not clean_root_asked:
            item.add_marker(pytest.mark.skip(
                reason="opt-in, minutes per Debian suite: make test-clean-root "
                       "(pytest -m clean_root)"))


def need_binary(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed (make setup installs it)")
    return path
