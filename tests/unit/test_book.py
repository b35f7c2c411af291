"""The findings book built from the named synthetic runs: every finding and verdict on the
page, checks of the lab apart, the newest complete run of each experiment chosen, the deck's
slides in order, and a book never written over another."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from analysis import book, index
from analysis.pipeline import analyse
from dnslab import findings, results
from dnslab.errors import LabError
from experiments.f3_xfr import fixtures as f3_fx
from tests.fixtures import runs


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = runs.build_standard(tmp_path_factory.mktemp("results"))
    for folder in results.run_dirs(root):
        if results.peek_meta(folder).get("complete"):
            analyse(folder, update_index=False)
    return root


def test_newest_complete_run_of_each_experiment(root: Path) -> None:
    chosen = {p.parent.name: p.name for p in book.newest_runs(root)}
    # the newest, 20250104T000000Z-interrupted, is not complete: the one before it is chosen
    assert chosen["xfr-30k-zones"] == "20250103T000000Z-missing"
    assert set(chosen) == {"xfr-30k-zones", "xfr-tld", "xfr-smallest", "xfr-zone-sweep",
                           "tcp-fallback", "dnsdist-listeners", "resolver-cache", "tcp-sysctl"}


def test_the_book_shows_every_finding_and_verdict(root: Path, tmp_path: Path) -> None:
    out = book.build(results_root=root, out=tmp_path / "book")
    html = (out / "index.html").read_text()
    for finding in findings.all_findings():
        assert f"{finding.id}: {finding.title}" in html
    verdicts = [v for rp in book.collect(book.newest_runs(root), tmp_path / "again")
                for v in rp.verdicts(reproductions=True) + rp.verdicts(reproductions=False)]
    assert verdicts
    for v in verdicts:
        assert book.line_of(v).split(":")[0] in html
    # the one experiment without a run says how to make one
    assert "make experiment EXP=tcp-fallback-cache" in html
    # every image the page shows was copied beside it
    images = re.findall(r'<img src="([^"]+)"', html)
    assert images and all((out / src).is_file() for src in images)
    slides = (out / "slides.txt").read_text().splitlines()
    assert slides[0].startswith("DNS performance lab") and slides[-1] == "Environment"
    for finding in findings.all_findings():
        assert f"{finding.id}: {finding.title}" in slides
    assert "Census: judged, and what the machine or a setting left unjudged" in slides
    # per finding: judged / not applicable (machine) / not applicable (setting)
    pages = {p.id: p for p in book.collect(book.newest_runs(root), tmp_path / "census")}
    assert re.fullmatch(r"\d+ judged.*", pages["F3"].census), pages["F3"].census
    assert f"Census: {pages['F3'].census}" in html
    assert (out / "deck.pdf").read_bytes().startswith(b"%PDF")
    assert len(re.findall(rb"/Type\s*/Page\b", (out / "deck.pdf").read_bytes())) == len(slides)


def test_checks_of_the_lab_are_apart_from_reproductions(root: Path, tmp_path: Path) -> None:
    pages = {p.id: p for p in book.collect(book.newest_runs(root), tmp_path)}
    kinds = {v["kind"] for v in pages["F3"].verdicts(reproductions=False)}
    assert kinds and "reproduction" not in kinds
    assert all(v["kind"] == "reproduction" for v in pages["F3"].verdicts(reproductions=True))


def test_an_older_summarys_check_is_not_worded_as_a_reproduction() -> None:
    """A summary from before verdicts had a slide line: the line is made from the status, and
    a lab check that held says so, not "Reproduced"."""
    check = {"status": "reproduced", "kind": "lab_check", "measured": "no failure"}
    assert book.line_of(check) == "Lab check holds: no failure"
    assert book.line_of({"status": "reproduced", "measured": "x"}) == "Reproduced: x"


def test_a_book_is_never_written_over_another(root: Path, tmp_path: Path) -> None:
    first = book.build(results_root=root)
    second = book.build(results_root=root)
    assert first != second and first.parent == second.parent == root / "book"
    with pytest.raises(LabError):
        book.build(results_root=root, out=first)


def test_a_folder_that_is_no_run_is_one_line(root: Path, tmp_path: Path) -> None:
    with pytest.raises(LabError) as exc:
        book.build([tmp_path], results_root=root, out=tmp_path / "b")
    assert "RUNS=" in (exc.value.hint or "")


def test_a_bad_run_leaves_no_book_folder(tmp_path: Path) -> None:
    """`make book` with a run whose summary is broken said so after making an empty book
    folder; now the runs are checked first, and a book that fails later is removed."""
    run = f3_fx.write_xfr_run(tmp_path / "results", "xfr-smallest",
                              f3_fx.timed_cells({"bind": [0.01, 0.012, 0.011]}, error_s=0.01,
                                                records=2))
    (run / "summary.json").write_text("{not json")
    with pytest.raises(LabError, match="not JSON"):
        book.build([run], results_root=tmp_path / "results")
    assert not (tmp_path / "results" / "book").exists()
    with pytest.raises(LabError, match="not JSON"):
        book.build([run], results_root=tmp_path / "results", out=tmp_path / "mine")
    assert not (tmp_path / "mine").exists()


def test_a_book_that_fails_on_the_way_is_removed(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    run = f3_fx.write_xfr_run(tmp_path / "results", "xfr-smallest",
                              f3_fx.timed_cells({"bind": [0.01, 0.012, 0.011]}, error_s=0.01,
                                                records=2))

    def no_deck(*args: object) -> list[str]:
        raise LabError("the deck could not be drawn", hint="a test")

    monkeypatch.setattr(book, "write_deck", no_deck)
    with pytest.raises(LabError, match="deck"):
        book.build([run], results_root=tmp_path / "results")
    assert not (tmp_path / "results" / "book").exists()
    given = tmp_path / "empty"
    given.mkdir()
    with pytest.raises(LabError, match="deck"):
        book.build([run], results_root=tmp_path / "results", out=given)
    assert given.is_dir() and not any(given.iterdir())  # as it was given


def test_a_run_not_analysed_yet_is_analysed_first(tmp_path: Path) -> None:
    run = f3_fx.write_xfr_run(tmp_path, "xfr-smallest",
                              f3_fx.timed_cells({"bind": [0.01, 0.012, 0.011]}, error_s=0.01,
                                                records=2))
    assert not (run / "summary.json").exists()
    out = book.build([run], results_root=tmp_path, out=tmp_path / "book")
    assert (run / "summary.json").exists()
    assert "smallest delay" in (out / "index.html").read_text()  # its figure, from its analysis


def test_the_environment_names_each_package_version_once(root: Path, tmp_path: Path) -> None:
    pages = book.collect(book.newest_runs(root), tmp_path)
    versions = {name: str(v) for p in pages for rp in p.runs
                for name, v in (rp.run.meta.get("versions") or {}).items()}
    assert versions, "the fixture runs record package versions"
    line = book.software(pages)
    for name, version in versions.items():
        assert line.count(f"{name} ") == 1 and version in line, (name, line)


def test_the_environment_names_the_images_nodes_ran_from(root: Path, tmp_path: Path) -> None:
    """SERVERS=bind916 runs BIND 9.16 from its image: the host's bind9 9.18 in `versions` is
    not what those cells measured, so the image is named too."""
    pages = book.collect(book.newest_runs(root), tmp_path)
    assert "images:" not in book.software(pages)
    pages[0].runs[0].run.meta["images"] = {"sec-bind916": "dnslab/bind9:9.16.50-1-deb11u2"}
    assert book.software(pages).endswith("; images: dnslab/bind9:9.16.50-1-deb11u2")
    rows = book.environment(pages)
    assert rows[0]["versions"].endswith("; sec-bind916 ran image dnslab/bind9:9.16.50-1-deb11u2")


def test_a_ci_run_after_a_full_one_does_not_replace_it(tmp_path: Path) -> None:
    """A speaker's book shows the full-scale run; a SCALE=ci check made later (the lab's
    own tests, a quick look) is taken only for an experiment that has no full run."""
    def made(experiment: str, run_id: str, scale: str, complete: bool = True) -> None:
        run = results.RunWriter.create(tmp_path, experiment, run_id, {"scale": scale})
        run.finish(ended=run_id, complete=complete)

    made("xfr-30k-zones", "20261127T100000Z-full", "full")
    made("xfr-30k-zones", "20261127T110000Z-ci", "ci")
    made("xfr-30k-zones", "20261127T120000Z-fullbroken", "full", complete=False)
    made("tcp-fallback", "20261127T100000Z-ci1", "ci")
    made("tcp-fallback", "20261127T110000Z-ci2", "ci")
    made("tcp-sysctl", "20261127T100000Z-ci", "ci")
    made("tcp-sysctl", "20261127T110000Z-seed", "seed")
    chosen = {p.parent.name: p.name for p in book.newest_runs(tmp_path)}
    assert chosen == {"xfr-30k-zones": "20261127T100000Z-full",
                      "tcp-fallback": "20261127T110000Z-ci2",
                      "tcp-sysctl": "20261127T110000Z-seed"}


def test_the_book_and_the_census_choose_runs_by_one_rule() -> None:
    """`results.newest_full_first`, which `newest_runs` and `make runs`' census both call:
    runs oldest first; the newest full-scale one wins, a later SCALE=ci one never does."""
    chosen = results.newest_full_first([
        ("a", True, "a-full-1"), ("a", True, "a-full-2"), ("a", False, "a-ci-3"),
        ("b", False, "b-ci-1"), ("b", False, "b-ci-2"),
        ("c", False, "c-ci-1"), ("c", True, "c-seed-2"), ("c", False, "c-ci-3")])
    assert chosen == {"a": "a-full-2", "b": "b-ci-2", "c": "c-seed-2"}
    assert results.is_full_scale({"scale": "seed"}) and results.is_full_scale({})
    assert not results.is_full_scale({"scale": "ci"})


def test_a_claim_its_newest_run_could_not_judge_shows_the_run_that_did(root: Path,
                                                                        tmp_path: Path) -> None:
    """The page shows each claim's latest evidence: where the newest run says "not
    applicable", the older full run that judged it, named in the line, and counted so."""
    pages = {p.id: p for p in book.collect(book.newest_runs(root), tmp_path)}
    page = pages["F3"]
    mine = [(v, rp.run.label) for rp in page.runs for v in rp.verdicts]
    older = {**mine[0][0], "status": "not_reproduced", "line": "Not reproduced: 1.5x"}
    page.evidence = [(older, "xfr-30k-zones/20240101T000000Z-older"), *mine[1:]]
    shown = page.verdicts(reproductions=True) + page.verdicts(reproductions=False)
    assert "Not reproduced: 1.5x (from the full run xfr-30k-zones/20240101T000000Z-older, " \
           "which ran it)" in [book.line_of(v) for v in shown]
    assert len(shown) == len(mine)
    before = index.census(v for v, _ in mine)["F3"]
    first = mine[0][0]
    expected = dict(before, not_reproduced=before["not_reproduced"] + 1)
    if first["status"] in index.JUDGED:
        expected[first["status"]] -= 1
    else:
        expected["judged"] += 1
        was = (first.get("cause") or "unclassified" if first["status"] == "not_applicable"
               else "other")
        expected[was] -= 1
    assert page.census == index.census_text(expected)


