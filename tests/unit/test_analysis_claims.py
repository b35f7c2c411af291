"""Every claim can fail: for each, runs where the published effect is present (reproduced),
absent and reversed (not reproduced), and its precondition unmet (not applicable).

The cases live in each finding's package (`experiments/<finding>/cases.py`, CLAIM_CASES) and
are collected here from every package `dnslab.findings.all_findings()` finds; the runs are
written by each package's `fixtures.py` (and `tests/fixtures/runs.py`) through the runner's own
`RunWriter`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from analysis import synthetic
from analysis.claim import (
    ABSENT,
    CALIBRATION,
    CASE_CAUSE,
    CASE_STATUS,
    LAB_CHECK,
    MACHINE,
    PRESENT,
    REGISTRY,
    REPRODUCTION,
    REVERSED,
    SETTING,
    STRADDLES,
    UNMET,
    UNMET_CASES,
)
from analysis.rundata import load_run
from analysis.verdicts import (
    LINE_LIMIT,
    STATUS_WORD,
    _shorten,
    essential,
    evaluate,
    experiment_claims,
    slide_line,
    status_word,
)
from dnslab.experiment_spec import load_spec
from dnslab.findings import Finding, all_findings
from experiments.f1_tcp_fallback import fixtures as f1_fx
from experiments.f1_tcp_fallback.cases import f1
from experiments.f2_dnsdist.cases import f2
from experiments.f3_xfr import fixtures as f3_fx
from experiments.f3_xfr.cases import (
    GOOD,
    WIDE,
    cap_not_applied,
    seed_range,
    smallest,
    std,
    xfr,
)
from experiments.f5_tcp_sysctl.cases import f5
from tests.fixtures import runs

EXPECTED = CASE_STATUS
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def verdicts_of(run_dir: Path) -> dict[str, dict[str, Any]]:
    verdicts, errors = evaluate(load_run(run_dir))
    assert errors == []
    return {v["claim_id"]: v for v in verdicts}


def collected_cases() -> list[tuple[str, str, Callable[[Path], Path]]]:
    """Every finding package's `cases.py` CLAIM_CASES, found as the packages are."""
    found = []
    for finding in all_findings():
        module = finding.module("cases")
        if module is not None:
            found += module.CLAIM_CASES
    return found


CASES = collected_cases()


@pytest.mark.parametrize("claim_id, case, build", CASES,
                         ids=[f"{c}-{k}-{i}" for i, (c, k, _) in enumerate(CASES)])
def test_claim_verdict(tmp_path: Path, claim_id: str, case: str,
                       build: Callable[[Path], Path]) -> None:
    v = verdicts_of(build(tmp_path))[claim_id]
    assert v["status"] == EXPECTED[case], (v["measured"], v["detail"])
    if case in UNMET_CASES:
        assert v["detail"], "not applicable always says why"
        assert v["cause"] in (MACHINE, SETTING), "and whether the machine or a setting"
        assert v["cause"] == CASE_CAUSE.get(case, v["cause"]), (v["cause"], v["detail"])
    else:
        assert v["measured"], "a judged claim always says what it measured"
        assert v["basis"], "and what it rests on (an interval, or one measurement)"
    if case == STRADDLES:
        assert "straddles the band's edge" in v["detail"], v["detail"]
        assert re.search(r"would decide it|decides it|would bound it", v["detail"]), v["detail"]
    # the slide's line: short, led by the status word, the figure and its interval whole
    assert len(v["line"]) <= LINE_LIMIT, v["line"]
    assert v["line"].startswith(status_word(v["status"], v["kind"]) + ": "), v["line"]
    assert line_keeps_conditions(v["line"], v["conditions"]), (v["line"], v["conditions"])
    deciding = [i for i in v["intervals"] if i["bracket"] and (
        i["outcome"] == "straddles" if v["status"] == "inconclusive" else
        i["outcome"] == "outside" if v["status"] == "not_reproduced" else True)]
    if deciding:
        assert any(i["bracket"] in v["line"] for i in deciding), (v["line"], deciding)
    assert "connections/s here" not in v["line"] + v["detail"]


