"""Verdicts are evidence only if a rerun repeats them: the kept full runs' repetitions drawn
again (`analysis.synthetic.resample`: a repetition's cells together, the rounds of the
trials, a cell's own repetition lists; each draw keeps two or more distinct repetitions),
and every copy judged again. No claim may come out reproduced in one copy and not reproduced
in another (or in the kept run): where the repetitions cannot tell, the verdict says
"inconclusive" with its interval.

The kept runs are every finding's runs of its full scale's shape (`fixtures.full_scale_runs`)
and the runs its NOTES.md reports, rebuilt as fixtures (`fixtures.like_<run>`: no real run
folder is on this machine): F3's 2712, 8f88 and 47d8, whose F3.default.failure-time and
F3.xot.not-slower flipped under the point rules. The draws are seeded; DNSLAB_RESAMPLES
(default 5) sets how many copies of each run are judged."""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from analysis.claim import JUDGED, ONE_MEASUREMENT
from analysis.compare import agreement
from analysis.rundata import load_run
from analysis.stats import WITHIN_ONE_RUN
from analysis.synthetic import repetition_units, resample
from analysis.verdicts import evaluate
from dnslab.findings import all_findings
from experiments.f3_xfr import fixtures as f3_fx

RESAMPLES = int(os.environ.get("DNSLAB_RESAMPLES", "3"))
SEED = 41


def kept_runs() -> list[tuple[str, Callable[[Path], Path]]]:
    """(name, builder) of every package's full-scale runs and NOTES-shaped `like_<run>`."""
    found = []
    for finding in all_findings():
        fixtures = finding.module("fixtures")
        if fixtures is None:
            continue
        found += [(f"{finding.id} {name}", build)
                  for name, build in getattr(fixtures, "full_scale_runs", list)()]
        for name, build in sorted(vars(fixtures).items()):
            if name.startswith("like_") and callable(build) \
                    and len(inspect.signature(build).parameters) == 1:
                found.append((f"{finding.id} {name}", build))
    return found


RUNS = kept_runs()


def verdicts(run: Path) -> dict[str, dict]:
    found, errors = evaluate(load_run(run))
    assert errors == []
    return {v["claim_id"]: v for v in found}


def statuses_over_resamples(build: Callable[[Path], Path], root: Path, count: int,
                            seed: int = SEED) -> dict[str, list[str]]:
    """{claim: [status of the kept run, then of each resampled copy]}."""
    kept = build(root / "kept")
    judged = verdicts(kept)
    seen = {c: [v["status"]] for c, v in judged.items()}
    if not repetition_units(kept):  # nothing to draw again: every figure one measurement
        assert all(v["basis"] == ONE_MEASUREMENT or v["intervals"] and all(
            i["method"] in WITHIN_ONE_RUN for i in v["intervals"])
            for v in judged.values() if v["status"] in JUDGED), {
            c: v["basis"] for c, v in judged.items()}
        return seen
    rng = np.random.default_rng(seed)
    for k in range(count):
        copy = resample(kept, root / "resampled", rng, f"20300101T000000Z-{k:04x}")
        for claim_id, v in verdicts(copy).items():
            seen.setdefault(claim_id, []).append(v["status"])
    return seen


@pytest.mark.parametrize("name, build", RUNS, ids=[n for n, _ in RUNS])
def test_no_verdict_flips_between_resampled_repetitions(tmp_path: Path, name: str,
                                                        build: Callable[[Path], Path]) -> None:
    seen = statuses_over_resamples(build, tmp_path, RESAMPLES)
    flips = {c: s for c, s in seen.items() if {"reproduced", "not_reproduced"} <= set(s)}
    assert not flips, flips


def test_the_resampler_draws_whole_repetitions_again(tmp_path: Path) -> None:
    """A repetition's cells are drawn together (its TCP and TLS pair stays a pair, in the
    run's order), every draw has two distinct repetitions or more, the calibrations stay."""
    kept = f3_fx.like_8f88(tmp_path / "kept")
    original = load_run(kept)
    times = {(c.params.get("transport"), c.params.get("rep"), c.params.get("profile")):
             c.csv("zones_done.csv")["zones_served"].tolist() for c in original.cells}
    rng = np.random.default_rng(SEED)
    for k in range(6):
        copy = load_run(resample(kept, tmp_path / "copies", rng, f"20300101T000000Z-{k:04x}"))
        assert [c.params for c in copy.cells] == [c.params for c in original.cells]
        drawn = []
        for rep in (0, 1, 2):
            mine = {(c.params["transport"], c.params["profile"]): c
                    for c in copy.cells if c.params.get("rep") == rep}
            served = mine[("tcp", "wide-ports")].csv("zones_done.csv")["zones_served"].tolist()
            source = next(r for r in (0, 1, 2) if times[("tcp", r, "wide-ports")] == served)
            drawn.append(source)
            # its TLS cold start is the same repetition's
            assert mine[("tls", "wide-ports")].csv("zones_done.csv")[
                "zones_served"].tolist() == times[("tls", source, "wide-ports")]
        assert len(set(drawn)) >= 2, drawn


def test_the_three_full_runs_of_xfr_30k_zones_no_longer_flip(tmp_path: Path) -> None:
    """Runs 2712, 8f88 and 47d8 (NOTES.md, issue 41) gave F3.default.failure-time reproduced,
    reproduced, not reproduced and F3.xot.not-slower reproduced (1.07x), not reproduced
    (1.24x), reproduced (1.01x) under the point rules. Judged with intervals, each claim has
    the same verdict in the three, or inconclusive ones whose intervals overlap the others'."""
    runs = [verdicts(build(tmp_path / build.__name__))
            for build in (f3_fx.like_2712, f3_fx.like_8f88, f3_fx.like_47d8)]
    for claim_id in runs[0]:
        said = agreement([r[claim_id] for r in runs])
        assert said in ("same verdict", "no flip, intervals overlap"), (claim_id, said, [
            (r[claim_id]["status"], r[claim_id]["line"]) for r in runs])
    xot = [r["F3.xot.not-slower"] for r in runs]
    assert [v["status"] for v in xot] == ["inconclusive", "not_reproduced", "inconclusive"]
    assert all(v["intervals"] and "[" in v["line"] for v in xot)
    assert {r["F3.default.failure-time"]["status"] for r in runs} == {"reproduced"}
