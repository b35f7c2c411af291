"""Synthetic run folders for tests, written by the runner's own `RunWriter`.

Nothing here writes meta.json or cell.json by hand: every run goes through
`dnslab.results.RunWriter`, the one writer the experiment runner uses, so the analysis is
tested on the layout real runs have. `write_run` writes one run from `CellData` (params,
figures, CSV files, sysctls read back); each finding's `fixtures.py` builds its cells, taking
the effect to show as parameters, so each claim can be given a run where its effect is
present, absent, reversed, or where its precondition is unmet.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dnslab.results import RunWriter

MONITOR_COLUMNS = ["t", "cpu_pct", "rss_kb", "udp_in_errors", "udp_rcvbuf_errors",
                   "tcp_active_opens", "tcp_passive_opens", "listen_overflows", "listen_drops",
                   "retrans_segs", "tcp_estab", "tcp_time_wait", "tcp_syn_sent", "tcp_total"]
_ids = itertools.count(1)



@dataclass
class CellData:
    """One cell to write: params, figures, CSV files, sysctls read back per node."""

    params: dict[str, Any]
    figures: dict[str, Any] = field(default_factory=dict)
    csv: dict[str, tuple[list[str], list[list[Any]]]] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)  # other raw files: name -> text
    sysctls: dict[str, dict[str, str]] = field(default_factory=dict)
    requested: dict[str, dict[str, str]] | None = None  # default: what was read back
    finished: bool = True  # False: interrupted before cell.json was written

    @property
    def cell_id(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self.params.items()
                        if isinstance(v, str | int | float))


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}".rstrip("0").rstrip(".")
    return str(value)


def write_csv(path: Path, header: list[str], rows: list[list[Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [",".join(header)] + [",".join(_fmt(v) for v in row) for row in rows]
    path.write_text("\n".join(lines) + "\n")


def write_run(root: Path, experiment: str, cells: list[CellData], *,
              params: dict[str, Any] | None = None, complete: bool = True,
              topology: dict[str, Any] | None = None, run_id: str | None = None,
              cpus: int = 2, started: str = "2025-01-01T00:00:00.000+00:00",
              meta: dict[str, Any] | None = None) -> Path:
    """One run folder under root/<experiment>/, through the runner's RunWriter (`meta`:
    more of meta.json's fields, e.g. a run of a file of one's own's `own_experiment`)."""
    run_id = run_id or f"20250101T000000Z-{next(_ids):04x}"
    writer = RunWriter.create(root, experiment, run_id, {
        "description": f"{experiment} (test fixture)", "findings": [], "params": params or {},
        "scale": "ci", "runtime": "netns",
        "topology": topology or {"name": "fixture", "file": "", "nodes": {}},
        "kernel": "6.1.0-28-amd64", "machine": {"cpus": cpus, "memory_kb": 2048000},
        "versions": {"bind9": "1:9.18.28-1~deb12u2"}, "git": {"commit": "0123abc",
                                                               "dirty": False},
        "command": ["make", "experiment", f"EXP={experiment}", "SCALE=ci"],
        "started": started, **(meta or {})})
    for cell in cells:
        cell_dir = writer.start_cell(cell.cell_id, cell.params, "2025-01-01T00:00:01+00:00")
        writer.record_sysctls(cell.cell_id, cell.sysctls,
                              cell.sysctls if cell.requested is None else cell.requested)
        for name, (header, rows) in cell.csv.items():
            write_csv(cell_dir / name, header, rows)
        for name, text in cell.files.items():
            (cell_dir / name).parent.mkdir(parents=True, exist_ok=True)
            (cell_dir / name).write_text(text)
        if cell.finished:
            writer.write_cell(cell.cell_id, cell.figures, "complete")
            writer.end_cell(cell.cell_id, "2025-01-01T00:03:00+00:00", "complete")
    writer.finish("2025-01-01T00:03:10+00:00", complete)
    return writer.dir