def line_keeps_conditions(line: str, conditions: list[str]) -> bool:
    """Every condition the lab changed is in the line, whole or as its essential clause,
    unless the line had no room even for that (the figure comes first)."""
    return all(c in line or essential(c) in line or len(line) + 2 + len(essential(c))
               > LINE_LIMIT for c in conditions)


def claims_lacking_cases(found: list[Finding]) -> list[str]:
    """What each finding's claims lack: every claim of its `claims.py` (imported here, so
    nothing depends on which test ran first) and every claim its experiment files name needs
    a case where its effect is present, one where it is absent or reversed, (a
    reproduction) one where its precondition is unmet, and (a claim judged by an interval)
    one where the interval straddles its band's edge, in the finding's `cases.py`."""
    lacking = []
    for finding in found:
        finding.module("claims")  # registers its claims (a claim's finding is its package)
        written = {c.id: c for c in REGISTRY.values() if c.finding == finding.id}
        named = {c for name in finding.experiments for c in load_spec(name).claims}
        lacking += [f"{c}: named by an experiment file, written in no claims.py"
                    for c in sorted(named - set(written))]
        cases_module = finding.module("cases")
        kinds: dict[str, set[str]] = {}
        for claim_id, case, _ in getattr(cases_module, "CLAIM_CASES", []):
            kinds.setdefault(claim_id, set()).add(case)
        for claim_id, spec in written.items():
            cases = kinds.get(claim_id, set())
            if PRESENT not in cases:
                lacking.append(f"{claim_id} has no case where its effect is present")
            if not cases & {ABSENT, REVERSED}:
                lacking.append(f"{claim_id} has no case where it fails")
            if spec.kind == REPRODUCTION and not cases & set(UNMET_CASES):
                lacking.append(f"{claim_id} has no case with its precondition unmet")
            if spec.interval and STRADDLES not in cases:
                lacking.append(f"{claim_id} has no case whose interval straddles its band's "
                               "edge")
    return lacking


def test_every_claim_has_present_absent_and_unmet_cases() -> None:
    """A claim that cannot come out 'not reproduced' is not evidence."""
    found = all_findings()
    assert found and not claims_lacking_cases(found), claims_lacking_cases(found)


def test_the_case_guard_catches_a_claim_without_cases(monkeypatch: pytest.MonkeyPatch) -> None:
    """The guard on its own, on the tests' example finding (X1): whole, it passes; without its
    failing case, or without its cases.py, it names the claim."""
    from dnslab import findings

    monkeypatch.setattr(findings, "ROOTS", [(FIXTURES, "tests.fixtures")])
    findings.refresh()
    try:
        example = findings.all_findings()
        assert [f.id for f in example] == ["X1"]
        assert claims_lacking_cases(example) == []
        cases = example[0].module("cases")
        assert cases is not None
        monkeypatch.setattr(cases, "CLAIM_CASES",
                            [c for c in cases.CLAIM_CASES if c[1] != ABSENT])
        assert claims_lacking_cases(example) == ["X1.fast-echo has no case where it fails"]
        monkeypatch.delattr(cases, "CLAIM_CASES")
        assert len(claims_lacking_cases(example)) == 3
    finally:
        monkeypatch.undo()
        findings.refresh()


def test_every_claim_states_source_effect_precondition_and_failure() -> None:
    for spec in REGISTRY.values():
        assert spec.source and spec.precondition and spec.fails_when, spec.id
        assert "{" not in spec.tolerance + spec.precondition + spec.fails_when, spec.id


def test_not_applicable_names_the_measured_figure_and_the_remedy(tmp_path: Path) -> None:
    v = verdicts_of(WIDE(tmp_path))["F3.default.connect-failures"]
    assert v["detail"].startswith("precondition unmet: ")
    assert "< 1,000 ports" in v["detail"] and "to judge it:" in v["detail"]
    v = verdicts_of(f2(listeners=2)(tmp_path / "b"))["F2.qps-gain"]
    assert "2 listener(s)" in v["detail"] and "cores" in v["detail"]


