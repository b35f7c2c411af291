"""The run index: `results/index.sqlite`, rebuilt from each run's meta.json and summary.json.

The files in the run folders are the truth; the index is a cache for listing and comparing
runs and can be deleted at any time (`update(root)` rebuilds it). Tables:
- `runs(path, experiment, run_id, started, ended, complete, runtime, kernel, git, params,
  cells, analysed)`; `path` is relative to the results root (`<exp>/<run-id>`)
- `verdicts(path, claim_id, finding, kind, title, status, published, measured, tolerance,
  detail, cause, line, precondition, fails_when, unmet)`; `kind` says whether a verdict is
  a reproduction or a check of the lab (calibration, lab check), and `verdict_counts` never
  counts a check as a reproduction;
  `cause` what a "not applicable" needs (`machine` | `setting`), which `census` counts per
  finding: judged (reproduced, not reproduced, inconclusive) / not applicable (machine) /
  not applicable (setting), so a speaker sees what a bigger machine would add and what a
  rerun with other settings would.
An index written before a column existed is dropped and rebuilt from the run folders.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from dnslab import results
from dnslab.errors import LabError

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
  path TEXT PRIMARY KEY, experiment TEXT, run_id TEXT, started TEXT, ended TEXT,
  complete INTEGER, runtime TEXT, kernel TEXT, git TEXT, params TEXT, cells INTEGER,
  analysed TEXT
);
CREATE TABLE IF NOT EXISTS verdicts (
  path TEXT, claim_id TEXT, finding TEXT, kind TEXT, title TEXT, status TEXT, published TEXT,
  measured TEXT, tolerance TEXT, detail TEXT, cause TEXT, line TEXT, precondition TEXT,
  fails_when TEXT, unmet TEXT,
  PRIMARY KEY (path, claim_id)
);
"""
VERDICT_COLUMNS = ["path", "claim_id", "finding", "kind", "title", "status", "published",
                   "measured", "tolerance", "detail", "cause", "line", "precondition",
                   "fails_when", "unmet"]
REPRODUCTION = "reproduction"  # as analysis.claim names the kinds
CHECK_KINDS = {"calibration", "lab_check"}


def db_path(root: Path) -> Path:
    return Path(root) / "index.sqlite"


