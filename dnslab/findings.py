"""The findings the lab reproduces, each one package: found by folder, never by a table.

A finding is a folder under `experiments/` (or under another root in `ROOTS`, e.g. a test's
fixture package) that holds a `finding.yaml`:

    id: F3
    title: Zone transfer performance
    seed: "002"
    source: 'Petr Špaček (ISC), "Měření výkonu přenosu DNS zón", slides, 2025-01-21'

and beside it everything about that finding: its experiment files (`<experiment>.yaml`, each
naming the `claims:` and `plots:` that judge and show its runs), its procedure modules, and
for the analysis `claims.py`, `plots.py`, `derived.py` (an optional `derive(run)` hook),
`altered.py` (each claim's effect removed from real data), a `fixtures.py` of synthetic runs
and a `NOTES.md` (published figures, mechanism, what the lab
changes to measure it, results). The engine reads experiment files from here; the analysis
imports a finding's modules by the package name this module gives. Nothing here imports the
analysis, and nothing names a finding: adding one is adding a folder.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from dnslab import paths
from dnslab.errors import LabError

MANIFEST = "finding.yaml"
# (folder, the package name that folder has on sys.path): where finding packages are found
ROOTS: list[tuple[Path, str]] = [(paths.EXPERIMENTS, "experiments")]
# procedures (and the plots they draw) that an experiment file of a user's own names: no
# finding, no claims, e.g. `procedure: compare.servers_by_transport` (README "Your own question")
OWN_PROCEDURES = (paths.EXPERIMENTS / "procedures", "experiments.procedures")


@dataclass(frozen=True)
class Finding:
    """One finding package: what was published, where, and the experiments that test it."""

    id: str
    title: str
    seed: str
    source: str
    path: Path
    package: str
    experiments: tuple[str, ...]
    extra: dict[str, Any]

    def module(self, name: str) -> ModuleType | None:
        """The package's module `name` (claims, plots, derived, ...); None when it has none."""
        if not (self.path / f"{name}.py").is_file():
            return None
        return importlib.import_module(f"{self.package}.{name}")

    def experiment_file(self, experiment: str) -> Path:
        return self.path / f"{experiment}.yaml"

    @property
    def notes(self) -> Path:
        return self.path / "NOTES.md"


def _read(folder: Path, package: str) -> Finding:
    manifest = folder / MANIFEST
    try:
        raw = yaml.safe_load(manifest.read_text()) or {}
    except yaml.YAMLError as exc:
        raise LabError(f"{manifest}: does not parse: {str(exc).splitlines()[0]}",
                       hint="fix the YAML of the finding's manifest") from None
    missing = [k for k in ("id", "title", "seed", "source") if k not in raw]
    if missing:
        raise LabError(f"{manifest}: missing {', '.join(missing)}",
                       hint="a finding.yaml gives id, title, seed and source")
    experiments = tuple(sorted(p.stem for p in folder.glob("*.yaml") if p.name != MANIFEST))
    known = {"id", "title", "seed", "source"}
    return Finding(id=str(raw["id"]), title=str(raw["title"]), seed=str(raw["seed"]),
                   source=str(raw["source"]), path=folder, package=f"{package}.{folder.name}",
                   experiments=experiments,
                   extra={k: v for k, v in raw.items() if k not in known})


@cache
def _all(roots: tuple[tuple[Path, str], ...]) -> tuple[Finding, ...]:
    found: dict[str, Finding] = {}
    for root, package in roots:
        for manifest in sorted(root.glob(f"*/{MANIFEST}")):
            finding = _read(manifest.parent, package)
            if finding.id in found:
                raise LabError(f"finding {finding.id} is defined twice: "
                               f"{found[finding.id].path} and {finding.path}",
                               hint="each finding has one folder")
            found[finding.id] = finding
    return tuple(sorted(found.values(), key=lambda f: f.id))


def all_findings() -> list[Finding]:
    """Every finding package, by id."""
    return list(_all(tuple(ROOTS)))


def finding(finding_id: str) -> Finding:
    for candidate in all_findings():
        if candidate.id == finding_id:
            return candidate
    raise LabError(f"unknown finding {finding_id!r}",
                   hint="known: " + ", ".join(f.id for f in all_findings()))


def known_experiments() -> list[str]:
    return sorted(e for f in all_findings() for e in f.experiments)


def base_experiment(name: str) -> str | None:
    """The experiment file a run's experiment name stands for: the name itself, or with a
    `-<variant>` suffix (`xfr-30k-zones-ci`), never another experiment's own name."""
    known = set(known_experiments())
    if name in known:
        return name
    parts = name.split("-")
    for cut in range(len(parts) - 1, 0, -1):
        stem = "-".join(parts[:cut])
        if stem in known:
            return stem
    return None


def finding_of(experiment: str) -> Finding | None:
    """The finding whose package holds `experiment` (a variant name included)."""
    base = base_experiment(experiment)
    for candidate in all_findings():
        if base in candidate.experiments:
            return candidate
    return None


def is_own_file(name: str) -> bool:
    """EXP= names a file of the user's own (a path), not an experiment of a finding."""
    return name.endswith((".yaml", ".yml")) or "/" in name


def experiment_file(name: str) -> Path:
    """`experiments/<finding>/<name>.yaml`; a LabError naming the known ones otherwise."""
    found = finding_of(name)
    if found is None or base_experiment(name) != name:
        raise LabError(f"unknown experiment {name!r}",
                       hint="known experiments: " + ", ".join(known_experiments()))
    return found.experiment_file(name)


def refresh() -> None:
    """Forget what was found (after ROOTS changed, e.g. in a test)."""
    _all.cache_clear()
