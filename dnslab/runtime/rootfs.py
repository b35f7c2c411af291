"""Root file systems on the netns runtime: a node whose software the host's packages do not
provide runs from a root file system of its Debian suite.

Two kinds of node do: one that runs another version of its kind than the host's package
(`bind@9.16`: BIND 9.16 from Debian 11; `bind@9.20` on a Debian 12 host), and one whose
kind's manifest asks for a newer host package than the host has (`minimum_versions`, e.g.
the client's dnsperf >= 2.13.1, which Debian 12's 2.10 is not: it stalls on a TCP answer over
16 KiB; a Debian 13 host's 2.14 is used as it is). Such a node's root holds its version's
image packages (`manifest.root_packages`: the pinned ones, iproute2, the extras) from that
version's suite, and is keyed by exactly that:
(suite, packages@versions), `build/rootfs/<suite>-<key>/`, made once and reused until the list
changes, by whichever of these comes first:
- the version's image, when Docker has it (`docker export`, seconds: CI builds the images
  before the netns tests), checked to hold the pinned versions;
- debootstrap (`scripts/make-rootfs.sh`: the suite from the host's Debian mirror, then the
  packages; under a minute on a fast mirror): no container engine is needed, so a newcomer's
  first command on the netns runtime does not start needing one.

The runtime starts the node's `run.sh`, and runs every command in the node (`lab exec`, the
procedures' tools), chrooted into the root: in the node's network namespace and a private
mount namespace that bind-mounts exactly what the container would get (the node state's
`mounts`, which the rendered clab file binds: build/ with the lab's own static tools such as
build/bin/dnsload, results/), plus /dev, /proc and /sys. As in the container, a command
starts in `/`. No container engine runs the process: the runtime's own supervision, logs,
sysctls and teardown apply to it as to every other node.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from dnslab import paths
from dnslab.errors import LabError
from dnslab.servers import manifest as manifests

STAMP = ".dnslab-root"
VERSIONS_TXT = Path("usr/share/dnslab/versions.txt")
DEBOOTSTRAP_TIMEOUT_S = 1800


@dataclass(frozen=True)
class SuiteRoot:
    """The root file system a version's nodes run from: its image's suite and packages."""

    kind: str  # kind@version
    suite: str
    # what it holds beside the suite's minimal system: `package=version` pins and names
    packages: tuple[str, ...]
    # the image with the same packages, exported when Docker has it
    image: str

    @property
    def key(self) -> str:
        """What the root is, as a short hash: its suite and packages (their order aside)."""
        wanted = json.dumps({"suite": self.suite, "packages": sorted(self.packages)})
        return hashlib.sha256(wanted.encode()).hexdigest()[:16]

    @property
    def path(self) -> Path:
        return paths.BUILD / "rootfs" / f"{self.suite}-{self.key}"

    @property
    def pins(self) -> dict[str, str]:
        return dict(p.split("=", 1) for p in self.packages if "=" in p)


def suite_root(kind: str) -> SuiteRoot:
    """The root of a kind's version (`bind@9.16`; a kind alone: its default version)."""
    found = manifests.kind_version(kind)
    return SuiteRoot(found.key, found.image.suite, tuple(manifests.root_packages(found.key)),
                     found.image.reference)


def suite_checkers_root(suite: str) -> SuiteRoot:
    """One root holding every server version of `suite` at once (each one's root packages):
    where the configuration checkers of those versions run (tests/unit/
    test_version_configs.py), one debootstrap a suite instead of one a version. A suite with
    one version has exactly that version's root (exported from its image when Docker has it)."""
    keys = [k for k in manifests.image_keys() if manifests.kind_version(k).image.suite == suite
            and manifests.manifest(manifests.kind_version(k).kind).config_check]
    if not keys:
        suites = {manifests.kind_version(k).image.suite for k in manifests.image_keys()}
        raise LabError(f"no version of any kind is from {suite}",
                       hint="suites: " + ", ".join(sorted(suites)))
    if len(keys) == 1:
        return suite_root(keys[0])
    packages = sorted({p for k in keys for p in manifests.root_packages(k)})
    return SuiteRoot(f"{suite} checkers", suite, tuple(packages), "")


