"""The server kinds' manifests (dnslab/servers/<kind>.yaml): each server kind has its driver
module, its templates and an image, and the data the shell scripts print is what the
Python side reads."""

from __future__ import annotations

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


def test_an_image_variant_names_a_server_kind_and_has_no_roles_or_driver():
    variants = {k: m for k, m in manifest.manifests().items() if m.variant_of}
    assert variants, "bind916 is an image-only variant of bind"
    for kind, found in variants.items():
        assert found.variant_of in manifest.server_kinds() and not found.roles
        assert found.server == found.variant_of
        assert kind not in servers.kinds()


def test_the_script_prints_what_the_manifests_hold():
    images = [line.split() for line in script("images")]
    assert [row[0] for row in images] == list(manifest.manifests())
    bind = next(row for row in images if row[0] == "bind")
    assert bind[1:] == ["bind9", "bind9", manifest.manifest("bind").image.version,
                        manifest.manifest("bind").image.reference]
    assert script("host-packages")[:3] == ["bind9", "bind9-utils", "bind9-dnsutils"]
    assert "pdns-server pdns" in script("systemd-units")
    assert script("field", "bind916", "image.suite") == ["bullseye"]
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
    dnsdist = dict(line.split("=", 1) for line in script("build-args", "dnsdist"))
    assert dnsdist["DPKG_PATH_EXCLUDES"] == "/usr/share/perl/* /usr/lib/*/perl/*"


def test_an_unknown_field_is_refused_naming_the_file(tmp_path, monkeypatch):
    (tmp_path / "odd.yaml").write_text(
        "kind: odd\norder: 1\ndescription: x\nversion_command: [odd]\ncolour: red\n"
        "image: {dir: odd, package: odd, version: '1'}\n")
    monkeypatch.setattr(manifest, "MANIFESTS", tmp_path)
    manifest.manifests.cache_clear()
    try:
        with pytest.raises(manifest.ManifestError, match="odd.yaml: unknown field.*colour"):
            manifest.manifests()
    finally:
        manifest.manifests.cache_clear()


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
