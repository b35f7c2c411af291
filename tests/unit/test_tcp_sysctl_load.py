"""tcp-sysctl's paced trials: how many queries dnsperf may keep in flight."""

from __future__ import annotations

from experiments.procedures.tcp_sysctl import open_loop_outstanding

PARAMS = {"outstanding": 500, "timeout_s": 2.0, "max_outstanding": 16000}


def test_capacity_run_uses_outstanding():
    assert open_loop_outstanding(None, PARAMS) == 500


def test_paced_trial_covers_rate_times_timeout():
    assert open_loop_outstanding(2649.0, PARAMS) == 5299


def test_paced_trial_is_capped_where_dnsperf_slows_down():
    assert open_loop_outstanding(26493.0, PARAMS) == 16000
    assert open_loop_outstanding(26493.0, {**PARAMS, "max_outstanding": 0}) == 52987


def test_never_below_outstanding():
    assert open_loop_outstanding(10.0, PARAMS) == 500
