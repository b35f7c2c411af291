"""kxdpgun's JSON statistics (Knot 3.4+, `-j`), as the lab's kxdpgun 3.4.6 printed them here
(tests/fixtures/kxdpgun/udp-3.4.6.json: 1 s at 1,000 qps towards an address that never
answered): the totals, the rate over the nanosecond span, the rcodes and the version."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dnslab.errors import LabError
from experiments.generators.kxdpgun import parse_kxdpgun

SAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "kxdpgun" / "udp-3.4.6.json"


def test_the_totals_come_from_the_stats_sum_record():
    result = parse_kxdpgun(SAMPLE.read_text())
    assert (result.sent, result.received, result.version) == (1010, 0, "3.4.6")
    assert result.duration_s == pytest.approx(1.00124, abs=1e-5)
    assert result.offered_qps == pytest.approx(1010 / result.duration_s)
    assert result.qps == 0 and result.rcodes == {}


def test_answers_and_rcodes_are_read_and_a_warning_before_the_json_is_skipped():
    records = json.loads(SAMPLE.read_text())
    total = records[-1]
    total.update({"responses": 1000, "response_rcodes": {"REFUSED": 990, "NOERROR": 10}})
    text = "warning: something on stderr\n" + json.dumps(records, indent=2) + "\n"
    result = parse_kxdpgun(text)
    assert result.received == 1000 and result.rcodes == {"REFUSED": 990, "NOERROR": 10}
    assert result.row()["rcode_REFUSED"] == 990
    assert result.failures_per_s == pytest.approx(10 / result.duration_s)


def test_json_without_its_totals_is_a_clear_error():
    records = [r for r in json.loads(SAMPLE.read_text()) if r["type"] != "stats_sum"]
    with pytest.raises(LabError, match="no stats_sum"):
        parse_kxdpgun(json.dumps(records, indent=2))


def test_the_text_totals_of_older_versions_are_still_read():
    text = ("total queries:     5000 (1000 pps) (100%)\ntotal replies:     4000 (800 pps) (80%)\n"
            "responded NOERROR: 4000\nduration: 5 s\n")
    result = parse_kxdpgun(text)
    assert (result.sent, result.received, result.rcodes) == (5000, 4000, {"NOERROR": 4000})
