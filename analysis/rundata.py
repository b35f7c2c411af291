"""Read one run folder (`results/<exp>/<run-id>/`) into typed objects for claims, plots and reports.

Everything the analysis knows about a run comes through here, and this module reads the
folder only through the results contract (`dnslab.results`: the schema the runner writes),
so a missing or malformed file, or a run written under an unknown schema version, turns into
one `LabError` naming the file, never a traceback from deep inside pandas.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from functools import cached_property
from pathlib import Path
from typing import Any

import pandas as pd

from dnslab import results
from dnslab.errors import LabError

# what an unmet precondition needs: a machine the lab cannot change (cores, hosts, a NIC) or
# a setting a rerun can change (a parameter, a calibration, a quieter machine, a cell to run)
MACHINE = "machine"
SETTING = "setting"
CAUSES = (MACHINE, SETTING)


class NotApplicable(Exception):
    """The run holds no data this claim or plot is about (a cell or repetition is not in it),
    or a precondition is unmet. `cause` says what would judge it, MACHINE or SETTING: every
    raise states it (no default; `tests/unit/test_not_applicable_causes.py` reads every raise
    site). `measured`: a precondition the run measured and found unmet (`claim.require`), not
    data the run does not hold (what it did not select or record): only the latter lets an
    older run that held the data speak for the claim (`index.latest_evidence`)."""

    def __init__(self, reason: str, *, cause: str, measured: bool = False):
        if cause not in CAUSES:
            raise ValueError(f"cause must be one of {', '.join(CAUSES)}, not {cause!r}")
        super().__init__(reason)
        self.cause = cause
        self.measured = measured


def combined_cause(unmet: list[NotApplicable]) -> str:
    """The cause of several unmet preconditions together: the machine only when each of them
    is the machine's (a setting that would judge any part is worth a rerun)."""
    return MACHINE if unmet and all(e.cause == MACHINE for e in unmet) else SETTING


def read_json(path: Path, what: str) -> dict[str, Any]:
    return results._load(path, what)


def _matches(value: Any, wanted: Any) -> bool:
    if isinstance(wanted, str) and any(c in wanted for c in "*?["):
        return fnmatchcase(str(value), wanted)
    if isinstance(wanted, (list, tuple, set)):
        return any(_matches(value, w) for w in wanted)
    return value == wanted or str(value) == str(wanted)


@dataclass
class Cell:
    """One matrix cell of a run: its parameters, measured figures and data files."""

    run: Run = field(repr=False)
    id: str
    dir: Path
    params: dict[str, Any]
    figures: dict[str, Any]
    status: str = "complete"

    def rel(self, name: str) -> str:
        """Path of a file of this cell relative to the run folder (for messages and links)."""
        return f"cells/{self.id}/{name}"

    def has(self, name: str) -> bool:
        return (self.dir / name).is_file()

    def figure(self, name: str, *, optional: bool = False) -> Any:
        """A measured figure from cell.json; a missing key is a data error unless optional."""
        if name not in self.figures:
            if optional:
                return None
            if not self.has("cell.json"):
                raise LabError(f"missing data file {self.run.label}/{self.rel('cell.json')}",
                               hint="the run was interrupted before this cell finished")
            raise LabError(f"{self.rel('cell.json')} has no figure {name!r}",
                           hint="the experiment procedure must record it under 'figures'")
        return self.figures[name]

    def csv(self, name: str, columns: tuple[str, ...] = ()) -> pd.DataFrame:
        """A CSV data file of this cell; missing file or columns raise a one-line LabError."""
        cache = self.run._csv_cache
        key = (self.id, name)
        if key not in cache:
            path = self.dir / name
            if not path.is_file():
                raise LabError(f"missing data file {self.run.label}/{self.rel(name)}",
                               hint="the run was interrupted or the procedure did not write it")
            try:
                cache[key] = pd.read_csv(path)
            except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
                raise LabError(f"cannot read {self.run.label}/{self.rel(name)}: "
                               f"{str(exc).splitlines()[0]}") from None
        frame = cache[key]
        missing = [c for c in columns if c not in frame.columns]
        if missing:
            raise LabError(f"{self.run.label}/{self.rel(name)} lacks column(s) "
                           f"{', '.join(missing)}")
        return frame

    def monitor_nodes(self) -> list[str]:
        return sorted(p.stem for p in (self.dir / "monitor").glob("*.csv"))

    def monitor(self, node: str, columns: tuple[str, ...] = ("t",)) -> pd.DataFrame:
        return self.csv(f"monitor/{node}.csv", columns)

    def data_files(self) -> list[str]:
        """Every file of the cell, relative to the run folder, for the report's raw-data links."""
        return sorted(self.rel(str(p.relative_to(self.dir))) for p in self.dir.rglob("*")
                      if p.is_file())

    def sysctl(self, node: str, key: str) -> str | None:
        """A sysctl value read back on a node for this cell."""
        return self.run.sysctls_for(self.id).get(node, {}).get(key)

    @property
    def label(self) -> str:
        """Short label: only the parameters that differ between the run's cells."""
        varying = self.run.varying_params
        parts = [f"{k}={self.params[k]}" for k in varying if k in self.params]
        if len(varying) == 1 and parts:
            return str(self.params[varying[0]])
        return ", ".join(parts) or self.id


