"""Small helpers the procedures share: a list parameter checked against its choices (one-line
error), and rows written to a cell's CSV file."""

from __future__ import annotations

import csv
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dnslab.errors import LabError


def check_choice(name: str, values: list[str],
                 allowed: tuple[str, ...] | list[str] | Mapping[str, Any]) -> None:
    """Each of `values` is one of `allowed` (a KindMap matches any name of a version)."""
    bad = [v for v in values if v not in allowed]
    if bad or not values:
        raise LabError(f"{name.upper()}={','.join(values)}: {bad[0] if bad else 'empty'!r} "
                       "is not a choice", hint=f"{name.upper()} from: {', '.join(allowed)}")


def write_rows(path: Path, columns: list[str], rows: list[dict[str, Any]]) -> None:
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
