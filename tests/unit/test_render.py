"""Config rendering for every server kind: each rendered file passes its server's own checker."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from dnslab import render, topology
from dnslab.errors import LabError
from tests.conftest import need_binary
from zones.checks import check_zone_file


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> render.RenderedLab:
    out = tmp_path_factory.mktemp("lab")
    topo = topology.load("reference")
    return render.render(topo, render.reference_data(topo, out), out)


def check(argv: list[str]) -> None:
    need_binary(argv[0])
    proc = subprocess.run(argv, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("node", ["primary", "sec-bind"])
def test_bind_config_passes_named_checkconf(rendered, node):
    conf = rendered.node_dir(node) / "named.conf"
    check(["named-checkconf", str(conf)])
    text = conf.read_text()
    assert ("type primary" in text) == (node == "primary")
    assert "198.18.0.11" in text  # secondaries pull from the primary's address


def test_knot_config_passes_conf_check(rendered):
    check(["knotc", "-c", str(rendered.node_dir("sec-knot") / "knot.conf"), "conf-check"])


def test_nsd_config_passes_nsd_checkconf(rendered):
    check(["nsd-checkconf", str(rendered.node_dir("sec-nsd") / "nsd.conf")])


def test_dnsdist_config_passes_check_config(rendered):
    conf = rendered.node_dir("frontend") / "dnsdist.conf"
    check(["dnsdist", "--check-config", "-C", str(conf)])
    for secondary in ("198.18.0.12", "198.18.0.13", "198.18.0.14"):
        assert f'address="{secondary}:53"' in conf.read_text()


def test_unbound_config_passes_checkconf_and_hints_stay_in_the_lab(rendered):
    check(["unbound-checkconf", str(rendered.node_dir("resolver") / "unbound.conf")])
    hints = (rendered.node_dir("resolver") / "root.hints").read_text()
    addresses = [line.split()[-1] for line in hints.splitlines()
                 if line and not line.startswith(";") and " A " in f" {line} "]
    assert addresses == ["198.18.0.11"]


def test_reference_zones_pass_the_zone_checkers(rendered):
    # zones.checks runs named-checkzone in `-i local` mode (and, as root, in an empty
    # network namespace): lab names are never looked up through the host's resolver
    need_binary("named-checkzone")
    for zone in rendered.data.zones:
        assert "named-checkzone" in check_zone_file(zone.name, zone.path)


def test_every_node_gets_env_and_run_script(rendered):
    for node in rendered.topology.nodes.values():
        env = dict(line.split("=", 1) for line in
                   (rendered.node_dir(node.name) / "node.env").read_text().split())
        assert env["DNSLAB_ADDR"] == node.cidr
        run = (rendered.node_dir(node.name) / "run.sh").read_text()
        assert run.startswith("#!/bin/sh")
        assert ("exec " in run) == (node.server != "tools")


def test_clab_file_mounts_node_folders_at_the_same_path(rendered):
    clab = yaml.safe_load(rendered.clab_file.read_text())
    assert clab["name"] == "reference"
    primary = clab["topology"]["nodes"]["primary"]
    node_dir = str(rendered.node_dir("primary"))
    assert f"{node_dir}:{node_dir}" in primary["binds"]
    assert primary["env"]["DNSLAB_NODE_DIR"] == node_dir
    assert clab["topology"]["nodes"]["br-reference"] == {"kind": "bridge"}


def test_profile_sysctls_reach_the_clab_file(tmp_path):
    topo = topology.load("reference")
    data = render.reference_data(topo, tmp_path)
    data.sysctls = {"sec-bind": {"net.ipv4.ip_local_port_range": "2048 65500"}}
    lab = render.render(topo, data, tmp_path)
    clab = yaml.safe_load(lab.clab_file.read_text())
    assert clab["topology"]["nodes"]["sec-bind"]["sysctls"] == {
        "net.ipv4.ip_local_port_range": "2048 65500"}
    assert "sysctls" not in clab["topology"]["nodes"]["primary"]


def test_bind_options_render_only_when_given(tmp_path):
    topo = topology.load("reference")
    data = render.reference_data(topo, tmp_path)
    data.node_options = {"primary": {"tcp-clients": 1000, "tcp-listen-queue": 0}}
    lab = render.render(topo, data, tmp_path)
    text = Path(lab.node_dir("primary") / "named.conf").read_text()
    assert "tcp-clients 1000;" in text and "tcp-listen-queue 0;" in text
    assert "tcp-clients" not in (lab.node_dir("sec-bind") / "named.conf").read_text()


def test_many_generated_zones_render_into_valid_primary_and_secondary_configs(tmp_path):
    """The zone lists a cold-start experiment deploys: BIND primary, BIND/Knot/NSD secondaries."""
    import zones

    zone_set = zones.ensure("small-zones", {"count": 200}, 1, out_root=tmp_path / "z")
    refs = [render.ZoneRef(z.fqdn, z.path) for z in zone_set.zones]
    lab = render.render(topology.load("xfr"),
                        render.LabData(zones=refs, health_zone=refs[0].name), tmp_path / "lab")
    check(["named-checkconf", "-z", str(lab.node_dir("primary") / "named.conf")])
    check(["named-checkconf", str(lab.node_dir("sec-bind") / "named.conf")])
    check(["knotc", "-c", str(lab.node_dir("sec-knot") / "knot.conf"), "conf-check"])
    check(["nsd-checkconf", str(lab.node_dir("sec-nsd") / "nsd.conf")])
    for node, conf, marker in (("sec-bind", "named.conf", 'zone "'),
                               ("sec-knot", "knot.conf", "- domain:"),
                               ("sec-nsd", "nsd.conf", "zone:")):
        assert (lab.node_dir(node) / conf).read_text().count(marker) == 200, node


def test_clab_nodes_have_no_management_network_and_see_build_and_results(rendered):
    clab = yaml.safe_load(rendered.clab_file.read_text())
    for name, node in clab["topology"]["nodes"].items():
        if node.get("kind") == "bridge":
            continue
        assert node["network-mode"] == "none", name
        for root in render.node_visible_roots():
            assert f"{root}:{root}" in node["binds"], name
        assert node["env"]["DNSLAB_LOG"] == str(render.log_file(rendered.root, name))


def test_a_bind_outside_the_node_visible_folders_is_refused(tmp_path):
    from dnslab.errors import LabError

    topo = topology.load("reference")
    data = render.reference_data(topo, tmp_path)
    data.extra_binds = [Path("/srv/elsewhere")]
    with pytest.raises(LabError) as err:
        render.render(topo, data, tmp_path)
    assert "/srv/elsewhere" in err.value.message and "build" in (err.value.hint or "")


@pytest.mark.parametrize("primary, kind", [("pri-knot", "knot"), ("pri-nsd", "nsd")])
def test_any_primary_kind_feeds_the_secondaries(tmp_path, primary, kind):
    """PRIMARY=knot|nsd: the secondaries transfer from that node, the other primaries serve
    nothing, and `notify: no` keeps the chosen primary quiet as BIND's option does."""
    zone = tmp_path / "a.test.zone"
    zone.write_text("$ORIGIN a.test.\n$TTL 60\n@ SOA ns h 1 60 60 60 60\n@ NS ns\n"
                    "ns A 198.18.0.1\n")
    topo = topology.load("xfr")
    data = render.LabData(zones=[render.ZoneRef("a.test.", zone)], health_zone="a.test.",
                          primary=primary, node_zones={"primary": []},
                          node_options={primary: {"notify": "no"}})
    lab = render.render(topo, data, tmp_path / "lab")
    address = str(topo.node(primary).address)
    assert f"primaries {{ {address}; }}" in (lab.node_dir("sec-bind") / "named.conf").read_text()
    assert f"address: {address}@53" in (lab.node_dir("sec-knot") / "knot.conf").read_text()
    assert f"request-xfr: {address} NOKEY" in (lab.node_dir("sec-nsd") / "nsd.conf").read_text()
    conf = (lab.node_dir(primary) / ("knot.conf" if kind == "knot" else "nsd.conf")).read_text()
    assert str(zone) in conf and "notify:" not in conf
    assert 'zone "' not in (lab.node_dir("primary") / "named.conf").read_text()
    with pytest.raises(LabError):
        render.render(topo, render.LabData(zones=[], health_zone=".", primary="sec-knot"),
                      tmp_path / "bad")
