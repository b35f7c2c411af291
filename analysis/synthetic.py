"""Synthetic run folders for tests, written by the runner's own `RunWriter`.

Nothing here writes meta.json or cell.json by hand: every run goes through
`dnslab.results.RunWriter`, the one writer the experiment runner uses, so the analysis is
tested on the layout real runs have. `write_run` writes one run from `CellData` (params,
figures, CSV files, sysctls read back); each finding's `fixtures.py` builds its cells, taking
the effect to show as parameters, so each claim can be given a run where its effect is
present, absent, reversed, or where its precondition is unmet. `resample` copies a run with
its repetitions drawn again, for the test that verdicts do not flip between reruns.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from dnslab import results
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



# --- a run's repetitions drawn again -----------------------------------------------------------

# meta.json fields of a run that its claims read beside its cells, kept in a resampled copy
RUN_FIELDS = ("placement", "port_range_choice", "profiles", "hosts", "images", "scale")
# ... and of each cell (the WAN applied and read back, where its nodes ran)
CELL_FIELDS = ("wan", "wan_counters", "placement", "affinity", "hosts")


def _draw(rng: np.random.Generator, count: int) -> list[int]:
    """`count` indices drawn with replacement, at least two distinct when count >= 2: a run
    of n repetitions that are all one repetition shows no spread, which no real run does."""
    while True:
        drawn = [int(i) for i in rng.integers(0, count, count)]
        if count < 2 or len(set(drawn)) > 1:
            return drawn


def _cell_data(run: Any, cell: Any) -> CellData:
    """A loaded cell as CellData: its params, figures, every file, the sysctls of meta.json."""
    files = {str(p.relative_to(cell.dir)): p.read_text() for p in sorted(cell.dir.rglob("*"))
             if p.is_file() and p.name != results.CELL}
    return CellData(dict(cell.params), dict(cell.figures), files=files,
                    sysctls=results.cell_sysctls(run.meta, cell.id),
                    requested=results.cell_sysctls(run.meta, cell.id, "sysctls_requested"),
                    finished=cell.status == "complete")


def _redraw_rows(text: str, key: str, drawn: dict[str, str]) -> str:
    """A CSV's rows redrawn by their `key` column: new key k takes the rows of drawn[k]."""
    lines = text.splitlines()
    header = lines[0].split(",")
    if key not in header:
        return text
    column = header.index(key)
    by_key: dict[str, list[list[str]]] = {}
    for line in lines[1:]:
        row = line.split(",")
        by_key.setdefault(row[column], []).append(row)
    out = [lines[0]]
    for new, old in drawn.items():
        for row in by_key.get(old, []):
            out.append(",".join([*row[:column], new, *row[column + 1:]]))
    return "\n".join(out) + "\n"


def repetition_units(run_dir: Path) -> list[str]:
    """What `resample` can draw again in a run: "repetitions" (cells with a `rep` param,
    two or more), "rounds" (`trials.csv` with a `trial` column, two or more), "qps_trials"
    and "delays_s" (a cell's own list of two or more); none: every figure is one
    measurement."""
    from analysis.rundata import load_run

    run = load_run(run_dir)
    found = []
    if len({str(c.params["rep"]) for c in run.cells if "rep" in c.params}) > 1:
        found.append("repetitions")
    if any(c.has("trials.csv") and "trial" in c.csv("trials.csv").columns
           and c.csv("trials.csv")["trial"].nunique() > 1 for c in run.cells):
        found.append("rounds")
    for name in ("qps_trials", "delays_s"):
        if any(isinstance(c.figures.get(name), list) and len(c.figures[name]) > 1
               for c in run.cells):
            found.append(name)
    return found


def resample(run_dir: Path, root: Path, rng: np.random.Generator, run_id: str) -> Path:
    """A copy of a run under `root` whose repetitions are drawn again with replacement, as
    a rerun of the same experiment might have measured them (the verdict-stability test
    re-judges such copies): the cells of a repetition (param `rep`, all of one repetition's
    cells taken together so its pairs stay pairs, in the run's order), the rounds of every
    `trials.csv` (column `trial`: the same rounds drawn for each cell, a round being one
    block of the run), and a cell's own repetition lists (figure `qps_trials`; figure
    `delays_s` with `repetitions.csv`). Written through RunWriter, with the run-level and
    cell-level meta.json fields its claims read (RUN_FIELDS, CELL_FIELDS)."""
    from analysis.rundata import load_run  # the analysis reads the run; this writes one

    run = load_run(run_dir)
    cells = [_cell_data(run, c) for c in run.cells]
    sources = [c.id for c in run.cells]  # the cell each new cell's data comes from
    reps = sorted({str(c.params["rep"]) for c in cells if "rep" in c.params})
    if len(reps) > 1:
        drawn = dict(zip(reps, (reps[i] for i in _draw(rng, len(reps))), strict=True))
        by_key = {(json.dumps({k: v for k, v in c.params.items() if k != "rep"},
                              sort_keys=True), str(c.params["rep"])): (c, source)
                  for c, source in zip(cells, sources, strict=True) if "rep" in c.params}
        redrawn, redrawn_sources = [], []
        for cell, source in zip(cells, sources, strict=True):
            if "rep" in cell.params:
                rest = json.dumps({k: v for k, v in cell.params.items() if k != "rep"},
                                  sort_keys=True)
                data, source = by_key.get((rest, drawn[str(cell.params["rep"])]),
                                          (cell, source))
                cell = replace(data, params=dict(cell.params))
            redrawn.append(cell)
            redrawn_sources.append(source)
        cells, sources = redrawn, redrawn_sources
    rounds = sorted({row.split(",")[0] for c in cells
                     if (text := c.files.get("trials.csv")) and text.startswith("trial,")
                     for row in text.splitlines()[1:]}, key=lambda r: (len(r), r))
    if len(rounds) > 1:
        draw_rounds = {str(k + 1): rounds[i] for k, i in enumerate(_draw(rng, len(rounds)))}
        for cell in cells:
            if "trials.csv" in cell.files:
                cell.files["trials.csv"] = _redraw_rows(cell.files["trials.csv"], "trial",
                                                        draw_rounds)
    for cell in cells:
        trials = cell.figures.get("qps_trials")
        if isinstance(trials, list) and len(trials) > 1:
            cell.figures["qps_trials"] = [trials[i] for i in _draw(rng, len(trials))]
        delays = cell.figures.get("delays_s")
        if isinstance(delays, list) and len(delays) > 1:
            picks = _draw(rng, len(delays))
            cell.figures["delays_s"] = [delays[i] for i in picks]
            if "repetitions.csv" in cell.files:
                cell.files["repetitions.csv"] = _redraw_rows(
                    cell.files["repetitions.csv"], "rep",
                    {str(k): str(i) for k, i in enumerate(picks)})
    meta = {k: run.meta[k] for k in RUN_FIELDS if k in run.meta}
    copy = write_run(root, run.experiment, cells, params=run.params,
                     topology=run.meta.get("topology"), run_id=run_id,
                     cpus=int((run.meta.get("machine") or {}).get("cpus") or 2), meta=meta,
                     complete=run.complete)
    writer = RunWriter(dir=copy, meta=results.read_meta(copy), _cell_dirs={})
    for cell, source in zip(cells, sources, strict=True):  # what the lab applied per cell
        entry = (run.meta.get("cells") or {}).get(source) or {}
        for key in CELL_FIELDS:
            if key in entry:
                writer.record_cell(cell.cell_id, key, entry[key])
    return copy
