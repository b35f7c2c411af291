"""The results contract: the one layout and schema of a run folder.

The experiment runner and its procedures write a run only through `RunWriter` (meta.json
fields with `record` / `merge` / `append` / `record_cell`, never by editing its dict); the
analysis and the benchmarks read one only through `run_dirs` / `is_run` / `read_meta` /
`peek_meta` / `read_cell` / `iter_cells` / `cell_sysctls`; the test fixtures are written by the same
`RunWriter`. So the two sides cannot drift apart: a field added here is a field both see, and
no other module opens a meta.json or cell.json (tests/unit/test_results_access.py).

    results/<experiment>/<run-id>/          run-id: UTC YYYYMMDDTHHMMSSZ-<4 hex>, never reused
      meta.json     schema_version, experiment, run_id, description, findings, params, scale,
                    runtime, kernel, machine, versions, git {commit, dirty}, command, started,
                    ended, complete, topology {name, file, nodes {name: {role, server,
                    address}}}, images, profiles, and cells {cell_id: {params, path, started,
                    ended, status, sysctls {node: {key: value read back}},
                    sysctls_requested {node: {key: value asked for}}, sysctls_refused,
                    placement {node: cpu-set or "any"}, affinity {node: CPUs read back
                    from its running daemon}}}, and, for load experiments, placement
                    {generator_cpus, server_cpus, shared, host_cpus}; optional: warnings
                    [what the procedure told the user while it ran, shown in the report];
                    generators {tool: {version (what the tool printed where it ran: the
                    host's package version in `versions` may be another), node, runs_from
                    (image <ref> | <suite> root file system (<source>) | host package)}};
                    across machines: hosts {inventory, facts, vxlan, data_path {kind: vxlan|
                    macvlan, description, mtu}}, placement's
                    generator_host/server_host and each cell's hosts {node: host}
      cells/<dir>/cell.json   schema_version, cell_id, params, figures, status
      cells/<dir>/...         the procedure's raw data: monitor/<node>.csv, monitor/cores.csv
                              (each core's busy % per second), CSV, tool output
      summary.json            written by the analysis (verdicts, derived figures)
      report/                 written by the analysis

A run that was interrupted can be continued in its own folder (`RunWriter.reopen`): its
finished cells stay as they are, `start_cell` of an unfinished one moves that cell's folder
aside to `<dir>.attempt-<n>` (listed in the cell's `attempts`; nothing is deleted), and
meta.json `resumed` lists each continuation (when, command line, runtime, git revision, kernel).

Version history: 1 = the runner's layout before this module (no `schema_version` field, no
`sysctls_requested`); 2 = this one (the CPU placement fields are optional: runs before
them have none). A reader refuses any other version with one line.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from dnslab.errors import LabError

SCHEMA_VERSION = 2
READABLE_VERSIONS = (1, 2)
META = "meta.json"
CELL = "cell.json"
SUMMARY = "summary.json"
CELLS = "cells"
MONITOR = "monitor"


def cell_dirname(cell_id: str) -> str:
    """The folder name of a cell: its id without path separators or spaces."""
    return cell_id.replace("/", "_").replace(" ", "")


def _dump(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, default=str) + "\n")
    tmp.replace(path)


def _load(path: Path, what: str) -> dict[str, Any]:
    if not path.is_file():
        raise LabError(f"missing data file {path}",
                       hint=f"{what} is written by the experiment runner")
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise LabError(f"{path} is not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, dict):
        raise LabError(f"{path} must hold a JSON object")
    return data


def check_version(data: dict[str, Any], path: Path) -> int:
    """The schema version of a meta.json or cell.json; refuses one this code cannot read."""
    version = data.get("schema_version", 1)
    if version not in READABLE_VERSIONS:
        raise LabError(f"{path} has results schema_version {version!r}; this dnslab reads "
                       f"{', '.join(map(str, READABLE_VERSIONS))}",
                       hint="analyse it with the dnslab revision named in its meta.json "
                            "(git.commit), or update this checkout")
    return int(version)


def is_run(folder: Path) -> bool:
    """Whether `folder` is a run folder (it has a meta.json)."""
    return (Path(folder) / META).is_file()


def run_dirs(root: Path, experiment: str | None = None) -> list[Path]:
    """The run folders under a results root (`root/<experiment>/<run-id>/`), of one
    experiment or of all, sorted (run ids sort by time)."""
    pattern = f"{experiment or '*'}/*/{META}"
    return sorted(path.parent for path in Path(root).glob(pattern))


def is_full_scale(meta: Mapping[str, Any]) -> bool:
    """Whether a run's meta.json says it ran at full scale (or the seed's): a SCALE=ci run
    checks the lab and measures nothing a speaker shows."""
    return meta.get("scale") != "ci"


_Item = TypeVar("_Item")


def newest_full_first(runs: Iterable[tuple[str, bool, _Item]]) -> dict[str, _Item]:
    """Per experiment, from runs given oldest first as (experiment, full scale, item): the
    item of its newest full-scale run where it has one, else of its newest at any scale (a
    SCALE=ci run made after a full one never replaces it). The book and `make runs`' census
    both choose so."""
    newest: dict[str, tuple[bool, _Item]] = {}
    for experiment, full, item in runs:
        if full or experiment not in newest or not newest[experiment][0]:
            newest[experiment] = (full, item)
    return {experiment: item for experiment, (_, item) in newest.items()}


def read_meta(run_dir: Path) -> dict[str, Any]:
    meta = _load(run_dir / META, META)
    check_version(meta, run_dir / META)
    return meta


def peek_meta(run_dir: Path) -> dict[str, Any]:
    """A run's meta.json as it is, whatever its schema version; {} when it is missing or
    unreadable (for listings that show every run, as the run index does)."""
    try:
        return _load(Path(run_dir) / META, META)
    except LabError:
        return {}


def read_cell(cell_dir: Path) -> dict[str, Any] | None:
    """A cell's cell.json, or None when the cell never got that far (interrupted)."""
    path = cell_dir / CELL
    if not path.exists():
        return None
    data = _load(path, CELL)
    check_version(data, path)
    return data