@dataclass
class Run:
    """A run folder with its meta.json and cells."""

    dir: Path
    meta: dict[str, Any]
    cells: list[Cell] = field(default_factory=list)
    _csv_cache: dict[tuple[str, str], pd.DataFrame] = field(default_factory=dict, repr=False)

    @property
    def experiment(self) -> str:
        return str(self.meta.get("experiment") or self.dir.parent.name)

    @property
    def run_id(self) -> str:
        return str(self.meta.get("run_id") or self.dir.name)

    @property
    def label(self) -> str:
        return f"{self.experiment}/{self.run_id}"

    @property
    def complete(self) -> bool:
        return bool(self.meta.get("complete", False))

    @property
    def params(self) -> dict[str, Any]:
        return dict(self.meta.get("params") or {})

    @cached_property
    def varying_params(self) -> list[str]:
        keys: list[str] = []
        for cell in self.cells:
            for key in cell.params:
                if key not in keys:
                    keys.append(key)
        return [k for k in keys
                if len({json.dumps(c.params.get(k), sort_keys=True) for c in self.cells}) > 1]

    def sysctls_for(self, cell_id: str) -> dict[str, dict[str, str]]:
        """{node: {key: value read back}} for one cell."""
        return results.cell_sysctls(self.meta, cell_id)

    def sysctls_requested_for(self, cell_id: str) -> dict[str, dict[str, str]]:
        """{node: {key: value the lab asked for}} for one cell (empty in schema 1 runs)."""
        return results.cell_sysctls(self.meta, cell_id, "sysctls_requested")

    def cells_where(self, **wanted: Any) -> list[Cell]:
        """Cells whose params match every given value (strings may be fnmatch patterns)."""
        return [c for c in self.cells
                if all(k in c.params and _matches(c.params[k], v) for k, v in wanted.items())]

    def cell(self, **wanted: Any) -> Cell:
        """Exactly one cell matching; none means the claim does not apply to this run."""
        found = self.cells_where(**wanted)
        desc = ", ".join(f"{k}={v}" for k, v in wanted.items())
        if not found:
            raise NotApplicable(f"no cell with {desc} in this run", cause=SETTING)
        if len(found) > 1:
            raise LabError(f"{len(found)} cells match {desc} in {self.label}",
                           hint="the claim expects one such cell per run")
        return found[0]

    def node_with_role(self, role: str, cell: Cell | None = None) -> str:
        """Name of the node with a role: the cell's `<role>_node` param (the node under test
        the procedure names), then meta.json topology, then monitor file names."""
        for candidate in ([cell] if cell else self.cells):
            given = candidate.params.get(f"{role}_node")
            if given:
                return str(given)
        for name, spec in self._topology_nodes():
            if spec.get("role") == role:
                return str(name)
        candidates = cell.monitor_nodes() if cell else sorted(
            {n for c in self.cells for n in c.monitor_nodes()})
        matching = [n for n in candidates if role in n]
        if len(matching) == 1:
            return matching[0]
        if len(candidates) == 1:
            return candidates[0]
        raise LabError(f"cannot tell which node is the {role} in {self.label}",
                       hint="meta.json topology.nodes should give each node's role")

    def in_role(self, node: str, *, role: str) -> bool | None:
        """Whether a node has `role` as meta.json's topology gives it (None: the run does not
        say the node's role)."""
        for name, spec in self._topology_nodes():
            if name == node and spec.get("role"):
                return spec["role"] == role
        return None

    def _topology_nodes(self) -> list[tuple[Any, dict[str, Any]]]:
        """(name, spec) of each node meta.json's topology lists (a mapping or, in older runs,
        a list of specs with their names)."""
        topo = self.meta.get("topology")
        nodes: Any = topo.get("nodes") if isinstance(topo, dict) else None
        if isinstance(nodes, dict):
            return [(name, spec) for name, spec in nodes.items() if isinstance(spec, dict)]
        if isinstance(nodes, list):
            return [(spec.get("name"), spec) for spec in nodes if isinstance(spec, dict)]
        return []

    def data_files(self) -> list[str]:
        return sorted(str(p.relative_to(self.dir)) for p in self.dir.iterdir()
                      if p.is_file() and p.name != "summary.json")


def load_run(path: Path) -> Run:
    """Load a run folder through the results contract; raises LabError when it is not one."""
    path = Path(path)
    if not path.is_dir():
        raise LabError(f"no run folder at {path}",
                       hint="give results/<experiment>/<run-id> (see `python -m analysis runs`)")
    meta = results.read_meta(path)
    run = Run(dir=path.resolve(), meta=meta)
    for cell_id, entry in (meta.get("cells") or {}).items():
        entry = entry if isinstance(entry, dict) else {}
        cell_dir = path / str(entry.get("path") or f"{results.CELLS}/"
                                                   f"{results.cell_dirname(cell_id)}")
        raw = results.read_cell(cell_dir) or {}
        params = entry.get("params") if isinstance(entry.get("params"), dict) else {}
        figures = raw.get("figures") if isinstance(raw.get("figures"), dict) else {}
        status = str(raw.get("status") or entry.get("status") or "interrupted")
        run.cells.append(Cell(run=run, id=cell_id, dir=cell_dir.resolve(), params=params,
                              figures=figures, status=status))
    return run
