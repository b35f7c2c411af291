"""What one server kind is, as data: its manifest `dnslab/servers/<kind>.yaml`.

A manifest holds everything about a kind that is not behaviour: its roles, the Debian
packages the host needs (and the systemd unit to keep from starting), its daemon binary and
the other commands and files it needs, the oldest version of a host package it can use
(`minimum_versions`), its configuration files, whether it transfers over TLS, which
encrypted transports it serves (DoT, DoH), its health query and version command, and its
image (name, main package, pinned version, Debian suite, the packages it pins and adds, its
command), whose packages a root file system of that suite holds on the netns runtime
(`root_packages`, dnslab/runtime/rootfs.py). Its driver
(`dnslab/servers/<kind>.py`) holds the behaviour; an image-only variant (`variant_of: bind`,
e.g. bind916) has a manifest and no driver.

This module needs only the standard library and PyYAML, and imports nothing of dnslab:
`scripts/manifest.py` loads it by path with the host's python3, before the virtualenv
exists, for the shell scripts (setup.sh, images/tags.sh, build-images.sh).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml

MANIFESTS = Path(__file__).resolve().parent
IMAGE_REPOSITORY = "dnslab"
DEFAULT_SUITE = "bookworm"
# what a kind may list under `encrypted_transports` (UDP and TCP on 53 every kind serves):
# DNS over TLS (RFC 7858) and DNS over HTTPS (RFC 8484)
ENCRYPTED_TRANSPORTS = ("dot", "doh")


class ManifestError(ValueError):
    """A manifest file that is missing, malformed or names an unknown field."""


@dataclass(frozen=True)
class Image:
    """A kind's container image, `dnslab/<dir>`, built from images/common/Dockerfile (or
    images/<dir>/Dockerfile where a kind needs its own) with `build_args(kind)`."""

    dir: str
    package: str
    version: str
    suite: str = DEFAULT_SUITE
    # the packages it pins: a name is pinned at `version`; a mapping {package: X} at X, a
    # Debian version (it starts with a digit), or at the image version of kind X (a name)
    # (default: the main package alone)
    packages: tuple[str | dict[str, str], ...] = ()
    # installed unpinned beside iproute2 and tini
    extra_packages: tuple[str, ...] = ()
    # the packages whose versions the image records (default: the pinned ones)
    recorded_packages: tuple[str, ...] = ()
    # dpkg path-exclude patterns: files the packages bring that the server never uses
    dpkg_path_excludes: tuple[str, ...] = ()
    # what it runs given no command and no node folder (default: the version command)
    command: tuple[str, ...] = ()

    @property
    def tag(self) -> str:
        """The tag rule: the pinned version without its epoch, with every character Docker
        forbids in a tag ('~', '+', ':') as '-' (1:9.18.49-1~deb12u3 -> 9.18.49-1-deb12u3)."""
        return re.sub(r"[~+:]", "-", re.sub(r"^[0-9]*:", "", self.version))

    @property
    def reference(self) -> str:
        return f"{IMAGE_REPOSITORY}/{self.dir}:{self.tag}"


@dataclass(frozen=True)
class Manifest:
    """One server kind (or an image-only variant of one), as its YAML file says."""

    kind: str
    order: int
    description: str
    image: Image
    version_command: tuple[str, ...]
    roles: frozenset[str] = frozenset()
    variant_of: str | None = None
    package: str | None = None
    binary: str | None = None
    commands: dict[str, str] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    host_packages: tuple[str, ...] = ()
    # package -> the oldest (Debian) version the lab may run; on the netns runtime a host whose
    # package is older (or missing) runs the kind's nodes from a root file system of the
    # image's suite (dnslab/runtime/rootfs.py)
    minimum_versions: dict[str, str] = field(default_factory=dict)
    systemd_unit: str | None = None
    config_files: tuple[str, ...] = ()
    xot: bool = False
    # the encrypted transports its packaged version serves to clients (ENCRYPTED_TRANSPORTS;
    # the manifest says why where one is missing)
    encrypted_transports: tuple[str, ...] = ()
    health_query: str | None = None
    # the kind's own configuration checker, run on a rendered node folder: argv with
    # `{node_dir}` in place of the folder (tests/unit/test_server_configs.py runs it on
    # every role the kind takes)
    config_check: tuple[str, ...] = ()

    @property
    def server(self) -> str:
        """The server kind (`dnslab.server` label) a node of this image kind runs."""
        return self.variant_of or self.kind


_TUPLE_FIELDS = {"version_command", "config_check", "host_packages", "config_files", "packages",
                 "encrypted_transports",
                 "extra_packages", "recorded_packages", "dpkg_path_excludes", "command"}


def _fields(cls: type, raw: dict[str, Any], path: Path) -> dict[str, Any]:
    known = set(cls.__dataclass_fields__)
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ManifestError(f"{path}: unknown field(s) {', '.join(unknown)} "
                            f"(known: {', '.join(sorted(known))})")
    return {key: tuple(value) if key in _TUPLE_FIELDS else value for key, value in raw.items()}


def _read(path: Path) -> Manifest:
    raw = yaml.safe_load(path.read_text())
    if not isinstance(raw, dict) or not isinstance(raw.get("image"), dict):
        raise ManifestError(f"{path}: a manifest is a mapping with an `image` mapping")
    fields = _fields(Manifest, raw, path)
    fields["image"] = Image(**_fields(Image, raw["image"], path))
    fields["roles"] = frozenset(raw.get("roles") or ())
    try:
        manifest = Manifest(**fields)
    except TypeError as exc:
        raise ManifestError(f"{path}: {exc}") from None
    if not all(isinstance(v, str) for v in manifest.minimum_versions.values()):
        raise ManifestError(f"{path}: minimum_versions are quoted version strings "
                            "(\"2.13.1\", not 2.13.1)")
    if manifest.kind != path.stem:
        raise ManifestError(f"{path}: kind {manifest.kind!r} differs from the file name")
    unknown = sorted(set(manifest.encrypted_transports) - set(ENCRYPTED_TRANSPORTS))
    if unknown:
        raise ManifestError(f"{path}: unknown encrypted transport(s) {', '.join(unknown)} "
                            f"(known: {', '.join(ENCRYPTED_TRANSPORTS)})")
    return manifest


@cache
def manifests() -> dict[str, Manifest]:
    """Every image kind's manifest (server kinds and image-only variants), in `order`."""
    found = [_read(path) for path in sorted(MANIFESTS.glob("*.yaml"))]
    return {m.kind: m for m in sorted(found, key=lambda m: (m.order, m.kind))}


