"""Claims evaluated on the synthetic run folders in tests/fixtures/results/."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from analysis.claim import REGISTRY
from analysis.rundata import load_run
from analysis.verdicts import evaluate

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "results"


@pytest.fixture
def results(tmp_path: Path) -> Path:
    root = tmp_path / "results"
    shutil.copytree(FIXTURES, root, ignore=shutil.ignore_patterns("*.py", "report",
                                                                   "summary.json"))
    return root


def verdicts_of(run_dir: Path) -> dict[str, dict]:
    verdicts, errors = evaluate(load_run(run_dir))
    assert errors == []
    return {v["claim_id"]: v for v in verdicts}


def test_f3_claims_reproduced_on_good_run(results: Path) -> None:
    v = verdicts_of(results / "xfr-30k-zones" / "20250101T000000Z-good")
    assert {k: x["status"] for k, x in v.items()} == {
        "F3.default.tw-ceiling": "reproduced",
        "F3.default.connect-failures": "reproduced",
        "F3.default.failure-time": "reproduced",
        "F3.wide-ports.no-failures": "reproduced",
        "F3.wide-ports.faster": "reproduced",
        "F3.tw-buckets.no-failures": "reproduced",
        "F3.tw-buckets.tw-capped": "reproduced",
    }
    assert "10.1 s" in v["F3.default.connect-failures"]["measured"]
    assert "100% of 100 ports" in v["F3.default.connect-failures"]["measured"]
    # the danger of tcp_max_tw_buckets travels with the verdict
    assert "destroys TIME_WAIT protection" in v["F3.tw-buckets.no-failures"]["note"]
    for x in v.values():
        assert x["finding"] == "F3" and x["published"] and x["tolerance"]


def test_not_reproduced_carries_measured_value(results: Path) -> None:
    v = verdicts_of(results / "xfr-30k-zones" / "20250102T000000Z-noexhaust")
    assert v["F3.default.connect-failures"]["status"] == "not_reproduced"
    assert v["F3.default.connect-failures"]["measured"] == "0 connect failures"
    assert v["F3.default.tw-ceiling"]["status"] == "not_reproduced"
    assert "15% of 1,000 ports" in v["F3.default.tw-ceiling"]["measured"]
    # the run has no tw-buckets cell: explicitly not applicable, with the reason
    assert v["F3.tw-buckets.no-failures"]["status"] == "not_applicable"
    assert "tw-buckets" in v["F3.tw-buckets.no-failures"]["detail"]


def test_missing_data_file_is_a_one_line_error(results: Path) -> None:
    v = verdicts_of(results / "xfr-30k-zones" / "20250103T000000Z-missing")
    bad = v["F3.default.connect-failures"]
    assert bad["status"] == "error"
    assert "\n" not in bad["detail"]
    assert "missing data file" in bad["detail"] and "monitor/sec.csv" in bad["detail"]
    assert v["F3.default.tw-ceiling"]["status"] == "reproduced"  # cell.json is enough there


def test_interrupted_run_never_says_not_reproduced(results: Path) -> None:
    v = verdicts_of(results / "xfr-30k-zones" / "20250104T000000Z-interrupted")
    statuses = {x["status"] for x in v.values()}
    assert statuses == {"reproduced", "incomplete"}
    assert v["F3.wide-ports.no-failures"]["status"] == "incomplete"
    assert "complete=false" in v["F3.wide-ports.no-failures"]["detail"]
    assert v["F3.tw-buckets.no-failures"]["status"] == "incomplete"


@pytest.mark.parametrize("run, claim_id, status", [
    ("xfr-tld/20250105T000000Z-tld", "F3.tld.repeatable", "reproduced"),
    ("xfr-smallest/20250106T000000Z-smallest", "F3.smallest.delay", "reproduced"),
    ("xfr-zone-sweep/20250107T000000Z-sweep", "F3.sweep.nonlinear", "reproduced"),
])
def test_other_xfr_claims(results: Path, run: str, claim_id: str, status: str) -> None:
    v = verdicts_of(results / run)
    assert list(v) == [claim_id]
    assert v[claim_id]["status"] == status


def test_tld_claim_not_reproduced_when_spread_is_large(results: Path) -> None:
    import json

    run = results / "xfr-tld" / "20250105T000000Z-tld"
    cell = run / "cells" / "secondary=knot" / "cell.json"
    data = json.loads(cell.read_text())
    data["figures"]["delays_s"][2] = 4.0  # one slow repetition
    cell.write_text(json.dumps(data))
    v = verdicts_of(run)["F3.tld.repeatable"]
    assert v["status"] == "not_reproduced"
    assert "knot" in v["measured"] and "over 5" in v["measured"]


def test_only_claims_covering_the_experiment_run(results: Path) -> None:
    v = verdicts_of(results / "xfr-smallest" / "20250106T000000Z-smallest")
    assert all(REGISTRY[c].covers("xfr-smallest") for c in v)
    assert REGISTRY["F3.default.tw-ceiling"].covers("xfr-30k-zones-ci")
    assert not REGISTRY["F3.default.tw-ceiling"].covers("xfr-tld")


def test_f1_f2_f5_claims_on_synthetic_runs(results: Path) -> None:
    f1 = verdicts_of(results / "tcp-fallback" / "20250108T000000Z-f1")
    assert {k: x["status"] for k, x in f1.items()} == {
        "F1.tcp-share": "reproduced", "F1.capacity-drop": "reproduced",
        "F1.tuning-helps": "reproduced", "F1.latency-grows": "reproduced",
        "F1.function-sync": "not_applicable", "F1.full-answer": "reproduced"}
    assert f1["F1.tcp-share"]["measured"] == "22.8% of queries over TCP (bind)"
    assert f1["F1.full-answer"]["measured"] == (
        "records after, untuned: 23,069 B (full answer 23,069 B), 230 of 230 additional "
        "records (9.16.50-Debian)")
    f2 = verdicts_of(results / "dnsdist" / "20250109T000000Z-f2")
    assert [x["status"] for x in f2.values()] == ["reproduced", "reproduced"]
    f5 = verdicts_of(results / "tcp-sysctl" / "20250111T000000Z-f5")
    assert f5["F5.tso-win-divisor"]["status"] == "reproduced"
    assert "p(tso better)" in f5["F5.tso-win-divisor"]["measured"]
    # the same trials as default: no gain to find
    assert f5["F5.abort-on-overflow"]["status"] == "not_reproduced"
    assert "p=" in f5["F5.abort-on-overflow"]["measured"]


def test_f4_not_reproduced_names_the_failing_concurrency(results: Path) -> None:
    f4 = verdicts_of(results / "resolver-cache" / "20250110T000000Z-f4")
    assert f4["F4.warm-over-cold"]["status"] == "not_reproduced"
    assert f4["F4.warm-over-cold"]["detail"] == "only 1.85x at -q 300"
    assert f4["F4.warm-scales-with-q"]["status"] == "not_reproduced"


def test_f1_full_answer_fails_when_the_additional_section_is_missing(results: Path) -> None:
    import json

    run = results / "tcp-fallback" / "20250108T000000Z-f1"
    cell = run / "cells" / "server=bind916,records=after,tuning=untuned" / "cell.json"
    data = json.loads(cell.read_text())
    data["figures"].update(tac_tcp_size=10467, tac_tcp_additional=1)  # as BIND 9.18 sends
    cell.write_text(json.dumps(data))
    v = verdicts_of(run)["F1.full-answer"]
    assert v["status"] == "not_reproduced"
    assert v["measured"].startswith("records after, untuned: 10,467 B (full answer 23,069 B), "
                                    "0 of 230 additional")


def test_f1_capacity_claim_fails_outside_tolerance(results: Path) -> None:
    import json

    run = results / "tcp-fallback" / "20250108T000000Z-f1"
    cell = run / "cells" / "server=bind,records=after,tuning=untuned" / "cell.json"
    data = json.loads(cell.read_text())
    data["figures"]["capacity_qps"] = 7600  # barely any drop: 0.95
    cell.write_text(json.dumps(data))
    v = verdicts_of(run)["F1.capacity-drop"]
    assert v["status"] == "not_reproduced"
    assert v["measured"] == "8,000 -> 7,600 qps (ratio 0.95)"


def test_f1_untuned_stair_with_no_passing_step(results: Path) -> None:
    """A server that fails the first step untuned (BIND 9.16 here: one SYN retransmit makes
    the worst TAT 1.07 s at 1,000 qps) has no capacity: tuning helps, the drop is total."""
    import json

    run = results / "tcp-fallback" / "20250108T000000Z-f1"
    cell = run / "cells" / "server=bind,records=after,tuning=untuned" / "cell.json"
    data = json.loads(cell.read_text())
    data["figures"]["capacity_qps"] = None
    cell.write_text(json.dumps(data))
    v = verdicts_of(run)
    assert v["F1.tuning-helps"]["status"] == "reproduced"
    assert v["F1.tuning-helps"]["measured"] == "no stair step passed untuned -> 6,100 qps tuned"
    assert v["F1.capacity-drop"]["status"] == "not_reproduced"
    assert v["F1.capacity-drop"]["measured"] == "8,000 -> 0 qps (ratio 0.00)"
