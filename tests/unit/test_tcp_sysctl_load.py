"""tcp-sysctl's paced trials: how many queries dnsperf may keep in flight, and which node
gets which sysctls."""

from __future__ import annotations

from pathlib import Path

import yaml

from dnslab.cpus import Placement
from dnslab.render import ZoneRef
from experiments.procedures.tcp_sysctl import _data, open_loop_outstanding

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
    spec = yaml.safe_load(Path("experiments/tcp-sysctl.yaml").read_text())
    data = _lab_data(spec["params"], {"net.ipv4.tcp_abort_on_overflow": "1"})
    assert data.sysctls["client"] == {"net.ipv4.ip_local_port_range": "1024 65535",
                                      "net.ipv4.tcp_max_tw_buckets": "1000"}
    assert data.sysctls["auth-knot"] == {"net.ipv4.tcp_abort_on_overflow": "1"}


def test_a_resumed_older_run_without_client_sysctls_changes_no_generator_setting():
    data = _lab_data({}, {})
    assert data.sysctls == {}