def test_the_book_built_from_a_results_root_shows_each_claims_latest_evidence(
        tmp_path: Path) -> None:
    """Two full tcp-sysctl runs: the newer ran tcp-sack-0, not tso-win-divisor-1, so its
    tso claim is "not applicable"; the book shows the older run's tso verdict, names that run
    in the line and lists it in the environment, and the census counts it."""
    from experiments.f5_tcp_sysctl import fixtures as f5_fx

    root = tmp_path / "results"
    older = f5_fx.tcp_sysctl_run(root, gain={"tso-win-divisor-1": 0.85},
                                 run_id="20250101T000000Z-0old", meta={"scale": "full"})
    newer = f5_fx.tcp_sysctl_run(root, gain={"tcp-sack-0": 1.0},
                                 run_id="20250102T000000Z-0new", meta={"scale": "full"})
    for folder in (older, newer):
        analyse(folder, update_index=False)
    out = book.build(results_root=root, out=tmp_path / "book")
    html = (out / "index.html").read_text()
    assert "(from the full run tcp-sysctl/20250101T000000Z-0old, which ran it)" in html
    pages = {p.id: p for p in book.collect(book.newest_runs(root), tmp_path / "again")}
    assert [rp.run.run_id for rp in pages["F5"].runs] == ["20250102T000000Z-0new"]
    assert "tcp-sysctl/20250101T000000Z-0old" in html.split("Environment")[-1]