def manifest(kind: str) -> Manifest:
    try:
        return manifests()[kind]
    except KeyError:
        raise ManifestError(f"no manifest for kind {kind!r} "
                            f"(known: {', '.join(manifests())})") from None


def server_kinds() -> list[str]:
    """The server kinds (the values of the `dnslab.server` label), sorted by name."""
    return sorted(k for k, m in manifests().items() if m.variant_of is None)


def kinds_for_role(role: str) -> list[str]:
    """The server kinds a node of `role` may run, sorted by name."""
    return [k for k in server_kinds() if role in manifests()[k].roles]


def xot_kinds() -> list[str]:
    """The server kinds that transfer zones over TLS (XoT), sorted by name."""
    return [k for k in server_kinds() if manifests()[k].xot]


def kinds_serving(transport: str) -> list[str]:
    """The server kinds whose packaged version serves `transport` (udp, tcp: every kind with
    a daemon; dot, doh: those whose manifest lists it), sorted by name."""
    return [k for k in server_kinds() if manifests()[k].binary and
            (transport in ("udp", "tcp") or transport in manifests()[k].encrypted_transports)]


def pinned_packages(kind: str) -> list[str]:
    """`package=version` for each package `kind`'s image pins (`Image.packages`)."""
    image = manifest(kind).image
    pins = []
    for entry in image.packages or (image.package,):
        if isinstance(entry, dict):
            pins += [f"{package}={_pinned_version(str(at))}" for package, at in entry.items()]
        else:
            pins.append(f"{entry}={image.version}")
    return pins


def _pinned_version(at: str) -> str:
    """A pin's version: `at` itself when it is a Debian version (those start with a digit,
    Debian policy 5.6.12), else the image version of kind `at`."""
    return at if at[:1].isdigit() else manifest(at).image.version


# installed in every image beside its own packages (images/common/Dockerfile)
BASE_PACKAGES = ("iproute2",)


def root_packages(kind: str) -> list[str]:
    """What a root file system for `kind`'s nodes holds beside its suite's minimal system
    (dnslab/runtime/rootfs.py): the image's pinned packages (`package=version`), iproute2
    and its extra packages, i.e. its image's packages but tini, the container's init."""
    image = manifest(kind).image
    return [*pinned_packages(kind), *BASE_PACKAGES, *image.extra_packages]


def build_args(kind: str) -> dict[str, str]:
    """The build arguments of `kind`'s image, as images/common/Dockerfile reads them."""
    this = manifest(kind)
    image = this.image
    pins = pinned_packages(kind)
    recorded = image.recorded_packages or [pin.split("=", 1)[0] for pin in pins]
    return {"IMAGE_DIR": image.dir,
            "IMAGE_DESCRIPTION": this.description,
            "SERVER_KIND": this.server,
            "PACKAGE_VERSION": image.version,
            "PINNED_PACKAGES": " ".join(pins),
            "EXTRA_PACKAGES": " ".join(image.extra_packages),
            "RECORDED_PACKAGES": " ".join(recorded),
            "DPKG_PATH_EXCLUDES": " ".join(image.dpkg_path_excludes),
            "IMAGE_COMMAND": " ".join(image.command or this.version_command)}
