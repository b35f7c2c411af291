"""Procedures and analysis never name a daemon: what the lab knows about a server kind is its
driver in `dnslab/servers/` (issue 16).

Scanned: every identifier and string literal of the Python code in `experiments/` and
`analysis/`, but a finding's `fixtures.py`, `cases.py` (synthetic runs: test data) and its own
`test_*.py` (tests, as tests/ is). Not scanned:
comments, docstrings and prose (a string with a space in it: claim titles, messages; F2's
published finding is about dnsdist and says so). Allowed as data: the names of experiment
files and topologies (`dnsdist-listeners`, the `dnsdist` lab), which are file stems, not
daemons.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

from dnslab import findings
from dnslab.servers import manifest

ROOT = Path(__file__).resolve().parents[2]
# a finding's synthetic runs and its claims' cases built from them: test data as tests/ is
FIXTURES = ("fixtures.py", "cases.py")
# every server kind with a daemon and its binary (from the manifests), and the control tools
# the drivers run
CONTROL_TOOLS = {"rndc", "knotc", "nsd-control", "unbound-control", "pdns_control"}
DAEMONS = {m.kind: m.binary for m in manifest.manifests().values() if m.binary}
SERVER_WORDS = re.compile(r"\b(" + "|".join(sorted(
    {*DAEMONS, *DAEMONS.values(), *CONTROL_TOOLS}, key=lambda word: (-len(word), word)))
    + r")\b")
DATA_NAMES = (
    set(findings.known_experiments())
    | {p.name.removesuffix(".clab.yml") for p in (ROOT / "topologies").glob("*.clab.yml")})


def docstring_lines(tree: ast.AST) -> set[int]:
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                lines.add(first.lineno)
    return lines


def server_names_in(path: Path) -> list[str]:
    """`path:line: token` for each identifier or literal that names a server or its tool."""
    source = path.read_text()
    docs = docstring_lines(ast.parse(source))
    found = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.STRING:
            if tok.start[0] in docs:
                continue
            text = ast.literal_eval(tok.string) if not tok.string.lstrip("rbuRBU").startswith(
                ("f", "F")) else tok.string
            if isinstance(text, str) and (" " in text.strip() or text in DATA_NAMES):
                continue
        elif tok.type != tokenize.NAME:
            continue
        if SERVER_WORDS.search(tok.string):
            where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
            found.append(f"{where}:{tok.start[0]}: {tok.string}")
    return found


def test_scanner_finds_a_daemon_in_code(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text('"""A docstring may say named."""\n'
                      'node = nodes["bind"]\n'
                      'cmd = ["rndc", "reload"]\n'
                      'title = "dnsdist answers"\n'
                      'exp = "dnsdist-listeners"\n')
    found = server_names_in(sample)
    assert [f.split(": ")[1] for f in found] == ['"bind"', '"rndc"']


def test_procedures_and_analysis_name_no_daemon() -> None:
    files = [p for p in sorted((ROOT / "experiments").rglob("*.py"))
             + sorted((ROOT / "analysis").rglob("*.py"))
             if p.name not in FIXTURES and not p.name.startswith("test_")]
    assert len(files) > 20
    found = [hit for path in files for hit in server_names_in(path)]
    assert not found, "ask the server's driver instead:\n" + "\n".join(found)
