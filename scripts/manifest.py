#!/usr/bin/env python3
"""Print fields of the server kinds' manifests (dnslab/servers/<kind>.yaml) for the shell
scripts, which run before the virtualenv exists (stdlib + PyYAML only; the manifests are
read by dnslab/servers/manifest.py, loaded here by path).

    scripts/manifest.py images              <image-kind> <image-dir> <package> <version> <reference>
    scripts/manifest.py host-packages       the Debian packages the netns runtime needs
    scripts/manifest.py systemd-units       <package> <unit>: units to keep from starting
    scripts/manifest.py build-args KIND     KEY=VALUE lines: the image's build arguments
    scripts/manifest.py field KIND PATH     one field (dotted, e.g. image.suite); a list is
                                            printed space-separated
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

MODULE = Path(__file__).resolve().parents[1] / "dnslab" / "servers" / "manifest.py"


def _load_manifests():
    spec = importlib.util.spec_from_file_location("dnslab_manifest", MODULE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def _field(value: object, path: str) -> str:
    for part in path.split("."):
        value = getattr(value, part)
    if isinstance(value, (tuple, list, frozenset)):
        return " ".join(sorted(value) if isinstance(value, frozenset) else value)
    return "" if value is None else str(value)


def main(argv: list[str]) -> int:
    manifest = _load_manifests()
    every = manifest.manifests().values()
    match argv:
        case ["images"]:
            for m in every:
                image = m.image
                print(m.kind, image.dir, image.package, image.version, image.reference)
        case ["host-packages"]:
            print("\n".join(pkg for m in every for pkg in m.host_packages))
        case ["systemd-units"]:
            for m in every:
                if m.systemd_unit:
                    print(m.package, m.systemd_unit)
        case ["build-args", kind]:
            for key, value in manifest.build_args(kind).items():
                print(f"{key}={value}")
        case ["field", kind, path]:
            print(_field(manifest.manifest(kind), path))
        case _:
            print(__doc__.split("\n\n", 1)[1].rstrip(), file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except ValueError as exc:  # ManifestError: one line
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)
