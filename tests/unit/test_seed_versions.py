"""Each finding states the versions its seed measured (finding.yaml `seed_versions`: server
and version as published, where the seed says so) and the lab's nearest packaged version of
each: the first version the kind's manifest offers at or above the seed's, else its newest.
Where the version changes the finding's mechanism (`mechanism: true`), the experiment runs
that version by default."""

from __future__ import annotations

import pytest

from dnslab import findings
from dnslab.experiment_spec import load_spec
from dnslab.servers.manifest import kind_version, manifest

FINDINGS = findings.all_findings()


def as_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".")[:2])


def nearest(kind: str, version: str) -> str:
    offered = list(manifest(kind).versions)
    if not version:
        return manifest(kind).default_version
    later = [v for v in offered if as_tuple(v) >= as_tuple(version)]
    return min(later, key=as_tuple) if later else max(offered, key=as_tuple)


@pytest.mark.parametrize("finding", FINDINGS, ids=[f.id for f in FINDINGS])
def test_each_finding_states_its_seeds_versions_and_the_nearest_the_lab_offers(finding):
    rows = finding.extra.get("seed_versions")
    assert rows, f"{finding.path}/finding.yaml: no seed_versions"
    for row in rows:
        assert {"server", "version", "kind", "nearest", "mechanism", "where", "why"} <= set(row)
        offered = kind_version(f"{row['kind']}@{row['nearest']}")
        assert row["nearest"] == nearest(row["kind"], str(row["version"])), row
        assert offered.image.note, row


def defaults_naming(finding: findings.Finding) -> dict[str, list[str]]:
    """experiment -> the server versions its default parameters name (canonical)."""
    from dnslab.servers.manifest import ManifestError, image_key

    found = {}
    for experiment in finding.experiments:
        params = load_spec(experiment).params
        names = []
        for value in params.values():
            for item in value if isinstance(value, list) else [value]:
                try:
                    names.append(image_key(str(item)))
                except ManifestError:
                    continue
        found[experiment] = names
    return found


@pytest.mark.parametrize("finding", [f for f in FINDINGS if any(
    r.get("mechanism") for r in f.extra.get("seed_versions", []))], ids=lambda f: f.id)
def test_where_the_version_is_the_mechanism_the_experiment_runs_it_by_default(finding):
    wanted = [f"{r['kind']}@{r['nearest']}" for r in finding.extra["seed_versions"]
              if r["mechanism"]]
    by_experiment = defaults_naming(finding)
    for key in wanted:
        running = [e for e, names in by_experiment.items() if key in names]
        assert running, f"{finding.id}: no experiment runs {key} by default ({by_experiment})"
