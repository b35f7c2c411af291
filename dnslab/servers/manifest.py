"""What one server kind is, as data: its manifest `dnslab/servers/<kind>.yaml`.

A manifest holds everything about a kind that is not behaviour: its roles, the Debian
packages the host needs (and the systemd unit to keep from starting), its daemon binary and
the other commands and files it needs, the oldest version of a host package it can use
(`minimum_versions`), its configuration files, whether it transfers over TLS, which
encrypted transports it serves (DoT, DoH), its health query and version command, and its
image (name, main package, pinned version, Debian suite, the packages it pins and adds, its
command), whose packages a root file system of that suite holds on the netns runtime
(`root_packages`, dnslab/runtime/rootfs.py). Its driver
(`dnslab/servers/<kind>.py`) holds the behaviour.

**Versions are data.** `versions:` lists the versions a kind offers, each by its label (the
upstream major.minor: `bind@9.20`) with its Debian suite and exact package version (and what
else of `image:` differs); `default_version` is the one a node runs when it names none.
Each version is an image of its own (`dnslab/bind9:9.20.30-1-deb13u1`) and, on the netns
runtime when the host's package is another version, a root file system of its suite.
`image_key("bind@9.20")` is how everything else names one: `bind` alone means its default
version, and `bind916` (the lab's name for BIND 9.16 before versions were data, in old
runs' records) means `bind@9.16`.

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
# names old runs recorded for what is now a version (`SERVERS=bind916`)
ALIASES = {"bind916": "bind@9.16"}
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
    # why this version is offered (a seed ran it, a release changed a mechanism, ...)
    note: str = ""
    # the encrypted transports this version serves when they differ from the kind's
    # (`Manifest.encrypted_transports`; BIND 9.16 serves neither DoT nor DoH)
    encrypted_transports: tuple[str, ...] | None = None
    # options of the kind's driver this version does not know: left out of its configuration
    # (BIND 9.16 has no http-* options, which 9.18 added with DoH)
    lacks_options: tuple[str, ...] = ()

    @property
    def tag(self) -> str:
        """The tag rule: the pinned version without its epoch, with every character Docker
        forbids in a tag ('~', '+', ':') as '-' (1:9.18.49-1~deb12u3 -> 9.18.49-1-deb12u3)."""
        return re.sub(r"[~+:]", "-", re.sub(r"^[0-9]*:", "", self.version))

    @property
    def reference(self) -> str:
        return f"{IMAGE_REPOSITORY}/{self.dir}:{self.tag}"

    @property
    def label(self) -> str:
        """The version's label: the upstream major.minor (1:9.20.30-1~deb13u1 -> 9.20)."""
        return version_label(self.version)


def version_label(debian_version: str) -> str:
    """The upstream major.minor of a Debian version (epoch and revision dropped)."""
    upstream = re.sub(r"^[0-9]*:", "", debian_version).split("-")[0].split("+")[0]
    return ".".join(upstream.split(".")[:2])


@dataclass(frozen=True)
class Manifest:
    """One kind (a server kind, or the client's tools), as its YAML file says."""

    kind: str
    order: int
    description: str
    # the default version's image (`versions[default_version]`)
    image: Image
    version_command: tuple[str, ...]
    # label -> that version's image, in the manifest's order
    versions: dict[str, Image] = field(default_factory=dict)
    default_version: str = ""
    roles: frozenset[str] = frozenset()
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
        """The server kind (`dnslab.server` label) a node of this kind runs."""
        return self.kind


_TUPLE_FIELDS = {"version_command", "config_check", "host_packages", "config_files", "packages",
                 "encrypted_transports", "lacks_options",
                 "extra_packages", "recorded_packages", "dpkg_path_excludes", "command"}


def _fields(cls: type, raw: dict[str, Any], path: Path) -> dict[str, Any]:
    known = set(cls.__dataclass_fields__)
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ManifestError(f"{path}: unknown field(s) {', '.join(unknown)} "
                            f"(known: {', '.join(sorted(known))})")
    return {key: tuple(value) if key in _TUPLE_FIELDS else value for key, value in raw.items()}


def _versions(raw: dict[str, Any], path: Path) -> tuple[dict[str, Image], str]:
    """Each version's image (the shared `image:` fields, then the version's own) and the
    default label. Without `versions:`, `image:` is the one version."""
    shared = raw["image"]
    rows = raw.get("versions") or {}
    if not isinstance(rows, dict) or not all(isinstance(v, dict) for v in rows.values()):
        raise ManifestError(f"{path}: `versions` maps a label (\"9.20\") to that version's "
                            "image fields (suite, version, ...)")
    if not rows:
        rows = {version_label(str(shared.get("version", ""))): {}}
    versions = {}
    for label, row in rows.items():
        image = Image(**_fields(Image, {**shared, **row}, path))
        if str(label) != image.label:
            raise ManifestError(f"{path}: version {label!r} holds {image.version}, whose label "
                                f"is {image.label!r}")
        versions[str(label)] = image
    default = str(raw.get("default_version") or next(iter(versions)))
    if default not in versions:
        raise ManifestError(f"{path}: default_version {default!r} is not one of its versions "
                            f"({', '.join(versions)})")
    return versions, default