def version_at_least(version: str, minimum: str) -> bool:
    """Whether Debian version `version` is `minimum` or later (dpkg's own comparison:
    2.10.0-2 < 2.13.1 <= 2.13.1-1 < 2.14.0-5; 2.13.1~rc1-1 < 2.13.1)."""
    proc = subprocess.run(["dpkg", "--compare-versions", version, "ge", minimum],
                          capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        raise LabError(f"cannot compare Debian versions {version!r} and {minimum!r}: "
                       + proc.stderr.strip(), hint="check the manifest's minimum_versions")
    return proc.returncode == 0


def shortfall(kind: str, installed: Mapping[str, str | None]) -> list[str]:
    """What of the kind's `minimum_versions` the installed packages (package -> Debian
    version, None: not installed) do not meet, one phrase each; empty: they serve."""
    wanted = manifests.manifest(kind).minimum_versions
    short = []
    for package, minimum in sorted(wanted.items()):
        have = installed.get(package)
        if have is None:
            short.append(f"{package} is not installed (the lab needs {minimum} or later)")
        elif not version_at_least(have, minimum):
            short.append(f"{package} is {have} (the lab needs {minimum} or later)")
    return short


def read_stamp(root: Path) -> dict:
    """What a root says of itself (suite, packages, key, source, versions); {} if none."""
    try:
        return json.loads((root / STAMP).read_text())
    except (OSError, json.JSONDecodeError):
        return {}


def describe(root: Path) -> str:
    """One line for a run's records: "trixie root file system (debootstrap)", or "(image
    dnslab/tools:2.14.0-5)" for one exported from that image."""
    stamp = read_stamp(root)
    words = str(stamp.get("source", "")).split()
    source = " ".join(words[:2] if words[:1] == ["image"] else words[:1])
    return f"{stamp.get('suite', '?')} root file system" + (f" ({source})" if source else "")


def ensure_root(root: SuiteRoot, node: str, why: str = "") -> Path:
    """The root's folder, made now when missing (`why`: the reason said while it is made).
    One process makes it while others wait (a lock beside it)."""
    if read_stamp(root.path).get("key") == root.key:
        return root.path
    root.path.parent.mkdir(parents=True, exist_ok=True)
    with open(root.path.with_name(root.path.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if read_stamp(root.path).get("key") == root.key:
            return root.path
        started = time.monotonic()
        tmp = root.path.with_name(root.path.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        source = _export_image(root, tmp)
        if source is None:
            source = _debootstrap(root, tmp, node, why)
        stamp = {"kind": root.kind, "suite": root.suite, "packages": sorted(root.packages),
                 "key": root.key, "source": source, "versions": _versions(tmp),
                 "seconds": round(time.monotonic() - started, 1),
                 "made": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}
        (tmp / STAMP).write_text(json.dumps(stamp, indent=1))
        shutil.rmtree(root.path, ignore_errors=True)
        tmp.rename(root.path)
    return root.path


def _versions(root: Path) -> dict[str, str]:
    """The package versions a root records (versions.txt: `package[:arch] version` lines)."""
    try:
        lines = (root / VERSIONS_TXT).read_text().splitlines()
    except OSError:
        return {}
    return {name.split(":")[0]: version for name, _, version in
            (line.partition("\t") for line in lines) if version}


def _docker(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout,
                          check=False)


def _image_id(image: str) -> str | None:
    """The image's ID, or None when Docker is not usable or does not have it."""
    if not image or shutil.which("docker") is None:
        return None
    try:
        res = _docker("image", "inspect", "--format", "{{.Id}}", image, timeout=30)
    except subprocess.TimeoutExpired:
        return None
    return res.stdout.strip() if res.returncode == 0 else None


def _export_image(root: SuiteRoot, tmp: Path) -> str | None:
    """The root from the kind's image into `tmp` when Docker has it and it holds the pinned
    versions; returns its source ("image <reference> <id>"), else None (nothing left)."""
    image_id = _image_id(root.image)
    if image_id is None:
        return None
    tmp.mkdir(parents=True)
    created = _docker("create", root.image, "true")
    if created.returncode != 0:
        raise LabError(f"cannot create a container from {root.image}: {created.stderr.strip()}",
                       hint="check `docker image ls`; rebuild with sudo make images")
    cid = created.stdout.strip()
    try:
        export = subprocess.Popen(["docker", "export", cid], stdout=subprocess.PIPE)
        untar = subprocess.run(["tar", "-x", "-C", str(tmp), "--numeric-owner"],
                               stdin=export.stdout, capture_output=True, text=True)
        assert export.stdout is not None
        export.stdout.close()
        if export.wait() != 0 or untar.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            raise LabError(f"exporting {root.image} failed: {untar.stderr.strip()[-300:]}",
                           hint=f"free disk space under {paths.BUILD}, then retry")
    finally:
        _docker("rm", "-f", cid)
    found = _versions(tmp)
    stale = {p: v for p, v in root.pins.items() if found.get(p) != v}
    if stale:  # an image built from an older manifest: not this root
        print(f"rootfs: image {root.image} holds {_listed(stale, found)}, not the manifest's "
              "versions; building the root with debootstrap instead", file=sys.stderr)
        shutil.rmtree(tmp, ignore_errors=True)
        return None
    return f"image {root.image} {image_id}"


def _listed(wanted: dict[str, str], found: dict[str, str]) -> str:
    return ", ".join(f"{p} {found.get(p, 'none')}" for p in sorted(wanted))


def _debootstrap(root: SuiteRoot, tmp: Path, node: str, why: str) -> str:
    """The root made with debootstrap into `tmp` (scripts/make-rootfs.sh); its source."""
    if shutil.which("debootstrap") is None or os.geteuid() != 0:
        raise LabError(
            f"node {node!r} runs from a {root.suite} root file system"
            + (f" ({why})" if why else "") + ", which is not built yet, and "
            + ("debootstrap is not installed" if os.geteuid() == 0 else "building it needs root")
            + f" (nor does Docker have image {root.image})",
            hint="sudo make setup (installs debootstrap), then retry as root; or build the "
            "image: sudo make images; or use RUNTIME=clab")
    print(f"rootfs: node {node!r} runs from a {root.suite} root file system"
          + (f" ({why})" if why else "") + f": building it with debootstrap into {root.path} "
          "(once; about a minute)", file=sys.stderr)
    log = root.path.with_name(root.path.name + ".log")
    script = paths.REPO / "scripts" / "make-rootfs.sh"
    with open(log, "w") as handle:
        try:
            proc = subprocess.run([str(script), root.suite, str(tmp), *root.packages],
                                  stdout=handle, stderr=subprocess.STDOUT,
                                  timeout=DEBOOTSTRAP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc = None
    if proc is None or proc.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        tail = log.read_text(errors="replace").strip().splitlines()[-1:] or ["no output"]
        raise LabError(f"building the {root.suite} root file system for node {node!r} failed: "
                       f"{tail[0]}", hint=f"see {log}; the packages must be in the suite: "
                       + " ".join(root.packages))
    return f"debootstrap {root.suite}"


def chroot_argv(root: Path, binds: list[str], argv: list[str]) -> list[str]:
    """The command that runs `argv` inside `root` with `binds` mounted at their own paths.

    Run it inside the node's namespace (`ip netns exec`, whose /sys is the namespace's);
    `unshare --mount` keeps every mount private to the command, so they vanish with it and
    the host's mount table never changes. Each step execs the next, so the command keeps the
    process (a signal, a wait4's rusage reach it)."""
    lines = ["set -e", f"R={shlex.quote(str(root))}",
             'mount --bind /dev "$R/dev"', 'mount -t proc proc "$R/proc"',
             'mount --rbind /sys "$R/sys"']
    for folder in binds:  # a missing one made, as Docker makes a bind's source (results/)
        quoted = shlex.quote(folder)
        lines += [f'mkdir -p {quoted} "$R"{quoted}', f'mount --bind {quoted} "$R"{quoted}']
    lines.append(f'exec chroot "$R" {shlex.join(argv)}')
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", "\n".join(lines)]