def iter_cells(run_dir: Path) -> Iterator[dict[str, Any]]:
    """The cell.json of every cell folder of a run that has one, in folder order."""
    for cell_dir in sorted((Path(run_dir) / CELLS).iterdir()
                           if (Path(run_dir) / CELLS).is_dir() else ()):
        cell = read_cell(cell_dir)
        if cell is not None:
            yield cell


def cell_sysctls(meta: dict[str, Any], cell_id: str,
                 which: str = "sysctls") -> dict[str, dict[str, str]]:
    """{node: {key: value}} of one cell: `sysctls` (read back) or `sysctls_requested`."""
    value = ((meta.get("cells") or {}).get(cell_id) or {}).get(which)
    if not isinstance(value, dict):
        return {}
    return {str(node): {str(k): str(v) for k, v in keys.items()}
            for node, keys in value.items() if isinstance(keys, dict)}


@dataclass
class RunWriter:
    """Writes one run folder; the only code that creates meta.json and cell.json files.

    `meta` is what meta.json holds: read it freely, change it only through the methods
    below, each of which saves the file."""

    dir: Path
    meta: dict[str, Any]
    _cell_dirs: dict[str, Path] = field(default_factory=dict)

    @classmethod
    def create(cls, root: Path, experiment: str, run_id: str,
               meta: dict[str, Any]) -> RunWriter:
        """Make `root/<experiment>/<run_id>/` (which must not exist) and its meta.json."""
        path = Path(root) / experiment / run_id
        try:
            path.mkdir(parents=True, exist_ok=False)
        except FileExistsError:
            raise LabError(f"run folder {path} exists already",
                           hint="results are never overwritten: use a new run id") from None
        full = {"schema_version": SCHEMA_VERSION, "experiment": experiment, "run_id": run_id,
                "complete": False, "ended": None, **meta, "cells": {}}
        writer = cls(dir=path, meta=full)
        writer.save_meta()
        return writer

    @classmethod
    def reopen(cls, path: Path, resumed: dict[str, Any]) -> RunWriter:
        """An interrupted run's folder, to continue in place (see the module docstring)."""
        meta = read_meta(path)
        if meta.get("complete"):
            raise LabError(f"run {path} is complete", hint="nothing to resume")
        meta["schema_version"] = SCHEMA_VERSION
        meta.setdefault("resumed", []).append(resumed)
        meta.update({"complete": False, "ended": None})
        writer = cls(dir=Path(path), meta=meta)
        writer.save_meta()
        return writer

    def finished_cell(self, cell_id: str) -> dict[str, Any] | None:
        """The cell.json of a cell this run finished (a resumed run), else None."""
        entry = self.meta["cells"].get(cell_id)
        if not entry or entry.get("status") != "complete":
            return None
        return read_cell(self.dir / entry["path"])

    def save_meta(self) -> None:
        _dump(self.dir / META, self.meta)

    def record(self, key: str, value: Any) -> None:
        """Set one top-level meta.json field (e.g. `runtime`, `plan`)."""
        self.meta[key] = value
        self.save_meta()

    def merge(self, key: str, entries: dict[str, Any]) -> None:
        """Add `entries` to the mapping a top-level field holds (e.g. `images`, `profiles`,
        `port_range_choice`), creating it when missing."""
        self.meta.setdefault(key, {}).update(entries)
        self.save_meta()

    def append(self, key: str, item: Any) -> None:
        """Add `item` to the list a top-level field holds (e.g. `warnings`)."""
        self.meta.setdefault(key, []).append(item)
        self.save_meta()

    def record_cell(self, cell_id: str, key: str, value: Any) -> None:
        """Set one field of a cell's entry in meta.json `cells` (e.g. `wan`)."""
        self.meta["cells"][cell_id][key] = value
        self.save_meta()

    def start_cell(self, cell_id: str, params: dict[str, Any], started: str) -> Path:
        previous = self.meta["cells"].get(cell_id)
        if cell_id in self._cell_dirs or (previous and previous.get("status") == "complete"):
            raise LabError(f"cell {cell_id!r} appears twice in run {self.dir.name} "
                           "(a finished cell is never run again)",
                           hint="each cell of a run needs its own id; a resumed run's "
                                "procedure skips finished cells")
        name = cell_dirname(cell_id)
        cell_dir = self.dir / CELLS / name
        attempts = list((previous or {}).get("attempts", []))
        if cell_dir.exists():  # an unfinished attempt of a resumed run: set aside
            aside = cell_dir.with_name(f"{name}.attempt-{len(attempts) + 1}")
            cell_dir.rename(aside)
            attempts.append({"path": f"{CELLS}/{aside.name}",
                             "status": (previous or {}).get("status", "unfinished")})
        cell_dir.mkdir(parents=True, exist_ok=False)
        self._cell_dirs[cell_id] = cell_dir
        self.meta["cells"][cell_id] = {"params": params, "path": f"{CELLS}/{name}",
                                       "started": started,
                                       **({"attempts": attempts} if attempts else {})}
        self.save_meta()
        return cell_dir

    def record_sysctls(self, cell_id: str, read_back: dict[str, dict[str, str]],
                       requested: dict[str, dict[str, str]],
                       refused: dict[str, dict[str, str]] | None = None) -> None:
        """Per node of one cell: the sysctls asked for and what the kernel read back."""
        entry = self.meta["cells"][cell_id]
        entry["sysctls"] = {n: dict(sorted(v.items())) for n, v in read_back.items()}
        entry["sysctls_requested"] = {n: dict(sorted(v.items())) for n, v in requested.items()}
        if refused:
            entry["sysctls_refused"] = refused
        self.save_meta()

    def record_placement(self, cell_id: str, placed: dict[str, str],
                         affinity: dict[str, str] | None = None) -> None:
        """Per node of one cell: the cpu-set it was given ("any": none) and the CPU affinity
        read back from its running daemon (nodes with a daemon only)."""
        entry = self.meta["cells"][cell_id]
        entry["placement"] = dict(placed)
        entry["affinity"] = dict(affinity or {})
        self.save_meta()

    def record_run_placement(self, placement: dict[str, Any]) -> None:
        """Where a load experiment put its load generator and its server under test."""
        self.meta["placement"] = dict(placement)
        self.save_meta()

    def write_cell(self, cell_id: str, figures: dict[str, Any], status: str) -> None:
        entry = self.meta["cells"][cell_id]
        _dump(self._cell_dirs[cell_id] / CELL,
              {"schema_version": SCHEMA_VERSION, "cell_id": cell_id, "params": entry["params"],
               "figures": figures, "status": status})

    def end_cell(self, cell_id: str, ended: str, status: str) -> None:
        self.meta["cells"][cell_id].update({"ended": ended, "status": status})
        self.save_meta()

    def finish(self, ended: str, complete: bool) -> None:
        self.meta["ended"] = ended
        self.meta["complete"] = complete
        self.save_meta()
