"""The server kinds' manifests (dnslab/servers/<kind>.yaml): each server kind has its driver
module, its templates and an image, and the data the shell scripts print is what the
Python side reads."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from dnslab import servers, topology
from dnslab.servers import manifest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "manifest.py"


def script(*args: str) -> list[str]:
    out = subprocess.run([sys.executable, str(SCRIPT), *args], check=True,
                         capture_output=True, text=True).stdout
    return out.splitlines()


@pytest.mark.parametrize("kind", manifest.server_kinds())
def test_a_server_kind_is_its_manifest_driver_templates_and_image(kind):
    found = manifest.manifest(kind)
    assert found.roles and found.roles <= topology.ROLES, found.roles
    assert servers.driver(kind).manifest is found
    templates = REPO / "topologies" / "templates"
    for template in servers.driver(kind).templates().values():
        assert (templates / template).is_file(), template
    own = REPO / "images" / found.image.dir / "Dockerfile"
    assert own.is_file() or (REPO / "images" / "common" / "Dockerfile").is_file()
    if found.binary:
        assert found.package and found.health_query == "SOA"


def test_a_kinds_versions_are_rows_of_its_manifest_each_its_own_image():
    bind = manifest.manifest("bind")
    assert list(bind.versions) == ["9.16", "9.18", "9.20"] and bind.default_version == "9.18"
    assert bind.image is bind.versions["9.18"]
    suites = {label: image.suite for label, image in bind.versions.items()}
    assert suites == {"9.16": "bullseye", "9.18": "bookworm", "9.20": "trixie"}
    refs = {image.reference for image in bind.versions.values()}
    assert len(refs) == 3 and all(r.startswith("dnslab/bind9:") for r in refs)
    # shared fields come from `image:`, a row's own win
    assert {image.recorded_packages for image in bind.versions.values()} == {
        ("bind9", "bind9-libs", "bind9-utils")}
    knot = manifest.manifest("knot").versions
    assert knot["3.2"].recorded_packages != knot["3.4"].recorded_packages
    for kind in manifest.server_kinds():
        found = manifest.manifest(kind)
        for label, image in found.versions.items():
            assert image.label == label and image.note, (kind, label)


@pytest.mark.parametrize("name, key", [
    ("bind", "bind@9.18"), ("bind@9.20", "bind@9.20"), ("bind916", "bind@9.16"),
    ("nsd@4.12", "nsd@4.12"), ("tools", "tools@2.14")])
def test_a_kind_alone_is_its_default_version_and_an_old_name_its_alias(name, key):
    assert manifest.image_key(name) == key


@pytest.mark.parametrize("name, message", [
    ("bind@9.14", "the lab offers no bind 9.14 (it offers bind@9.16, bind@9.18, bind@9.20"),
    ("bind@9.20.30", "offers no bind 9.20.30"),
    ("bind@", "offers no bind "),
    ("bond@9.18", "no manifest for kind 'bond'")])
def test_a_version_the_lab_does_not_offer_is_one_line_naming_those_it_does(name, message):
    with pytest.raises(manifest.ManifestError, match=re.escape(message)):
        manifest.kind_version(name)


def refused(tmp_path: Path, monkeypatch, text: str, match: str) -> None:
    """A manifests folder holding only `odd.yaml` with `text` is refused with `match`."""
    (tmp_path / "odd.yaml").write_text(
        "kind: odd\norder: 1\ndescription: x\nversion_command: [odd]\n" + text)
    monkeypatch.setattr(manifest, "MANIFESTS", tmp_path)
    manifest.manifests.cache_clear()
    try:
        with pytest.raises(manifest.ManifestError, match=match):
            manifest.manifests()
    finally:
        manifest.manifests.cache_clear()


def test_a_versions_label_must_be_its_package_versions(tmp_path, monkeypatch):
    refused(tmp_path, monkeypatch, "image: {dir: odd, package: odd}\n"
            "versions: {'1.2': {version: '1.3.0-1', note: typo}}\n",
            "version '1.2' holds 1.3.0-1")


def test_the_script_prints_what_the_manifests_hold():
    images = [line.split() for line in script("images")]
    assert [row[0] for row in images] == manifest.image_keys()
    bind = next(row for row in images if row[0] == "bind@9.18")
    assert bind[1:] == ["bind9", "bind9", manifest.manifest("bind").image.version,
                        manifest.manifest("bind").image.reference, "bookworm", "bind", "default"]
    old = next(row for row in images if row[0] == "bind@9.16")
    assert old[5:] == ["bullseye", "bind916", "other"]
    assert script("host-packages")[:3] == ["bind9", "bind9-utils", "bind9-dnsutils"]
    assert "pdns-server pdns" in script("systemd-units")
    assert script("field", "bind916", "image.suite") == ["bullseye"]
    assert script("field", "bind@9.20", "image.suite") == ["trixie"]
    assert script("field", "bind", "image.suite") == ["bookworm"]
    args = dict(line.split("=", 1) for line in script("build-args", "unbound"))
    assert args["EXTRA_PACKAGES"] == "iptables"
    assert args["PINNED_PACKAGES"] == f"unbound={manifest.manifest('unbound').image.version}"
    assert args["IMAGE_COMMAND"] == "unbound -V" and args["DPKG_PATH_EXCLUDES"] == ""
    assert args["RECORDED_PACKAGES"] == "unbound" and args["SERVER_KIND"] == "unbound"
    tools = dict(line.split("=", 1) for line in script("build-args", "tools"))
    # the tools image's suite is Debian 13: dig, kdig and their libraries at its versions
    pins = dict(pin.split("=", 1) for pin in tools["PINNED_PACKAGES"].split())
    assert pins["dnsperf"] == manifest.manifest("tools").image.version
    assert pins["bind9-dnsutils"] == pins["bind9-libs"] and "deb13" in pins["bind9-libs"]
    assert set(pins) == {"dnsperf", "bind9-dnsutils", "bind9-libs", "knot-dnsutils"}
    assert tools["IMAGE_COMMAND"] == "sleep infinity"
    assert script("build-args", "bind916")[2] == "SERVER_KIND=bind"
    old = dict(line.split("=", 1) for line in script("build-args", "bind@9.16"))
    assert old["PINNED_PACKAGES"].split() == [f"{p}=1:9.16.50-1~deb11u2" for p in
                                              ("bind9", "bind9-libs", "bind9-utils")]
    dnsdist = dict(line.split("=", 1) for line in script("build-args", "dnsdist"))
    assert dnsdist["DPKG_PATH_EXCLUDES"] == "/usr/share/perl/* /usr/lib/*/perl/*"


def test_an_unknown_field_is_refused_naming_the_file(tmp_path, monkeypatch):
    refused(tmp_path, monkeypatch, "colour: red\nimage: {dir: odd, package: odd, version: '1'}\n",
            "odd.yaml: unknown field.*colour")


def test_a_pin_names_a_version_or_the_kind_whose_image_version_it_takes():
    assert manifest._pinned_version("bind") == manifest.manifest("bind").image.version
    assert manifest._pinned_version("1:9.20.30-1~deb13u1") == "1:9.20.30-1~deb13u1"
    assert manifest._pinned_version("3.4.6-2") == "3.4.6-2"


def test_a_root_holds_the_images_packages_but_its_init():
    args = manifest.build_args("tools")
    wanted = [*args["PINNED_PACKAGES"].split(), "iproute2", *args["EXTRA_PACKAGES"].split()]
    assert manifest.root_packages("tools") == wanted and "tini" not in wanted


def test_the_tag_rule_drops_the_epoch_and_replaces_what_docker_forbids():
    image = manifest.Image(dir="bind9", package="bind9", version="1:9.18.49-1~deb12u3")
    assert image.reference == "dnslab/bind9:9.18.49-1-deb12u3"
