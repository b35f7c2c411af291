"""A threshold is defined once: no module-level number of the same name and value in two
modules of the lab's code (`GENERATOR_BOUND_SHARE = 0.9` was written three times, so a
change to one left the others judging by the old value). Thresholds several parts share
live in `dnslab/thresholds.py`; a finding's own in one module of its package."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# the engine, the procedures, the analysis and the benchmarks (the zone generators' VERSION
# numbers are each generator's own, not thresholds)
ROOTS = ("dnslab", "analysis", "experiments", "bench")


def numeric_constants(path: Path) -> dict[str, float]:
    """UPPER_CASE names a module binds at its top level to a number literal."""
    found: dict[str, float] = {}
    for node in ast.parse(path.read_text(), str(path)).body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        try:
            number = ast.literal_eval(value)
        except ValueError:
            continue
        if isinstance(number, bool) or not isinstance(number, int | float):
            continue
        for target in targets:
            if isinstance(target, ast.Name) and target.id.isupper():
                found[target.id] = float(number)
    return found


def duplicated(files: list[Path], base: Path = REPO) -> dict[tuple[str, float], list[str]]:
    where: dict[tuple[str, float], list[str]] = defaultdict(list)
    for path in files:
        for name, value in numeric_constants(path).items():
            where[(name, value)].append(str(path.relative_to(base)))
    return {key: paths for key, paths in where.items() if len(paths) > 1}


def test_no_threshold_is_defined_twice() -> None:
    files = sorted(p for root in ROOTS for p in (REPO / root).rglob("*.py"))
    assert len(files) > 50, "the code was read"
    found = duplicated(files)
    assert not found, "defined more than once (import it from one place): " + "; ".join(
        f"{name} = {value:g} in {', '.join(paths)}" for (name, value), paths in found.items())


def test_the_check_finds_a_copy(tmp_path: Path) -> None:
    first, second = tmp_path / "a.py", tmp_path / "b.py"
    first.write_text("GENERATOR_BOUND_SHARE = 0.9\nSEED_CORES = 8\n")
    second.write_text("GENERATOR_BOUND_SHARE: float = 0.90\nSEED_CORES = 4\nX = True\n")
    assert list(duplicated([first, second], tmp_path)) == [("GENERATOR_BOUND_SHARE", 0.9)]
