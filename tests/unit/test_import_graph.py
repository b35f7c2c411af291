"""dnslab/ has no import cycle: every import of every module counts, also those inside
functions and under `if TYPE_CHECKING:` (a cycle there is still a circle in the design).

The graph is read from the source with `ast`, never by importing it. `import a.b` is an
edge to `a.b`; `from a.b import c` is an edge to `a.b` (whose `__init__` runs first) and to
the module `a.b.c` when there is one, so a module that imports a sibling through its own
package's `__init__`, which imports it back, is a cycle. Relative imports are resolved
against the importing module's package."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "dnslab"


def module_names(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every .py file of the package at `root`."""
    names = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        name = ".".join(parts).removesuffix(".__init__")
        names[name] = path
    return names


def imported_modules(name: str, path: Path, known: set[str]) -> set[str]:
    """The modules of `known` that the module `name` (file `path`) imports, anywhere in it."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            submodules = {f"{base}.{alias.name}" for alias in node.names} & known
            # `from package import module` runs the package first: an edge to both
            found.update(submodules | {base})
    return (found & known) - {name}


def import_graph(root: Path) -> dict[str, set[str]]:
    modules = module_names(root)
    return {name: imported_modules(name, path, set(modules)) for name, path in modules.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as a path that ends where it starts, or None."""
    state: dict[str, str] = {}  # "open" while on the current path, then "done"

    def visit(module: str, path: list[str]) -> list[str] | None:
        state[module] = "open"
        for target in sorted(graph[module]):
            if state.get(target) == "open":
                return [*path[path.index(target):], target]
            if target not in state:
                cycle = visit(target, [*path, target])
                if cycle:
                    return cycle
        state[module] = "done"
        return None

    for start in sorted(graph):
        if start not in state:
            cycle = visit(start, [start])
            if cycle:
                return cycle
    return None


def test_dnslab_has_no_import_cycle():
    graph = import_graph(PACKAGE)
    assert "dnslab.servers.base" in graph and graph["dnslab.lab"], "the graph was read"
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle in dnslab/: " + " -> ".join(cycle)


def test_a_cycle_through_type_checking_or_a_function_is_found(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg.sub import b\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..c import C\n")
    (pkg / "c.py").write_text("def f():\n    import pkg.a\n")
    graph = import_graph(pkg)
    assert graph["pkg.sub.b"] == {"pkg.c"} and graph["pkg.c"] == {"pkg.a"}
    assert find_cycle(graph) == ["pkg.a", "pkg.sub.b", "pkg.c", "pkg.a"]
    (pkg / "c.py").write_text("X = 1\n")
    assert find_cycle(import_graph(pkg)) is None
