"""tcp-sysctl's paced trials: how many queries dnsperf may keep in flight, and which node
gets which sysctls."""

from __future__ import annotations

from pathlib import Path

import yaml

from dnslab import findings
from dnslab.cpus import Placement
from dnslab.render import ZoneRef
from experiments.f5_tcp_sysctl.tcp_sysctl import (
    SATURATED_SHARE,
    _data,
    open_loop_outstanding,
    unsaturated_warning,
)

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


def _lab_data(params: dict, server_sysctls: dict[str, str]):
    zone = ZoneRef("tcp.test", Path("/nonexistent/tcp.test.zone"))
    placement = Placement(generator="1", server="0", shared=False, cores=2)
    return _data("auth-knot", "client", "knot", zone, {"clients": 50, **params},
                 server_sysctls, placement)


def test_generator_gets_the_wide_port_range_the_experiment_file_sets():
    spec = yaml.safe_load(findings.experiment_file("tcp-sysctl").read_text())
    data = _lab_data(spec["params"], {"net.ipv4.tcp_abort_on_overflow": "1"})
    assert data.sysctls["client"] == {"net.ipv4.ip_local_port_range": "1024 65535",
                                      "net.ipv4.tcp_max_tw_buckets": "1000"}
    assert data.sysctls["auth-knot"] == {"net.ipv4.tcp_abort_on_overflow": "1"}


def test_a_resumed_older_run_without_client_sysctls_changes_no_generator_setting():
    data = _lab_data({}, {})
    assert data.sysctls == {}


def _row(load: int, target: float, qps: float) -> dict:
    return {"trial": 1, "load_pct": load, "target_qps": target, "qps": qps}


def test_a_load_the_default_answers_in_full_is_flagged_with_a_higher_load_to_try():
    warning = unsaturated_warning([_row(120, 47976.5, 47967.9)], [120])
    assert warning is not None
    assert "100%" in warning and "not applicable" in warning and "LOADS=160" in warning


def test_a_saturated_default_is_not_flagged():
    # run 01fb: the default answered 51,830 of 66,870 qps in its first round
    assert unsaturated_warning([_row(150, 66870.0, 51830.1)], [150]) is None


def test_only_the_highest_load_decides():
    rows = [_row(10, 6687.0, 6687.0), _row(100, 66870.0, 49000.0)]
    assert unsaturated_warning(rows, [10, 100]) is None
    assert unsaturated_warning([_row(10, 6687.0, 6687.0), _row(150, 9000.0, 8990.0)],
                               [10, 150]) is not None


def test_a_trial_that_answered_nothing_is_not_read_as_saturation_evidence():
    assert unsaturated_warning([_row(150, 66870.0, 0.0)], [150]) is None


def test_the_warning_uses_the_claims_own_saturation_share():
    import experiments.f5_tcp_sysctl.claims  # noqa: F401  (registers the F5 claims)
    from analysis.claim import REGISTRY

    limits = [c.limits["max_share"] for c in REGISTRY.values()
              if c.finding == "F5" and "max_share" in c.limits]
    assert len(limits) >= 2 and set(limits) == {SATURATED_SHARE}
