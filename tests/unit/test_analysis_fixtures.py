"""The committed fixture runs are exactly what their generator writes (deterministic, small)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "results"


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.suffix != ".py" and "__pycache__" not in p.parts}


def test_generator_reproduces_committed_fixtures(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("fixture_gen", FIXTURES / "generate.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.generate(tmp_path)
    assert _files(tmp_path) == _files(FIXTURES)


def test_fixtures_stay_small() -> None:
    sizes = {name: len(data) for name, data in _files(FIXTURES).items()}
    assert max(sizes.values()) < 8_000
    assert sum(sizes.values()) < 120_000
