"""Root file systems on the netns runtime (dnslab/runtime/rootfs.py): which nodes run from one
(a version the host's package is not; a node whose host package is older than its manifest's
minimum), what a root
is keyed by, when a made one is reused, and that its chroot gets exactly the folders the
container would."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from dnslab import lab, paths, render, topology
from dnslab.errors import LabError
from dnslab.render import LabData, ZoneRef
from dnslab.runtime import netns, rootfs
from dnslab.runtime.base import LabState
from dnslab.runtime.netns import NetnsRuntime
from dnslab.servers import manifest


@pytest.fixture(scope="module")
def mobile(tmp_path_factory) -> render.RenderedLab:
    out = tmp_path_factory.mktemp("mobile")
    zone = out / "zones" / "epc.test.zone"
    zone.parent.mkdir()
    zone.write_text("@ 300 IN SOA ns. host. 1 60 60 600 60\n@ 300 IN NS ns.\n"
                    "ns 300 IN A 192.0.2.1\n")
    topo = topology.load("mobile")
    data = LabData(zones=[ZoneRef("epc.test.", zone)], health_zone="epc.test.",
                   extra_binds=[paths.BIN])
    return render.render(topo, data, out)


@pytest.fixture(scope="module")
def mobile_state(mobile) -> LabState:
    return lab._new_state(mobile, NetnsRuntime())


# what a Debian 12 host with the lab's packages has (make setup), and a Debian 13 one
DEBIAN_12 = {"bind9": "1:9.18.49-1~deb12u3", "knot": "3.2.6-1", "nsd": "4.6.1-1",
             "pdns-server": "4.7.3-2", "dnsperf": "2.10.0-2", "unbound": "1.17.1-2+deb12u4",
             "dnsdist": "1.7.3-2", "knot-resolver": "5.6.0-1+deb12u1",
             "pdns-recursor": "4.8.8-1+deb12u1"}
DEBIAN_13 = {**DEBIAN_12, "bind9": "1:9.20.30-1~deb13u1", "dnsperf": "2.14.0-5"}


@pytest.fixture
def host_packages(monkeypatch):
    """Set the package versions node_root sees on the host (a missing one: not installed)."""
    def setter(versions: dict[str, str], **more: str | None) -> None:
        have = {**versions, **{k.replace("_", "-"): v for k, v in more.items()}}
        monkeypatch.setattr(netns, "_INSTALLED", {})
        monkeypatch.setattr(netns, "installed_versions",
                            lambda host, packages: {p: have.get(p) for p in packages})
    return setter


@pytest.fixture
def host_dnsperf(host_packages):
    """Debian 12's packages with this dnsperf (None: not installed)."""
    return lambda version: host_packages(DEBIAN_12, dnsperf=version)


# --- which nodes run from a root -------------------------------------------------------------

def rooted(topo: topology.Topology) -> dict[str, tuple[str, str, str]]:
    """node -> (kind@version, suite, why) of each node that runs from a root."""
    return {n: (found[0].kind, found[0].suite, found[1]) for n in topo.nodes
            if (found := netns.node_root(topo.node(n))) is not None}


def test_a_version_the_host_does_not_have_runs_from_its_suites_root(mobile, mobile_state,
                                                                     host_dnsperf):
    host_dnsperf("2.14.0-5")
    versioned = [n for n, info in mobile_state.nodes.items() if info.from_image]
    assert versioned == ["sec-bind916"]
    node = mobile_state.nodes["sec-bind916"]
    assert node.server == "bind" and node.image == "dnslab/bind9:9.16.50-1-deb11u2"
    assert mobile_state.nodes["sec-bind"].image.startswith("dnslab/bind9:9.18.")
    found = rooted(mobile.topology)
    assert list(found) == ["sec-bind916"]
    key, suite, why = found["sec-bind916"]
    assert (key, suite) == ("bind@9.16", "bullseye") and "1:9.18.49" in why
    assert netns.node_root(mobile.topology.node("sec-bind916"))[0].image == node.image


def test_each_version_a_run_adds_runs_from_its_suite_and_the_hosts_own_from_the_host(
        host_packages):
    topo = topology.load("mobile").with_versions("secondary", ["bind@9.20", "knot@3.4"])
    host_packages(DEBIAN_12)
    found = rooted(topo)
    assert found["sec-bind920"][:2] == ("bind@9.20", "trixie")
    assert found["sec-knot34"][:2] == ("knot@3.4", "trixie")
    assert "sec-bind" not in found and "primary" not in found
    # on Debian 13 BIND 9.20 is the host's, and the default 9.18 runs from bookworm
    host_packages(DEBIAN_13)
    found = rooted(topo)
    assert "sec-bind920" not in found and "client" not in found
    assert found["sec-bind"][:2] == found["primary"][:2] == ("bind@9.18", "bookworm")


def test_a_package_the_host_lacks_runs_from_a_root(host_packages):
    host_packages({k: v for k, v in DEBIAN_12.items() if k != "nsd"}, dnsperf="2.14.0-5")
    found = rooted(topology.load("mobile"))
    assert found["sec-nsd"][:2] == ("nsd@4.6", "bookworm")
    assert "not installed" in found["sec-nsd"][2]


