"""Analysis of lab runs: claims as pytest tests, plots, per-run reports and the run index.

`run_analysis(run_dir)` evaluates the claims covering the run's experiment, draws its plots,
writes `summary.json` (with `verdicts`) and `report/`, and updates `results/index.sqlite`.
The CLI is `python -m analysis run|runs|compare`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def run_analysis(run_dir: Path, *, update_index: bool = True) -> dict[str, Any]:
    """Analyse one run folder; returns the summary written to `<run_dir>/summary.json`."""
    from analysis.pipeline import analyse

    return analyse(Path(run_dir), update_index=update_index)


__all__ = ["run_analysis"]
