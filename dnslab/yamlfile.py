"""YAML read the fast way: libyaml's C loader where PyYAML was built with it (ten times
faster than the pure-Python one, the same safe subset), else PyYAML's own safe loader. The
CLI reads an experiment file and a topology before it can refuse a value; this keeps that
well under a second."""

from __future__ import annotations

from typing import Any

import yaml

SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load(text: str) -> Any:
    """`yaml.safe_load(text)`, faster."""
    return yaml.load(text, Loader=SafeLoader)  # noqa: S506 (a safe loader)