def test_f5_generator_limited_names_the_ceiling_and_the_target(tmp_path: Path) -> None:
    v = verdicts_of(f5(gain={"diiner": 1.08}, generator_max=15000)(tmp_path / "a"))
    detail = v["F5.abort-on-overflow"]["detail"]
    assert "generator-limited at 100 % load: ceiling 15,000 qps for target 20,000 qps" in detail
    assert "QUERIES_PER_CONN" in detail
    v = verdicts_of(f5(gain={"diiner": 1.08}, sent_share={"diiner": 0.8})(tmp_path / "b"))
    assert v["F5.abort-on-overflow"]["status"] != "not_applicable"  # the server held it back
    v = verdicts_of(f5(gain={"diiner": 1.08}, generator_max=None)(tmp_path / "c"))
    assert "no generator ceiling measured" in v["F5.abort-on-overflow"]["detail"]


def test_good_run_reproduces_every_f3_claim_and_carries_the_warning(tmp_path: Path) -> None:
    v = verdicts_of(GOOD(tmp_path))
    assert {k: x["status"] for k, x in v.items()} == dict.fromkeys(
        ["F3.default.tw-ceiling", "F3.default.connect-failures", "F3.default.failure-time",
         "F3.wide-ports.no-failures", "F3.wide-ports.faster", "F3.tw-buckets.no-failures",
         "F3.tw-buckets.tw-capped"], "reproduced") | {
        # no cell ran the seed's range, no TLS cells
        "F3.seed-range.exhaustion": "not_applicable", "F3.xot.not-slower": "not_applicable"}
    assert "100% of 100 ports" in v["F3.default.connect-failures"]["measured"]
    assert "destroys TIME_WAIT protection" in v["F3.tw-buckets.no-failures"]["note"]
    assert v["F3.tw-buckets.tw-capped"]["kind"] == CALIBRATION
    assert {v[c]["kind"] for c in ("F3.wide-ports.no-failures", "F3.wide-ports.faster",
                                   "F3.tw-buckets.no-failures")} == {LAB_CHECK}


def test_checks_of_the_lab_are_never_worded_as_reproductions(tmp_path: Path) -> None:
    """A calibration or lab check that passed "holds", one that failed "fails": a slide line
    of theirs never begins "Reproduced:" (nor "Not reproduced:")."""
    v = verdicts_of(GOOD(tmp_path))
    checks = {c: x for c, x in v.items() if x["kind"] != REPRODUCTION}
    assert {x["kind"] for x in checks.values()} == {CALIBRATION, LAB_CHECK}
    for claim_id, x in checks.items():
        assert x["status"] == "reproduced", claim_id
        assert not x["line"].startswith(("Reproduced", "Not reproduced")), x["line"]
    assert v["F3.tw-buckets.tw-capped"]["line"].startswith("Calibration holds: ")
    assert v["F3.wide-ports.no-failures"]["line"].startswith("Lab check holds: ")
    assert v["F3.default.tw-ceiling"]["line"].startswith("Reproduced: ")
    failed = verdicts_of(xfr(std("default"), std("wide-ports"), cap_not_applied())(
        tmp_path / "b"))["F3.tw-buckets.tw-capped"]
    assert failed["status"] == "not_reproduced"
    assert failed["line"].startswith("Calibration fails: "), failed["line"]
    assert status_word("not_applicable", LAB_CHECK) == STATUS_WORD["not_applicable"]


def test_missing_data_file_is_a_one_line_error(tmp_path: Path) -> None:
    root = runs.build_standard(tmp_path)
    v = verdicts_of(root / "xfr-30k-zones" / "20250103T000000Z-missing")
    bad = v["F3.default.connect-failures"]
    assert bad["status"] == "error"
    assert "\n" not in bad["detail"]
    assert "missing data file" in bad["detail"] and "monitor/sec.csv" in bad["detail"]


def test_interrupted_run_never_says_not_reproduced(tmp_path: Path) -> None:
    root = runs.build_standard(tmp_path)
    v = verdicts_of(root / "xfr-30k-zones" / "20250104T000000Z-interrupted")
    assert {x["status"] for x in v.values()} <= {"reproduced", "incomplete"}
    assert v["F3.wide-ports.no-failures"]["status"] == "incomplete"
    assert "complete=false" in v["F3.wide-ports.no-failures"]["detail"]