@pytest.mark.parametrize("installed, rooted", [
    ("2.10.0-2", True),      # Debian 12: stalls on a TCP answer over 16 KiB
    (None, True),            # no dnsperf on the host at all
    ("2.13.1-1", False),     # the first fixed release: the tools' minimum, not their version
    ("2.14.0-5", False),     # Debian 13
])
def test_the_client_runs_from_a_root_where_the_hosts_dnsperf_is_too_old(installed, rooted,
                                                                        host_dnsperf):
    host_dnsperf(installed)
    client = topology.load("reference").node(role="client")
    found = netns.node_root(client)
    assert (found is not None) == rooted
    if found is not None:
        root, why = found
        assert (root.kind, root.suite) == ("tools@2.14", manifest.manifest("tools").image.suite)
        assert "dnsperf" in why
        assert "dnsperf=" + manifest.manifest("tools").image.version in root.packages


def test_a_rooted_kind_needs_none_of_its_host_packages(monkeypatch, tmp_path, host_dnsperf):
    host_dnsperf("2.10.0-2")
    topo = topology.load("reference")
    rendered = render.render(topo, render.reference_data(topo, tmp_path), tmp_path)
    monkeypatch.setattr(netns.os, "geteuid", lambda: 0)
    asked = []
    monkeypatch.setattr(netns, "missing_packages", lambda servers: asked.append(servers) or [])
    monkeypatch.setattr(netns, "apparmor_enforced", lambda binaries: [])
    NetnsRuntime().preflight(rendered)
    assert "tools" not in asked[0] and "bind" in asked[0]
    # the two resolvers' versions are Debian 13's, not the host's 5.6 and 4.8
    assert not {"kresd", "recursor"} & asked[0]


# --- the minimum-version check -----------------------------------------------------------

@pytest.mark.parametrize("version, minimum, enough", [
    ("2.10.0-2", "2.13.1", False),
    ("2.13.1", "2.13.1", True),
    ("2.13.1-1", "2.13.1", True),
    ("2.13.1~rc1-1", "2.13.1", False),  # a pre-release sorts before the release
    ("2.14.0-5", "2.13.1", True),
    ("1:2.0-1", "2.13.1", True),  # an epoch outranks the version
    ("2.9", "2.13.1", False),  # numerically, not as text
])
def test_versions_compare_as_debian_does(version, minimum, enough):
    assert rootfs.version_at_least(version, minimum) is enough


def test_the_shortfall_says_what_is_missing_or_too_old():
    assert rootfs.shortfall("tools", {"dnsperf": "2.14.0-5"}) == []
    assert rootfs.shortfall("tools", {"dnsperf": "2.10.0-2"}) == [
        "dnsperf is 2.10.0-2 (the lab needs 2.13.1 or later)"]
    assert rootfs.shortfall("tools", {}) == [
        "dnsperf is not installed (the lab needs 2.13.1 or later)"]
    assert rootfs.shortfall("bind", {}) == []  # no minimum: the host's serves


def test_a_minimum_version_is_a_quoted_string(tmp_path):
    path = tmp_path / "odd.yaml"
    path.write_text("kind: odd\norder: 1\ndescription: x\nversion_command: [odd]\n"
                    "minimum_versions: {odd: 2.13}\n"
                    "image: {dir: odd, package: odd, version: '1'}\n")
    with pytest.raises(manifest.ManifestError, match="quoted"):
        manifest._read(path)


# --- what a root is keyed by, and reuse -----------------------------------------------------

def test_the_key_is_the_suite_and_the_packages_with_their_versions():
    tools = rootfs.suite_root("tools")
    assert tools.suite == "trixie" and tools.image == manifest.manifest("tools").image.reference
    assert set(tools.packages) == set(manifest.root_packages("tools"))
    assert tools.path == paths.BUILD / "rootfs" / f"trixie-{tools.key}"
    same = rootfs.SuiteRoot("tools", "trixie", tuple(reversed(tools.packages)), "other/image:1")
    assert same.key == tools.key  # order and image aside
    bumped = tuple(p.replace("dnsperf=2.14.0-5", "dnsperf=2.14.0-6") for p in tools.packages)
    assert rootfs.SuiteRoot("tools", "trixie", bumped, tools.image).key != tools.key
    assert rootfs.SuiteRoot("tools", "sid", tools.packages, tools.image).key != tools.key
    added = (*tools.packages, "strace")
    assert rootfs.SuiteRoot("tools", "trixie", added, tools.image).key != tools.key
    assert tools.pins["dnsperf"] == manifest.manifest("tools").image.version
    assert "procps" in tools.packages and "procps" not in tools.pins  # unpinned extras