def test_a_not_applicable_says_whether_the_run_lacked_the_data_or_measured_it_unmet(
        tmp_path: Path) -> None:
    """`unmet`: "absent" where the run holds no data the claim is about (no tso profile ran),
    "measured" where it measured a precondition unmet (never saturated): only the first lets
    an older run speak for the claim (`index.latest_evidence`)."""
    from experiments.f5_tcp_sysctl import fixtures as f5_fx

    summary = analyse(f5_fx.tcp_sysctl_run(tmp_path, gain={"tcp-sack-0": 1.0}, capped=True),
                      update_index=False)
    by = {v["claim_id"]: v for v in summary["verdicts"]}
    assert (by["F5.tso-win-divisor"]["status"], by["F5.tso-win-divisor"]["unmet"]) == (
        "not_applicable", "absent")
    assert (by["F5.tcp-sack"]["status"], by["F5.tcp-sack"]["unmet"]) == (
        "not_applicable", "measured")
    assert all(v["unmet"] is None for v in by.values() if v["status"] != "not_applicable")


def _tcp_sysctl_run(root: Path, run_id: str, **changed: Any) -> Path:
    """A complete full-scale tcp-sysctl run on its file's settings, except `changed`."""
    from dnslab.experiment_spec import load_spec, resolve_params
    spec = load_spec("tcp-sysctl")
    params = {**resolve_params(spec, {}, None), **changed}
    run = results.RunWriter.create(root, "tcp-sysctl", run_id,
                                   {"scale": "full", "params": params})
    (run.dir / spec.path.name).write_text(spec.path.read_text())  # as every run keeps it
    run.finish(ended=run_id, complete=True)
    return run.dir