def test_only_claims_the_experiment_file_names_run(tmp_path: Path) -> None:
    v = verdicts_of(smallest([0.1, 0.1])(tmp_path))
    assert list(v) == ["F3.smallest.delay"]
    assert "F3.default.tw-ceiling" in experiment_claims("xfr-30k-zones-ci")  # a variant name
    assert "F3.default.tw-ceiling" not in experiment_claims("xfr-tld")
    assert experiment_claims("tcp-fallback-cache") == ["F1.cache-onset"]  # not a variant


def test_function_sync_measures_every_cell_before_judging(tmp_path: Path) -> None:
    """Every stair cell whose function test ran at a load that held its burst is judged and
    named; one whose burst failed is left out and said in the detail."""
    failing = f1_fx.fallback_cell("bind916", "before", "untuned", 8000, function=(3, 3, False))
    failing.csv["function-load.csv"] = (["target_qps", "passed", "max_ms", "reasons", "note"],
                                        [[8000, False, 1060, "max TAT 1060 ms > 1000 ms", ""]])
    lost = f1_fx.fallback_cell("knot", "after", "untuned", 4000, function=(3, 2, True))
    unheld = f1_fx.fallback_cell("knot", "after", "tuned", 6000, burst=False,
                                 function=(3, 3, True))
    run = f1_fx.fallback_run(tmp_path, [
        failing, f1_fx.fallback_cell("bind916", "after", "untuned", 4000),
        f1_fx.fallback_cell("bind916", "after", "tuned", 6000), lost, unheld])
    v = verdicts_of(run)["F1.function-sync"]
    assert v["status"] == EXPECTED[ABSENT]
    assert v["measured"] == ("bind916/before/untuned: 3/3 synced (slowest 1.5 s), load step "
                             "failed (max TAT 1060 ms > 1000 ms); knot/after/untuned: 2/3 "
                             "synced (slowest 1.5 s)")
    assert "knot after/tuned: the 6,000 qps burst failed" in v["detail"]


RESPONSE_HEADER = ["qname", "source", "size", "answer", "authority", "additional"]


def _with_responses(tmp_path: Path, rows: list[list[Any]], header: list[str] = RESPONSE_HEADER
                    ) -> Path:
    """An F1 run whose bind916/after/untuned cell has a responses.csv of `rows`."""
    path = f1()(tmp_path)
    cell = next(path.glob("cells/server=bind916,records=after,tuning=untuned"))
    synthetic.write_csv(cell / "responses.csv", header, rows)
    return path


def test_full_answer_judges_every_tac_and_apn_answer_by_its_sections(tmp_path: Path) -> None:
    rows = [["tac1", "tcp", 23069, 93, 14, 231], ["tac1", "model", 23069, 93, 14, 231],
            ["apn1", "tcp", 900, 2, 14, 1], ["apn1", "model", 990, 2, 14, 16]]
    v = verdicts_of(_with_responses(tmp_path, rows))["F1.full-answer"]
    assert v["status"] == EXPECTED[ABSENT] and "apn1" in v["detail"]
    assert "1 of 2 TAC/APN answers over TCP are the full answer (section counts)" in v["measured"]


def test_full_answer_judges_records_where_the_run_compared_them(tmp_path: Path) -> None:
    header = [*RESPONSE_HEADER, "missing", "extra"]
    same_counts_other_records = [
        ["tac1", "tcp", 23069, 93, 14, 231, 0, 0], ["tac1", "model", 23069, 93, 14, 231, "", ""],
        ["apn1", "tcp", 990, 2, 14, 16, 3, 3], ["apn1", "model", 990, 2, 14, 16, "", ""]]
    v = verdicts_of(_with_responses(tmp_path / "a", same_counts_other_records, header))
    assert v["F1.full-answer"]["status"] == EXPECTED[ABSENT]
    assert "apn1 (3 missing, 3 extra)" in v["F1.full-answer"]["detail"]
    same = [r[:6] + ([0, 0] if r[1] == "tcp" else ["", ""]) for r in same_counts_other_records]
    v = verdicts_of(_with_responses(tmp_path / "b", same, header))["F1.full-answer"]
    assert v["status"] == EXPECTED[PRESENT]
    assert "2 of 2 TAC/APN answers over TCP are the full answer (record by record)" \
        in v["measured"]