def test_a_made_root_is_reused_and_another_key_is_made_again(monkeypatch, tmp_path):
    monkeypatch.setattr(paths, "BUILD", tmp_path)
    root = rootfs.SuiteRoot("tools", "trixie", ("dnsperf=2.14.0-5", "iproute2"), "x/tools:1")
    made = []

    def debootstrap(wanted, tmp, node, why):
        made.append(wanted.key)
        (tmp / rootfs.VERSIONS_TXT).parent.mkdir(parents=True)
        (tmp / rootfs.VERSIONS_TXT).write_text("dnsperf\t2.14.0-5\nlibc6:amd64\t2.41-12\n")
        return "debootstrap trixie"

    monkeypatch.setattr(rootfs, "_export_image", lambda wanted, tmp: None)
    monkeypatch.setattr(rootfs, "_debootstrap", debootstrap)
    path = rootfs.ensure_root(root, "client")
    stamp = rootfs.read_stamp(path)
    assert stamp["key"] == root.key and stamp["source"] == "debootstrap trixie"
    assert stamp["versions"] == {"dnsperf": "2.14.0-5", "libc6": "2.41-12"}
    assert rootfs.describe(path) == "trixie root file system (debootstrap)"
    exported = tmp_path / "exported"
    exported.mkdir()
    (exported / rootfs.STAMP).write_text(json.dumps(
        {"suite": "trixie", "source": "image dnslab/tools:2.14.0-5 sha256:0123"}))
    assert rootfs.describe(exported) == "trixie root file system (image dnslab/tools:2.14.0-5)"
    assert rootfs.ensure_root(root, "client") == path and made == [root.key]  # reused
    # a stamp of another key at the same place (a hand edit, an interrupted swap) is not it
    (path / rootfs.STAMP).write_text(json.dumps({**stamp, "key": "0" * 16}))
    assert rootfs.ensure_root(root, "client") == path and made == [root.key, root.key]
    assert not path.with_name(path.name + ".tmp").exists()


def test_no_image_and_no_debootstrap_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setattr(paths, "BUILD", tmp_path)
    monkeypatch.setattr(rootfs, "_image_id", lambda image: None)
    monkeypatch.setattr(rootfs.shutil, "which", lambda name: None)
    with pytest.raises(LabError) as err:
        rootfs.ensure_root(rootfs.suite_root("bind916"), "sec-bind916", "image kind bind916")
    assert "debootstrap is not installed" in err.value.message or "needs root" in \
        err.value.message
    assert "make setup" in err.value.hint and "make images" in err.value.hint


# --- the chroot -------------------------------------------------------------------------------

def test_the_chroot_gets_the_containers_binds(mobile, mobile_state):
    info = mobile_state.nodes["sec-bind916"]
    binds = info.mounts
    # the container gets the same folders (the rendered clab file's binds)
    clab = yaml.safe_load(mobile.clab_file.read_text())
    assert clab["topology"]["nodes"]["sec-bind916"]["binds"] == [f"{b}:{b}" for b in binds]
    # the node folder, its zones and the tools (build/bin) are each inside a bound folder
    for needed in (mobile.node_dir("sec-bind916"), mobile.root / "zones", paths.BIN):
        assert any(Path(needed).resolve().is_relative_to(b) for b in binds), needed
    root = rootfs.suite_root("bind916").path
    argv = rootfs.chroot_argv(root, binds, ["sh", str(mobile.node_dir("sec-bind916") / "run.sh")])
    assert argv[:4] == ["unshare", "--mount", "--propagation", "private"]
    script = argv[-1]
    for folder in binds:  # made when missing (results/ on a fresh clone), as Docker does
        assert f'mkdir -p {folder} "$R"{folder}' in script
        assert f'mount --bind {folder} "$R"{folder}' in script
    for system in ("/dev", "/proc", "/sys"):
        assert f'"$R{system}"' in script
    assert script.splitlines()[-1] == f'exec chroot "$R" sh {mobile.node_dir("sec-bind916")}/run.sh'


def test_every_command_in_a_rooted_node_runs_in_its_root(mobile, mobile_state, tmp_path,
                                                         monkeypatch):
    state = copy.deepcopy(mobile_state)
    client = state.nodes["client"]
    client.netns = "/run/netns/dnslab-mobile-client"
    argv = ["dnsperf", "-s", "198.18.0.11", "-d", "/tmp/q file"]
    assert NetnsRuntime().node_argv(state, "client", argv)[-len(argv):] == argv  # the host's
    # a held node's root not made yet is made before the first command runs in it
    made = []
    monkeypatch.setattr(NetnsRuntime, "make_root",
                        lambda self, st, node: made.append(node) or Path(client.rootfs))
    client.rootfs = str(tmp_path / "trixie-0123")
    NetnsRuntime().node_argv(state, "client", argv)
    assert made == ["client"]
    (tmp_path / "trixie-0123").mkdir()
    wrapped = NetnsRuntime().node_argv(state, "client", argv)
    assert made == ["client"]  # made once: there now
    assert wrapped[:4] == ["ip", "netns", "exec", "dnslab-mobile-client"]
    assert wrapped[4:6] == ["unshare", "--mount"]
    assert wrapped[-1].splitlines()[-1] == (
        "exec chroot \"$R\" dnsperf -s 198.18.0.11 -d '/tmp/q file'")
