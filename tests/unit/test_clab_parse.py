"""Topology files are valid containerlab topologies, checked by containerlab itself.

`containerlab graph --dot -t FILE` runs containerlab's strict topology parser (unknown
keys are errors) and link resolution. The binary is built from the Go module proxy by
scripts/build-containerlab.sh; it runs with DNSLAB_CLAB_STUB_ENGINE=1 so parsing needs
no Docker engine (see tools/containerlab/main.go). The tests also check that every
server node runs exactly the image reference that images/tags.sh (the tag rule) gives.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from dnslab.servers import manifest
from dnslab.topology import resolve_node

REPO = Path(__file__).resolve().parents[2]
CLAB = REPO / "build" / "bin" / "containerlab"
BUILD_SCRIPT = REPO / "scripts" / "build-containerlab.sh"
TAGS = REPO / "images" / "tags.sh"
TOPOLOGIES = sorted((REPO / "topologies").glob("*.clab.yml"))

SERVER_KINDS = tuple(manifest.server_kinds())
ROLES = ("primary", "secondary", "frontend", "resolver", "client")


@pytest.fixture(scope="session")
def clab() -> Path:
    """The containerlab binary, built (once per version) if it is missing."""
    if not (CLAB.is_file() and os.access(CLAB, os.X_OK)):
        if shutil.which("go") is None:
            pytest.fail(
                "build/bin/containerlab is missing and Go is not installed to build it: "
                "install Go (>= 1.24) and run scripts/build-containerlab.sh",
                pytrace=False,
            )
        subprocess.run([str(BUILD_SCRIPT)], check=True, timeout=1800)
    return CLAB


def image_refs() -> dict[str, str]:
    """kind@version -> image reference, from the tag rule in images/tags.sh."""
    out = subprocess.run([str(TAGS)], check=True, capture_output=True, text=True).stdout
    refs = {}
    for line in out.splitlines():
        key, _dir, _pkg, _ver, ref, _suite, _group, _default = line.split()
        refs[key] = ref
    return refs


def graph(clab: Path, topo: Path, labdir_base: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, DNSLAB_CLAB_STUB_ENGINE="1", CLAB_LABDIR_BASE=str(labdir_base))
    return subprocess.run(
        [str(clab), "graph", "--dot", "-t", str(topo)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def dot_of(labdir_base: Path, topo: Path) -> str:
    name = yaml.safe_load(topo.read_text())["name"]
    dots = list((labdir_base / f"clab-{name}" / "graph").glob("*.dot"))
    assert len(dots) == 1, f"expected one .dot file, found {dots}"
    return dots[0].read_text()


def write_sample_topology(folder: Path) -> Path:
    """A small lab shaped as docs/architecture.md describes (used until real ones exist)."""
    refs = image_refs()
    nodes: dict[str, Any] = {}
    links = []
    servers = [
        ("primary", "primary", "bind"),
        ("secondary", "secondary", "knot"),
        ("frontend", "frontend", "dnsdist"),
        ("resolver", "resolver", "unbound"),
        ("client", "client", "tools"),
    ]
    for n, (node, role, server) in enumerate(servers, start=1):
        node_dir = folder / "labs" / "sample" / "nodes" / node
        node_dir.mkdir(parents=True)
        nodes[node] = {
            "kind": "linux",
            "image": refs[manifest.image_key(server)],
            "labels": {"dnslab.role": role, "dnslab.server": server},
            "sysctls": {
                "net.ipv4.ip_local_port_range": "1024 65535",
                "net.core.somaxconn": 4096,
            },
            "binds": [f"{node_dir}:{node_dir}"],
            "env": {"DNSLAB_NODE_DIR": str(node_dir)},
            "cap-add": ["NET_ADMIN"],
            # containerlab's own CPU placement field, as dnslab renders it (dnslab/cpus.py)
            "cpu-set": "0",
        }
        links.append({"endpoints": [f"{node}:eth1", f"lan:p{n}"]})
    nodes["lan"] = {"kind": "bridge"}
    topo = {"name": "sample", "topology": {"nodes": nodes, "links": links}}
    path = folder / "sample.clab.yml"
    path.write_text(yaml.safe_dump(topo, sort_keys=False))
    return path


def ensure_bind_sources(topo: Path) -> None:
    """containerlab requires bind sources to exist; create missing ones under build/ only.

    Repository topologies may bind rendered node folders (build/labs/...), which exist
    only after rendering; build/ is scratch space, so an empty folder stands in for them.
    """
    data = yaml.safe_load(topo.read_text())
    for node in (data.get("topology", {}).get("nodes") or {}).values():
        for bind in (node or {}).get("binds") or []:
            host = bind.split(":")[0]
            path = (topo.parent / host).resolve()
            if not path.exists() and path.is_relative_to(REPO / "build"):
                path.mkdir(parents=True, exist_ok=True)


def check_topology(clab: Path, topo: Path, labdir_base: Path) -> None:
    data = yaml.safe_load(topo.read_text())
    res = graph(clab, topo, labdir_base)
    assert res.returncode == 0, f"containerlab rejected {topo.name}:\n{res.stderr}{res.stdout}"
    dot = dot_of(labdir_base, topo)
    nodes = data["topology"]["nodes"]
    for name in nodes:
        assert re.search(rf"^\s*{re.escape(name)} \[", dot, re.M), f"node {name} not in graph"
    edges = re.findall(r"^\s*(\S+)--(\S+)\[", dot, re.M)
    assert len(edges) == len(data["topology"].get("links") or [])

    # The lab's conventions (docs/architecture.md) on top of containerlab's own rules.
    assert data["name"] == topo.name.removesuffix(".clab.yml")
    bridges = [n for n in nodes if resolve_node(data["topology"], n)["kind"] == "bridge"]
    assert len(bridges) == 1, f"expected exactly one bridge node, got {bridges}"
    refs = image_refs()
    for name in nodes:
        # the node's fields as containerlab resolves them (defaults < kinds < groups < node)
        node = resolve_node(data["topology"], name)
        drawn = re.search(rf"^\s*{re.escape(name)} \[(.*)\];$", dot, re.M)
        assert drawn is not None
        # containerlab's own resolution of the node's kind and group agrees
        assert f"xlabel={node['kind']}" in drawn.group(1), drawn.group(1)
        if node.get("group"):
            assert f"group={node['group']}," in drawn.group(1), drawn.group(1)
        if node["kind"] != "linux":
            continue
        labels = node.get("labels") or {}
        assert labels.get("dnslab.role") in ROLES, f"{name}: bad dnslab.role"
        server = labels.get("dnslab.server")
        assert server in SERVER_KINDS, f"{name}: bad dnslab.server"
        version = labels.get("dnslab.version")
        key = manifest.image_key(f"{server}@{version}" if version else server)
        image = node.get("image")
        assert image == refs[key], f"{name}: image {image} but the build makes {refs[key]}"
        ends = [e for link in data["topology"]["links"] for e in link["endpoints"]]
        mine = [e for e in ends if e.split(":")[0] == name]
        assert mine == [f"{name}:eth1"], f"{name}: expected one link on eth1, got {mine}"


def test_sample_topology_parses(clab: Path, tmp_path: Path) -> None:
    """labels, sysctls (string and int values), binds, env, cap-add, cpu-set, kind: bridge."""
    topo = write_sample_topology(tmp_path)
    check_topology(clab, topo, tmp_path / "labdirs")


@pytest.mark.parametrize("topo", TOPOLOGIES, ids=[t.name for t in TOPOLOGIES])
def test_repository_topology_parses(clab: Path, topo: Path, tmp_path: Path) -> None:
    ensure_bind_sources(topo)
    check_topology(clab, topo, tmp_path)


@pytest.mark.parametrize(
    ("mutation", "message"),
    [
        (lambda t: t["topology"]["nodes"]["primary"].update(sysctlz={"a": "1"}), "sysctlz"),
        (lambda t: t.update(topologyx=1), "topologyx"),
        (
            lambda t: t["topology"]["links"][0].update(endpoints=["primary:eth1", "nowhere:p1"]),
            "nowhere",
        ),
    ],
    ids=["unknown-node-key", "unknown-top-level-key", "link-to-unknown-node"],
)
def test_broken_topology_is_rejected(
    clab: Path, tmp_path: Path, mutation: Any, message: str
) -> None:
    good = write_sample_topology(tmp_path)
    data = yaml.safe_load(good.read_text())
    mutation(data)
    bad = tmp_path / "broken.clab.yml"
    data["name"] = "broken"
    bad.write_text(yaml.safe_dump(data, sort_keys=False))
    res = graph(clab, bad, tmp_path / "labdirs")
    assert res.returncode != 0
    assert message in res.stderr + res.stdout


def test_missing_bind_source_is_rejected(clab: Path, tmp_path: Path) -> None:
    """containerlab checks bind sources at parse time: node folders must be rendered first."""
    topo = write_sample_topology(tmp_path)
    shutil.rmtree(tmp_path / "labs" / "sample" / "nodes" / "client")
    res = graph(clab, topo, tmp_path / "labdirs")
    assert res.returncode != 0
    assert "failed to verify bind path" in res.stderr + res.stdout


def test_tag_rule_matches_the_manifests_versions() -> None:
    """images/tags.sh derives each tag from the pinned Debian version in the kind's manifest
    (dnslab/servers/<kind>.yaml, image.version)."""
    refs = image_refs()
    assert list(refs) == manifest.image_keys() and "pdns" in SERVER_KINDS
    assert refs["bind@9.18"].startswith("dnslab/bind9:")
    for key in ["bind@9.18", "bind@9.16", "bind@9.20", "unbound@1.17", "tools@2.14"]:
        tag = refs[key].split(":", 1)[1]
        upstream = manifest.kind_version(key).image.version.split(":", 1)[-1]
        assert re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}", tag), tag
        assert tag == re.sub(r"[~+:]", "-", upstream)


@pytest.mark.parametrize("lab", ["reference", "xfr"])
def test_rendered_lab_file_parses(clab: Path, tmp_path: Path, lab: str) -> None:
    """What the clab runtime deploys: the topology plus binds, env and profile sysctls."""
    from dnslab import render, topology
    from dnslab.render import LabData

    topo = topology.load(lab)
    out = (tmp_path / "lab").resolve()
    data = render.reference_data(topo, out) if lab == "reference" else LabData(
        zones=[], health_zone=".")
    data.sysctls = {name: {"net.ipv4.ip_local_port_range": "2048 65500"}
                    for name in topo.nodes}
    rendered = render.render(topo, data, out)
    check_topology(clab, rendered.clab_file, tmp_path / "labdir")


def test_tag_rule_rewrites_the_topologies_group_images(tmp_path: Path) -> None:
    """After a version bump, `images/tags.sh --topologies` sets each group's image (the one
    place a topology names it) to what the tag rule gives; the files are otherwise left as
    they are."""
    for topo in TOPOLOGIES:
        text = topo.read_text()
        stale = re.sub(r"(image: dnslab/[\w.-]+):[^,} ]+", r"\1:stale", text)
        assert stale != text, f"{topo.name}: no group image found"
        (tmp_path / topo.name).write_text(stale)
    subprocess.run([str(TAGS), "--topologies", str(tmp_path)], check=True, timeout=60)
    for topo in TOPOLOGIES:
        assert (tmp_path / topo.name).read_text() == topo.read_text(), topo.name
