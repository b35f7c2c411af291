#!/usr/bin/env python3
"""Print fields of the server kinds' manifests (dnslab/servers/<kind>.yaml) for the shell
scripts, which run before the virtualenv exists (stdlib + PyYAML only; the manifests are
read by dnslab/servers/manifest.py, loaded here by path).

    scripts/manifest.py images              <kind@version> <image-dir> <package> <version>
                                            <reference> <suite> <group> <default|other>
                                            (group: a topology's group name for it, the kind
                                            for its default version, else kind + digits)
    scripts/manifest.py lab-images          the versions the lab runs unless told otherwise: each
                                            kind's default, those a topology's groups name
                                            (dnslab.version) and those an experiment's
                                            default parameters name (`bind@9.20`)
    scripts/manifest.py host-packages       the Debian packages the netns runtime needs
    scripts/manifest.py systemd-units       <package> <unit>: units to keep from starting
    scripts/manifest.py build-args KIND[@VERSION]   KEY=VALUE lines: the image's build arguments
    scripts/manifest.py field KIND[@VERSION] PATH   one field (dotted, e.g. image.suite; image is
                                            that version's); a list is printed space-separated
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


def _named_versions(value: object) -> list[str]:
    """Every `kind@version` string inside a parameter value (lists and maps walked)."""
    if isinstance(value, dict):
        return [n for v in value.values() for n in _named_versions(v)]
    if isinstance(value, list):
        return [n for v in value for n in _named_versions(v)]
    return [value] if isinstance(value, str) and "@" in value else []


def _lab_images(manifest) -> list[str]:
    import yaml

    repo = MODULE.parents[2]
    wanted = {k for k in manifest.image_keys() if manifest.kind_version(k).is_default}
    for path in sorted((repo / "topologies").glob("*.clab.yml")):
        groups = (yaml.safe_load(path.read_text()).get("topology") or {}).get("groups") or {}
        for group in groups.values():
            labels = (group or {}).get("labels") or {}
            if "dnslab.version" in labels:
                wanted.add(f"{labels['dnslab.server']}@{labels['dnslab.version']}")
    for path in sorted((repo / "experiments").glob("*/*.yaml")):
        raw = yaml.safe_load(path.read_text())
        if isinstance(raw, dict) and isinstance(raw.get("params"), dict):
            for name in _named_versions(raw["params"]):
                try:
                    wanted.add(manifest.kind_version(name).key)
                except ValueError:
                    continue
    return [k for k in manifest.image_keys() if k in wanted]


def main(argv: list[str]) -> int:
    manifest = _load_manifests()
    every = manifest.manifests().values()
    match argv:
        case ["images"]:
            for key in manifest.image_keys():
                found = manifest.kind_version(key)
                image = found.image
                group = found.kind if found.is_default else \
                    found.kind + found.version.replace(".", "")
                print(key, image.dir, image.package, image.version, image.reference,
                      image.suite, group, "default" if found.is_default else "other")
        case ["lab-images"]:
            print("\n".join(_lab_images(manifest)))
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
            found = manifest.kind_version(kind)
            if path.startswith("image."):
                print(_field(found.image, path.removeprefix("image.")))
            else:
                print(_field(manifest.manifest(found.kind), path))
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
