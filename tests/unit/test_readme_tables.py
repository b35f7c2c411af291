"""README.md's findings and experiments tables held against the finding packages, so a new
finding that forgets its rows (README's "Extending" names them) fails here instead of
leaving the README untrue."""

from __future__ import annotations

import re
from pathlib import Path

from dnslab import findings

README = Path(__file__).resolve().parents[2] / "README.md"


def rows(pattern: str) -> list[tuple[str, ...]]:
    return re.findall(pattern, README.read_text(), re.M)


def test_the_findings_table_lists_every_finding_with_its_notes() -> None:
    found = {fid: folder for fid, folder in
             rows(r"^\| (F\d+) .*\| \[`experiments/([\w-]+)`\]\(experiments/\2/NOTES\.md\) \|$")}
    assert found == {f.id: f.path.name for f in findings.all_findings()}


def test_the_experiments_table_lists_every_experiment_with_its_finding() -> None:
    found = dict(rows(r"^\| `([\w-]+)` \| (F\d+) \|"))
    expected = {name: finding.id for finding in findings.all_findings()
                for name in finding.experiments}
    assert found == expected