def test_a_probe_of_other_settings_never_replaces_the_full_run(tmp_path: Path) -> None:
    """QUERIES_PER_CONN=1 TRIALS=5 at full scale asks another question than the file's own
    settings: the book and the census keep the older run on them; choosing fewer profiles and
    loads (the file's `selectors:`) is no probe, and a probe alone is still taken."""
    from dnslab.probes import changed_settings, counts_as_full
    own = _tcp_sysctl_run(tmp_path, "20261128T100000Z-own")
    probe = _tcp_sysctl_run(tmp_path, "20261128T110000Z-probe", queries_per_conn=1, trials=5)
    fewer = _tcp_sysctl_run(tmp_path / "b", "20261128T120000Z-fewer",
                            profiles=["default", "diiner"], loads=[150])
    assert changed_settings(probe, results.read_meta(probe)) == {
        "QUERIES_PER_CONN": (1, 100), "TRIALS": (5, 20)}
    assert changed_settings(own, results.read_meta(own)) == {}
    assert counts_as_full(fewer, results.read_meta(fewer))
    assert [p.name for p in book.newest_runs(tmp_path)] == ["20261128T100000Z-own"]
    # alone, the probe is what there is
    alone = _tcp_sysctl_run(tmp_path / "c", "20261128T110000Z-probe", trial_s=20)
    assert not counts_as_full(alone, results.read_meta(alone))
    assert [p.name for p in book.newest_runs(tmp_path / "c")] == ["20261128T110000Z-probe"]


def test_a_probe_is_judged_by_the_file_the_run_kept(tmp_path: Path) -> None:
    """A default changed since the run is not the run's doing (its copy of the experiment
    file says what it ran by); a parameter added since is left out; a SCALE=ci run is
    compared with the ci scale's values."""
    from dnslab.experiment_spec import load_spec, resolve_params
    from dnslab.probes import changed_settings
    spec = load_spec("tcp-sysctl")
    older = _tcp_sysctl_run(tmp_path, "20261128T100000Z-older", timeout_s=2.0)
    meta = results.read_meta(older)
    assert changed_settings(older, meta) == {"TIMEOUT_S": (2.0, 0.5)}
    kept = spec.path.read_text().replace("  timeout_s: 0.5", "  timeout_s: 2.0")
    assert kept != spec.path.read_text()
    (older / spec.path.name).write_text(kept)
    assert changed_settings(older, meta) == {}
    del meta["params"]["names"]  # as if NAMES= came after the run
    assert changed_settings(older, meta) == {}
    ci = results.RunWriter.create(tmp_path, "tcp-sysctl", "20261128T110000Z-ci",
                                  {"scale": "ci", "params": resolve_params(spec, {}, "ci")})
    assert changed_settings(ci.dir, ci.meta) == {}  # no copy kept: what it ran by is unknown
    (ci.dir / spec.path.name).write_text(spec.path.read_text())
    assert changed_settings(ci.dir, ci.meta) == {}
    ci.meta["params"]["trials"] = 20
    assert changed_settings(ci.dir, ci.meta) == {"TRIALS": (20, 3)}


def test_make_reproduces_own_departure_is_no_probe(tmp_path: Path) -> None:
    """resolver-cache at NAMES=30000 is what `make reproduce`'s plan runs (campaign.yaml says
    why): the experiment's own question; NAMES=20000 is a probe."""
    from dnslab.experiment_spec import load_spec, resolve_params
    from dnslab.probes import changed_settings
    spec = load_spec("resolver-cache")
    for names, changed in ((30000, {}), (20000, {"NAMES": (20000, 10000)})):
        params = resolve_params(spec, {"NAMES": str(names)}, None)
        run = results.RunWriter.create(tmp_path, "resolver-cache", f"20261128T100000Z-{names}",
                                       {"scale": "full", "params": params})
        (run.dir / spec.path.name).write_text(spec.path.read_text())
        assert changed_settings(run.dir, run.meta) == changed