def _connect(root: Path) -> sqlite3.Connection:
    root = Path(root)
    if not root.is_dir():
        raise LabError(f"no results folder at {root}",
                       hint="run an experiment first, or pass --results")
    con = sqlite3.connect(db_path(root))
    columns = [row[1] for row in con.execute("PRAGMA table_info(verdicts)")]
    if columns and columns != VERDICT_COLUMNS:
        # an older index (a cache): dropped, rebuilt from the run folders by `update`
        con.executescript("DROP TABLE IF EXISTS verdicts; DROP TABLE IF EXISTS runs;")
    con.executescript(SCHEMA)
    return con


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def _text(value: Any) -> str | None:
    """SQLite stores scalars; a structured value (the runner's git dict) is kept as JSON."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True)


def find_runs(root: Path) -> list[Path]:
    return results.run_dirs(root)


def _upsert(con: sqlite3.Connection, root: Path, run_dir: Path) -> None:
    meta = results.peek_meta(run_dir)
    summary = _load(run_dir / "summary.json")
    rel = run_dir.resolve().relative_to(Path(root).resolve()).as_posix()
    cells_dir = run_dir / "cells"
    n_cells = sum(1 for p in cells_dir.iterdir() if p.is_dir()) if cells_dir.is_dir() else 0
    con.execute("DELETE FROM verdicts WHERE path = ?", (rel,))
    con.execute(
        "INSERT OR REPLACE INTO runs VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
        (rel, meta.get("experiment") or run_dir.parent.name, meta.get("run_id") or run_dir.name,
         meta.get("started"), meta.get("ended"), int(bool(meta.get("complete", False))),
         meta.get("runtime"), meta.get("kernel"),
         _text(meta.get("git_revision") or meta.get("git")),
         json.dumps(meta.get("params") or {}, sort_keys=True), n_cells,
         (summary.get("analysis") or {}).get("generated")))
    for v in summary.get("verdicts") or []:
        con.execute("INSERT OR REPLACE INTO verdicts VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (rel, v.get("claim_id"), v.get("finding"), v.get("kind") or REPRODUCTION,
                     v.get("title"), v.get("status"), v.get("published"), v.get("measured"),
                     v.get("tolerance"), v.get("detail"), v.get("cause"), v.get("line"),
                     v.get("precondition"), v.get("fails_when"), v.get("unmet")))


def update(root: Path, runs: Iterable[Path] | None = None) -> Path:
    """Refresh the index for the given run folders, or rebuild it from every run under root."""
    root = Path(root)
    with _connect(root) as con:
        if runs is None:
            found = find_runs(root)
            keep = {p.resolve().relative_to(root.resolve()).as_posix() for p in found}
            for (path,) in con.execute("SELECT path FROM runs").fetchall():
                if path not in keep:
                    con.execute("DELETE FROM runs WHERE path = ?", (path,))
                    con.execute("DELETE FROM verdicts WHERE path = ?", (path,))
            runs = found
        for run_dir in runs:
            _upsert(con, root, Path(run_dir))
    con.close()
    return db_path(root)


def list_runs(root: Path, experiment: str | None = None) -> list[dict[str, Any]]:
    """Runs, newest first, each with `verdicts` (list of dicts) from the index."""
    with _connect(root) as con:
        con.row_factory = sqlite3.Row
        sql = "SELECT * FROM runs"
        args: tuple[Any, ...] = ()
        if experiment:
            sql += " WHERE experiment = ?"
            args = (experiment,)
        rows = [dict(r) for r in con.execute(sql + " ORDER BY run_id DESC, path", args)]
        for row in rows:
            row["verdicts"] = [dict(v) for v in con.execute(
                "SELECT * FROM verdicts WHERE path = ? ORDER BY rowid", (row["path"],))]
    con.close()
    return rows


CHECK_STATUS = {"reproduced": "hold", "not_reproduced": "fail", "inconclusive": "inconclusive"}


def verdict_counts(verdicts: list[dict[str, Any]]) -> list[tuple[str, str, int]]:
    """(label, status, count) per kind of verdict, reproductions first: "3 reproduced",
    "1 not applicable", then the checks of the lab apart ("4 lab checks hold", "1 lab check
    fails"): a calibration or lab check that passed is never counted as reproduced."""
    counts: dict[tuple[bool, str], int] = {}
    for v in verdicts:
        check = (v.get("kind") or REPRODUCTION) in CHECK_KINDS
        key = (check, str(v.get("status")))
        counts[key] = counts.get(key, 0) + 1
    out = []
    for (check, status), n in sorted(counts.items(), key=lambda kv: kv[0][0]):
        if not check:
            out.append((f"{n} {status.replace('_', ' ')}", status, n))
            continue
        word = CHECK_STATUS.get(status)
        noun = "lab check" if n == 1 else "lab checks"
        verb = ((word + ("s" if n == 1 and word != "inconclusive" else "")) if word
                else status.replace("_", " "))
        out.append((f"{n} {noun} {verb}", status, n))
    return out


JUDGED = ("reproduced", "not_reproduced", "inconclusive")  # as analysis.claim names them
MACHINE, SETTING = "machine", "setting"  # as analysis.rundata names the causes
CENSUS_KEYS = ("judged", "reproduced", "not_reproduced", "inconclusive", MACHINE, SETTING,
               "unclassified", "other")


def finding_of(verdict: dict[str, Any]) -> str:
    return str(verdict.get("finding") or str(verdict.get("claim_id", "?")).split(".", 1)[0])


def census(verdicts: Iterable[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """{finding: counts} over every claim, calibration and lab check: `judged` (of which
    `reproduced`, `not_reproduced`, `inconclusive`), not applicable for the `machine` (cores,
    hosts, a NIC) or a `setting` (a parameter, a calibration, a busy machine), `unclassified`
    (a verdict from before causes were recorded), `other` (incomplete, error)."""
    out: dict[str, dict[str, int]] = {}
    for v in verdicts:
        finding = finding_of(v)
        counts = out.setdefault(finding, dict.fromkeys(CENSUS_KEYS, 0))
        status = str(v.get("status"))
        if status in JUDGED:
            counts["judged"] += 1
            counts[status] += 1
        elif status == "not_applicable":
            cause = v.get("cause")
            counts[cause if cause in (MACHINE, SETTING) else "unclassified"] += 1
        else:
            counts["other"] += 1
    return dict(sorted(out.items()))


def latest_evidence(runs: Iterable[tuple[str, bool, str, list[dict[str, Any]]]]
                    ) -> list[tuple[dict[str, Any], str]]:
    """Each claim's latest evidence, from runs given oldest first as (experiment, full scale,
    run label, verdicts): the verdict of the run `results.newest_full_first` chooses for its
    experiment, or, where that run (at full scale) said "not applicable" because it holds no
    data the claim is about (`unmet` "absent": a profile, server or cell it did not run; never
    a precondition it measured unmet, such as a failed calibration or a busy machine), of the
    newest full-scale run of the experiment that judged the claim by the same rule (its tolerance,
    precondition and fails-when texts unchanged: a verdict of an older rule never speaks for
    the current one) - a run of three profiles does not undo what an earlier run of three
    others judged; each with the label of the run it comes from. Errors and incomplete
    verdicts stay as they are."""
    runs = list(runs)
    chosen = results.newest_full_first((e, full, label) for e, full, label, _ in runs)
    judged: dict[tuple[str, str, tuple[str, ...]], tuple[dict[str, Any], str]] = {}
    for experiment, full, label, verdicts in runs:  # oldest first: the newest stays
        for v in verdicts:
            if full and v.get("status") in JUDGED:
                judged[_rule_key(experiment, v)] = (v, label)
    out = []
    for experiment, full, label, verdicts in runs:
        if chosen.get(experiment) != label:
            continue
        for v in verdicts:
            older = judged.get(_rule_key(experiment, v)) if (
                full and v.get("status") == "not_applicable" and v.get("unmet") == "absent"
            ) else None
            out.append(older or (v, label))
    return out


def _rule_key(experiment: str, verdict: dict[str, Any]) -> tuple[str, str, tuple[str, ...]]:
    """A claim and the rule it was judged by, as its verdict states it."""
    return experiment, str(verdict.get("claim_id")), tuple(
        str(verdict.get(k) or "") for k in ("tolerance", "precondition", "fails_when"))


# a check of the lab holds or fails, it reproduces nothing: the census says both at once
CENSUS_WORDS = {"reproduced": "reproduced or holding", "not_reproduced": "not reproduced or "
                "failing", "inconclusive": "inconclusive"}


def census_text(counts: dict[str, int]) -> str:
    """"5 judged (3 reproduced or holding, 1 not reproduced or failing, 1 inconclusive); not
    applicable: 1 machine, 2 setting" (zero counts left out)."""
    parts = [f"{counts[k]} {CENSUS_WORDS[k]}" for k in JUDGED if counts.get(k)]
    text = f"{counts.get('judged', 0)} judged" + (f" ({', '.join(parts)})" if parts else "")
    missing = [f"{counts[k]} {k}" for k in (MACHINE, SETTING, "unclassified")
               if counts.get(k)]
    if missing:
        text += "; not applicable: " + ", ".join(missing)
    if counts.get("other"):
        text += f"; {counts['other']} incomplete or in error"
    return text