def _read(path: Path) -> Manifest:
    raw = yaml.safe_load(path.read_text())
    if not isinstance(raw, dict) or not isinstance(raw.get("image"), dict):
        raise ManifestError(f"{path}: a manifest is a mapping with an `image` mapping")
    fields = _fields(Manifest, raw, path)
    try:
        fields["versions"], fields["default_version"] = _versions(raw, path)
    except TypeError as exc:
        raise ManifestError(f"{path}: {exc}") from None
    fields["image"] = fields["versions"][fields["default_version"]]
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
    """Every kind's manifest (the server kinds and the client's tools), in `order`."""
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
    return sorted(manifests())


@dataclass(frozen=True)
class KindVersion:
    """One version of one kind: what `bind@9.20` names."""

    kind: str
    version: str

    @property
    def key(self) -> str:
        return f"{self.kind}@{self.version}"

    @property
    def image(self) -> Image:
        return manifest(self.kind).versions[self.version]

    @property
    def is_default(self) -> bool:
        return self.version == manifest(self.kind).default_version

    def __str__(self) -> str:
        return self.key


def kind_version(name: str) -> KindVersion:
    """`kind` (its default version), `kind@label` or an old alias (`bind916`), checked: an
    unknown kind or a version the lab does not offer is a ManifestError naming what it
    offers."""
    name = ALIASES.get(name, name)
    kind, at, label = name.partition("@")
    found = manifest(kind)
    if not at:
        return KindVersion(kind, found.default_version)
    if label not in found.versions:
        offered = ", ".join(f"{kind}@{v}" for v in found.versions)
        raise ManifestError(f"{name}: the lab offers no {kind} {label} (it offers {offered}; "
                            "a version is the upstream major.minor)")
    return KindVersion(kind, label)


def image_key(name: str) -> str:
    """The canonical name of a kind's version, `kind@label` (`bind` -> `bind@9.18`)."""
    return kind_version(name).key


def short_name(name: str) -> str:
    """The shortest name of a version: its kind alone for the default version (`bind@9.18`
    -> `bind`), else `kind@version`."""
    found = kind_version(name)
    return found.kind if found.is_default else found.key


def image_keys() -> list[str]:
    """Every version of every kind, `kind@label`, in manifest order."""
    return [f"{kind}@{label}" for kind, m in manifests().items() for label in m.versions]


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


def encrypted_transports_of(name: str) -> tuple[str, ...]:
    """The encrypted transports the version `name` (`bind@9.16`; a kind: its default) serves."""
    found = kind_version(name)
    own = found.image.encrypted_transports
    return manifest(found.kind).encrypted_transports if own is None else own


def pinned_packages(kind: str) -> list[str]:
    """`package=version` for each package the image of `kind` (or `kind@label`) pins
    (`Image.packages`)."""
    image = kind_version(kind).image
    pins = []
    for entry in image.packages or (image.package,):
        if isinstance(entry, dict):
            pins += [f"{package}={_pinned_version(str(at))}" for package, at in entry.items()]
        else:
            pins.append(f"{entry}={image.version}")
    return pins


def _pinned_version(at: str) -> str:
    """A pin's version: `at` itself when it is a Debian version (those start with a digit,
    Debian policy 5.6.12), else the image version of `at` (`bind@9.20`, or a kind)."""
    return at if at[:1].isdigit() else kind_version(at).image.version


# installed in every image beside its own packages (images/common/Dockerfile)
BASE_PACKAGES = ("iproute2",)


def root_packages(kind: str) -> list[str]:
    """What a root file system for `kind`'s nodes holds beside its suite's minimal system
    (dnslab/runtime/rootfs.py): the image's pinned packages (`package=version`), iproute2
    and its extra packages, i.e. its image's packages but tini, the container's init."""
    image = kind_version(kind).image
    return [*pinned_packages(kind), *BASE_PACKAGES, *image.extra_packages]


def build_args(kind: str) -> dict[str, str]:
    """The build arguments of the image of `kind` (or `kind@label`), as
    images/common/Dockerfile reads them."""
    this = manifest(kind_version(kind).kind)
    image = kind_version(kind).image
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