def test_f1_judges_the_seeds_bind_and_names_it(tmp_path: Path) -> None:
    v = verdicts_of(f1()(tmp_path))
    assert v["F1.capacity-drop"]["measured"] == (
        "bind916: 8,000 -> 4,000 qps (ratio 0.50), both held the burst; 40 % CPU / 40 % CPU; "
        "before ended at 8,200 qps: worst TAT 1,500 ms, p99 500 ms, 0 SYN(s) retried, 0 SYN(s) "
        "dropped at LISTEN; after ended at 4,200 qps: worst TAT 3,241 ms, p99 426 ms, 0 SYN(s) "
        "retried, 5 SYN(s) dropped at LISTEN")
    assert v["F1.tcp-share"]["kind"] == CALIBRATION


# --- F3 runs with transports, repetitions and calibration cells (xfr-30k-zones today) -------

def series_run(broken: tuple[str, int] | None = None, wide: bool = False
               ) -> Callable[[Path], Path]:
    """Calibration + (tcp, tls) x 2 repetitions of the three profiles; `broken` = the series
    whose kernel frees ports after 5 s (effect absent there), `wide` = no series can exhaust."""
    cells = []
    for transport in ("tcp", "tls"):
        cells.append(f3_fx.xfr_cell("default", 2000, seed=9, extra={
            "phase": "calibrate", "transport": transport}))
        for rep in (0, 1):
            extra = {"transport": transport, "rep": rep}
            kw = {"tw_lifetime": 5.0} if broken == (transport, rep) else {}
            if wide:
                kw = {"ports": 1000}
            cells += [std("default", extra=extra, **kw),
                      std("wide-ports", extra=extra, **({"ports": 2000} if wide else {})),
                      std("tw-buckets-50", extra=extra, **({"ports": 1000} if wide else {}))]
    return xfr(*cells)


@pytest.mark.parametrize("claim_id", ["F3.default.tw-ceiling", "F3.default.connect-failures",
                                      "F3.default.failure-time", "F3.wide-ports.no-failures",
                                      "F3.wide-ports.faster", "F3.tw-buckets.no-failures"])
@pytest.mark.parametrize("case, build", [
    (PRESENT, series_run()),
    (ABSENT, series_run(broken=("tls", 1))),
    (UNMET, series_run(wide=True)),
])
def test_f3_claims_judge_every_transport_and_repetition(tmp_path: Path, claim_id: str,
                                                        case: str, build) -> None:
    v = verdicts_of(build(tmp_path))[claim_id]
    if case == ABSENT and claim_id.startswith(("F3.wide", "F3.tw-buckets")):
        # the broken series has no default failures: it is not judged, the others pass
        assert v["status"] == "reproduced", (v["measured"], v["detail"])
        return
    assert v["status"] == EXPECTED[case], (v["measured"], v["detail"])
    if case != UNMET:
        # every series is named, calibration cells are not judged
        assert all(f"{t} rep {r}" in v["measured"] for t in ("tcp", "tls") for r in (0, 1))
        assert "calibrate" not in v["measured"]
    if case == ABSENT:
        assert "tls rep 1" in v["detail"]


def test_f3_lines_state_the_scaled_range_once(tmp_path: Path) -> None:
    v = verdicts_of(GOOD(tmp_path))
    line = v["F3.default.tw-ceiling"]["line"]
    assert "range scaled to 100 ports for " in line and "(seed: 28,231 at ~743/s)" in line
    assert line.count("conn/s") == 1
    # the failure time is what the range was sized for: the line says it is a mechanism check
    # (the figure first; the condition keeps its essential clause where the line is full)
    line = v["F3.default.failure-time"]["line"]
    assert line.startswith("Reproduced: mechanism check: first failure at 1.0"), line
    assert "range sized to run out at 10 s" in line, line
    assert line.count("conn/s") <= 1
    assert "150 zones (seed: 30,000)" in v["F3.default.failure-time"]["conditions"]
    assert len(line) <= LINE_LIMIT
    assert "tw cap 50 (seed: 1,000)" in v["F3.tw-buckets.tw-capped"]["line"]


