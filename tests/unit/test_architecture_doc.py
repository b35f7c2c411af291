"""docs/architecture.md held against the code, so it cannot drift: the server kinds and
roles it lists are those of the manifests (dnslab/servers/<kind>.yaml), its kinds table gives
each kind its manifest's roles and image folder, and its findings table lists the finding
packages."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

from dnslab import topology
from dnslab.servers import manifest

REPO = Path(__file__).resolve().parents[2]
DOC = (REPO / "docs" / "architecture.md").read_text()


def label_values(label: str) -> set[str]:
    """The values the doc gives a label: "`dnslab.role` (primary | secondary | ...)"."""
    found = re.search(rf"`{re.escape(label)}` \(([^)]*)\)", DOC)
    assert found, f"docs/architecture.md lists no values of {label}"
    return {value.strip() for value in found.group(1).split("|")}


def table(header: str) -> list[list[str]]:
    """The rows of the markdown table whose header row starts with `header`."""
    lines = DOC.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(header)), None)
    assert start is not None, f"docs/architecture.md has no table {header!r}"
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip().strip("`") for cell in line.strip("|").split("|")])
    return rows


def test_the_server_kinds_and_roles_it_lists_are_the_manifests():
    assert label_values("dnslab.server") == set(manifest.server_kinds())
    roles = set().union(*(m.roles for m in manifest.manifests().values()))
    assert label_values("dnslab.role") == roles == topology.ROLES


def test_its_kinds_table_gives_each_kind_its_manifests_roles_and_image():
    rows = {kind: (roles, image) for kind, roles, image in table("| kind | roles |")}
    assert set(rows) == set(manifest.manifests())
    for kind, found in manifest.manifests().items():
        roles, image = rows[kind]
        assert image == found.image.dir, kind
        assert {r.strip() for r in roles.split(",")} == set(found.roles), kind


def finding_packages() -> dict[str, tuple[str, str | None]]:
    """Finding id -> (its folder under experiments/, its title or None where unknown).

    Hook: `dnslab.findings.all_findings()` is the authority where that module exists; without
    it, the folders experiments/f<N>_<topic>/ are, each named by its number."""
    try:
        findings = importlib.import_module("dnslab.findings")
    except ModuleNotFoundError:
        folders = sorted(p for p in (REPO / "experiments").glob("f[0-9]*_*") if p.is_dir())
        return {"F" + re.match(r"f(\d+)_", p.name).group(1): (p.name, None) for p in folders}
    return {f.id: (f.path.name, f.title) for f in findings.all_findings()}


def test_its_findings_table_lists_the_finding_packages():
    rows = {fid: (package, title) for fid, package, title in table("| id | package |")}
    packages = finding_packages()
    assert set(rows) == set(packages) and len(packages) >= 5
    for fid, (folder, title) in packages.items():
        package, doc_title = rows[fid]
        assert package == f"experiments/{folder}/", fid
        assert title is None or doc_title == title, fid
