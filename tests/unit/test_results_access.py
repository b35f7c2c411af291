"""A run folder's meta.json and cell.json are read and written only through the results
contract (dnslab/results.py): no other Python file of the repository opens, reads, writes,
globs or builds a path to them by name.

The scan reads each file with `ast` and flags a string literal naming meta.json or cell.json
that is a part of a path (`run / "meta.json"`) or an argument of a file call (open,
read_text, write_text, json.load, glob, exists, ...). Messages and docstrings that mention
the files are not flagged."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCANNED = ("dnslab", "experiments", "analysis", "bench", "zones", "tests")
CONTRACT = REPO / "dnslab" / "results.py"
RUN_FILES = ("meta.json", "cell.json")
FILE_CALLS = {"open", "Path", "read_text", "write_text", "read_bytes", "write_bytes", "load",
              "loads", "dump", "glob", "rglob", "iglob", "exists", "is_file", "unlink",
              "stat", "copy", "copyfile", "replace", "rename"}


def _names_a_run_file(node: ast.AST) -> bool:
    return (isinstance(node, ast.Constant) and isinstance(node.value, str)
            and node.value.endswith(RUN_FILES))


def _call_name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def raw_accesses(path: Path) -> list[int]:
    """The lines of `path` where a run file is reached by its name rather than through the
    results contract."""
    tree = ast.parse(path.read_text(), str(path))
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            if _names_a_run_file(node.left) or _names_a_run_file(node.right):
                lines.add(node.lineno)
        elif isinstance(node, ast.Call) and _call_name(node) in FILE_CALLS:
            for arg in [*node.args, *(k.value for k in node.keywords)]:
                if any(_names_a_run_file(sub) for sub in ast.walk(arg)):
                    lines.add(node.lineno)
    return sorted(lines)


def test_only_the_results_contract_touches_meta_and_cell_json():
    this = Path(__file__).resolve()
    found = []
    scanned = 0
    for folder in SCANNED:
        for path in sorted((REPO / folder).rglob("*.py")):
            if path.resolve() in (CONTRACT, this):
                continue
            scanned += 1
            found += [f"{path.relative_to(REPO)}:{line}" for line in raw_accesses(path)]
    assert scanned > 100, "the scan read the repository"
    assert not found, ("meta.json / cell.json reached by name outside dnslab/results.py "
                       "(use read_meta, read_cell, iter_cells, run_dirs, is_run or "
                       "RunWriter): " + ", ".join(found))


def test_the_scan_flags_paths_and_file_calls_but_not_messages(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        '"""Reads meta.json."""\n'
        'import json\n'
        'meta = json.loads((run / "meta.json").read_text())\n'
        'cells = sorted(run.glob("cells/*/cell.json"))\n'
        'raise ValueError("no meta.json there")\n'
        'open(f"{run}/cell.json")\n')
    assert raw_accesses(sample) == [3, 4, 6]