def test_seed_range_unmet_says_the_measured_peak_and_rate(tmp_path: Path) -> None:
    v = verdicts_of(seed_range(f3_fx.seed_calibration_cell(447))(tmp_path))
    seed = v["F3.seed-range.exhaustion"]
    assert seed["status"] == "not_applicable"
    assert seed["line"] == ("Not applicable: peak TIME_WAIT 26,820 of 28,232 ports at 447 "
                            "conn/s"), seed["line"]


def test_slide_line_keeps_the_figure_and_shortens_the_conditions_first() -> None:
    """The deck of 2026-11-26 read "Calibration holds: TW peak…; range scaled to ..." and
    "Not reproduced: 750 connect failures at…; range ...": the figure cut, the boilerplate
    kept. The figure and its interval stay whole; the conditions give way first, the one
    with the most detail to its essential clause first, then those that still do not fit."""
    conditions = ["range scaled to 17,005-17,692 ports for 447-466 conn/s (seed: 28,231 at "
                  "~743/s)", "30,000 zones", "tw cap 588-681 (seed: 1,000)"]
    line = slide_line("reproduced", "TW peak 588-681", conditions, kind=CALIBRATION)
    assert line == ("Calibration holds: TW peak 588-681; range scaled to 17,005-17,692 ports "
                    "for 447-466 conn/s; 30,000 zones; tw cap 588-681 (seed: 1,000)"), line
    line = slide_line("reproduced", "TW peak 588-681 [580, 690] of the cap", conditions,
                      kind=CALIBRATION)  # no room for the cap's essential: it goes
    assert line == ("Calibration holds: TW peak 588-681 [580, 690] of the cap; range scaled "
                    "to 17,005-17,692 ports for 447-466 conn/s; 30,000 zones"), line
    phrase = "750 connect failures at TIME_WAIT 100 % [98 %, 101 %] of the range"
    line = slide_line("not_reproduced", phrase, conditions)
    assert line == ("Not reproduced: " + phrase + "; range scaled to 17,005-17,692 ports for "
                    "447-466 conn/s"), line
    line = slide_line("not_reproduced", phrase + " in 6 series", conditions)
    assert line == ("Not reproduced: " + phrase + " in 6 series; 30,000 zones; tw cap 588-681"
                    ), line  # the range's essential does not fit: the conditions after it do
    # no room even for the essentials: the last conditions go, never the figure
    line = slide_line("inconclusive", "XoT 1.07x [0.87, 1.37] TCP's mean time per zone over "
                      "3 repetitions (1.79 vs 1.67 ms), 100 % of its connections (bind->bind)",
                      conditions)
    assert "[0.87, 1.37]" in line and "(bind->bind)" in line and len(line) <= LINE_LIMIT, line
    assert line.startswith("Inconclusive: XoT 1.07x [0.87, 1.37]"), line
    # a phrase too long alone is cut by whole clauses, never inside its interval
    line = slide_line("reproduced", "word " * 40, conditions)
    assert len(line) <= LINE_LIMIT and "…" in line, line
    assert slide_line("not_applicable", None, []) == "Not applicable: "
    assert essential("range sized to run out at 38 s (620-628 conn/s; seed: ...)") == (
        "range sized to run out at 38 s")


def test_a_shortened_phrase_keeps_whole_clauses_and_never_half_a_figure() -> None:
    """resolver-cache's full run 3275: the slide said "...(seed: 230-407 ms): the
    emulated…" and "(slowest answer / run time: -q 100…". The measured figure now comes
    first: the cores condition gives way where both do not fit."""
    unbound = ["Unbound on 1 of 2 cores (seed: 4)"]
    cold = ("cold passes averaged 96-106 ms at -q 100, 200 (seed: 230-407 ms): the emulated "
            "internet, not the cache, sets the ratio")
    assert slide_line("not_applicable", cold, unbound) == "Not applicable: " + cold
    bounded = ("every -q step has a pass bounded by its slowest name (slowest answer / run "
               "time: -q 100 52%, -q 200 95%, -q 300 97%)")
    assert slide_line("not_applicable", bounded, unbound) == "Not applicable: " + bounded
    assert slide_line("not_applicable", "cold passes averaged 96-106 ms", unbound) == (
        "Not applicable: cold passes averaged 96-106 ms; Unbound on 1 of 2 cores (seed: 4)")
    assert _shorten("XoT 1.07x [0.87, 1.37] TCP's time and more words", 20) == "XoT 1.07x…"
    # F6's full run ee1c: the line ended "kresd 0.37 [0.34, 0.39], bind@9.20" (cut before
    # its label "(resolver)"): a name is never left without its figure
    each = ("DoH/DoT unbound@1.26 1.01 [0.96, 1.14], kresd 0.37 [0.34, 0.39], bind@9.20 "
            "(resolver) 0.77 [0.63, 0.87], dnsdist@1.9 0.20 [0.19, 0.60]")
    assert _shorten(each, 100) == "DoH/DoT unbound@1.26 1.01 [0.96, 1.14], kresd 0.37 [0.34, 0.39]"


