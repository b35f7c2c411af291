"""The resolver procedure finds its nodes by role and `dnslab.tier` label, not by name."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from dnslab import topology
from dnslab.errors import LabError
from experiments.procedures.resolver import TIERS, ResolverNodes

RESOLVER_LAB = Path(__file__).resolve().parents[2] / "topologies" / "resolver.clab.yml"


def _raw() -> dict:
    return yaml.safe_load(RESOLVER_LAB.read_text())


def test_the_resolver_lab_has_every_tier():
    nodes = ResolverNodes.of(topology.load("resolver"))
    assert set(nodes.tiers) == set(TIERS)
    assert nodes.resolver == "resolver" and nodes.client == "client"
    assert len(set(nodes.auth)) == len(TIERS)


def test_tiers_follow_the_labels_not_the_node_names(tmp_path):
    raw = _raw()
    spec = raw["topology"]["nodes"]
    spec["tld"]["labels"]["dnslab.tier"], spec["sld"]["labels"]["dnslab.tier"] = "sld", "tld"
    nodes = ResolverNodes.of(topology.from_dict(raw, tmp_path / "resolver.clab.yml"))
    assert nodes.tiers["tld"] == "sld" and nodes.tiers["sld"] == "tld"


def test_a_missing_tier_is_one_line_with_a_hint(tmp_path):
    raw = _raw()
    del raw["topology"]["nodes"]["sld-dead"]["labels"]["dnslab.tier"]
    with pytest.raises(LabError) as err:
        ResolverNodes.of(topology.from_dict(raw, tmp_path / "resolver.clab.yml"))
    assert "dnslab.tier=sld-dead" in err.value.one_line() and err.value.hint
