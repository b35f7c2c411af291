"""Every version of every server kind (its manifest's `versions`) renders configurations that
version's own checker accepts, in every role the kind takes, by hand and with the options
experiments pass: the host's checker when the host's package is that version, else the
checker of that version's Debian suite, run chrooted in one root file system per suite that
holds all its versions (`rootfs.suite_checkers_root`: debootstrapped once, or the version's
image exported when a suite has one version). Parametrized over `manifest.image_keys()`: a
new version is a manifest row and gets this test without new code. The benchmark-grade
rules (workers = cores given, no rate limiting, no query log) are the renderer's for every
version (tests/unit/test_server_configs.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from dnslab.runtime import rootfs
from dnslab.servers import driver
from dnslab.servers.manifest import image_keys, kind_version, version_label
from tests.unit.test_server_configs import experiment_options, render_one

VERSIONS = [key for key in image_keys() if driver(kind_version(key).kind).runs_daemon]


def host_has(package: str, label: str) -> bool:
    """Whether the host's `package` is version `label` (its upstream major.minor)."""
    proc = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", package],
                          capture_output=True, text=True)
    return proc.returncode == 0 and version_label(proc.stdout.strip()) == label


def checker_argv(key: str, argv: list[str], folder: Path) -> list[str]:
    """`argv` as the version's checker runs it: on the host, or chrooted in its suite's root
    with `folder` (the rendered lab) bound at its own path."""
    found = kind_version(key)
    if host_has(found.image.package, found.version):
        return argv
    if os.geteuid() != 0 or shutil.which("debootstrap") is None:
        pytest.skip(f"{key}'s checker runs in a {found.image.suite} root: needs root and "
                    "debootstrap (make setup)")
    root = rootfs.suite_checkers_root(found.image.suite)
    path = rootfs.ensure_root(root, f"{found.image.suite} checkers", "configuration checks")
    return rootfs.chroot_argv(path, [str(folder)], argv)


@pytest.mark.parametrize("key", VERSIONS)
def test_every_version_renders_configs_its_own_checker_accepts(key, tmp_path):
    found = kind_version(key)
    drv = driver(found.kind)
    checked = []
    for role in sorted(drv.roles):
        for options in (None, experiment_options(found.kind, role, found.version)):
            label = "by hand" if options is None else "experiment options"
            folder = tmp_path / f"{role}-{'hand' if options is None else 'exp'}"
            rendered = render_one(folder, found.kind, role, options=options,
                                  version=found.version)
            argv = checker_argv(key, drv.config_check_argv(rendered.node_dir("under-test")),
                                tmp_path)
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=120)
            assert proc.returncode == 0, (f"{key} as {role} ({label}): {' '.join(argv[-3:])}:"
                                          f"\n{proc.stdout}{proc.stderr}")
            checked.append((role, label))
    assert len(checked) == 2 * len(drv.roles)