def test_f1_lines_state_a_stair_other_than_the_seeds(tmp_path: Path) -> None:
    run_dir = synthetic.write_run(
        tmp_path, "tcp-fallback", f1_fx.seed_like_fallback_cells(),
        params={"servers": ["bind916"], "seed_servers": ["bind916"], "truncating": 0.30,
                "stair_step": 200, "step_s": 4})
    v = verdicts_of(run_dir)["F1.capacity-drop"]
    assert v["status"] == "reproduced"
    assert v["conditions"] == ["stair +200 qps per 4 s (seed: +1,000/min)"]
    assert v["line"] == ("Reproduced: capacity 8,000 -> 4,000 qps (0.50x); stair +200 qps per "
                         "4 s (seed: +1,000/min)")


def test_smallest_delay_judges_the_axfr_by_the_secondarys_log(tmp_path: Path) -> None:
    """0.22 s from process start is the daemon's start-up: judged is the AXFR's own span from
    the secondary's log (BIND's ms clock; Knot's whole-second log falls back to its
    "finished, 0.00 seconds" with +-0.01 s; a repetition the log did not time is left out)."""
    cells = f3_fx.timed_cells({"bind": [0.224, 0.226, 0.225], "knot": [0.22, 0.23, 0.22]},
                              error_s=0.007, timing_source=None, log_resolution_s=None)
    columns = ["rep", "delay_s", "log_span_s", "log_resolution_s", "log_secs"]
    cells[0].csv["repetitions.csv"] = (columns, [[0, 0.224, 0.002, 0.001, 0.001],
                                                 [1, 0.226, 0.0, 0.001, 0.001],
                                                 [2, 0.225, None, 0.001, None]])
    cells[1].csv["repetitions.csv"] = (columns, [[r, 0.22, 0.0, 1.0, 0.0] for r in range(3)])
    v = verdicts_of(f3_fx.write_xfr_run(tmp_path, "xfr-smallest", cells))["F3.smallest.delay"]
    assert v["status"] == "reproduced", (v["measured"], v["detail"])
    assert v["line"] == ("Reproduced: AXFR +0.000-+0.001 s [+0.000, +0.002] by the "
                         "secondaries' logs (seed: -0.646..+0.354 s)"), v["line"]
    assert "+0.225 s from process start" in v["measured"], v["measured"]


def test_the_cores_condition_counts_the_cores_of_the_host_the_server_ran_on() -> None:
    """Across hosts the server's machine is its host, not the controller that ran the run."""
    from analysis.claim import cores_condition

    one_host = {"machine": {"cpus": 2}, "placement": {"server_cpus": "0"}}
    assert cores_condition(one_host, 4, "Unbound") == "Unbound on 1 of 2 cores (seed: 4)"
    across = {"machine": {"cpus": 2},
              "placement": {"server_cpus": "0-7", "server_host": "lab", "generator_host": "gen"},
              "hosts": {"facts": {"lab": {"cpus": list(range(16))}, "gen": {"cpus": [0]}}}}
    assert cores_condition(across, 4, "Unbound") == "Unbound on 8 of 16 cores (seed: 4)"
    assert cores_condition({**across, "placement": {**across["placement"],
                                                    "server_cpus": "0-3"}}, 4, "Unbound") == ""
