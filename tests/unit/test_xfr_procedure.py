"""The F3 procedure's pure parts: the calibrated port range, the rate a calibration cell
measured, and each AXFR's span as the secondary's own log tells it."""

from __future__ import annotations

import pytest

from dnslab import cpus
from dnslab.errors import LabError
from experiments.f3_xfr import xfr
from experiments.f3_xfr.derived import transfer_log_error, transfer_log_time
from experiments.f3_xfr.port_range import (
    MIN_AUTO_PORTS,
    SEED_PORT_RANGE,
    auto_port_range,
    port_range_size,
    transfer_rate,
    tw_cap,
)
from experiments.f3_xfr.xfr_single import transfer_placement


def test_auto_range_gives_the_ports_used_in_failure_at_s_at_the_measured_rate():
    assert auto_port_range(400.0, 38.0) == "20000 35199"  # 15,200 ports
    assert port_range_size(auto_port_range(400.0, 38.0)) == 15_200
    assert auto_port_range(1000.0, 0.5) == "20000 20499"
    assert auto_port_range(400.0, 0.5) == "20000 20249"  # 200 ports: raised to the minimum


def test_a_machine_as_fast_as_the_seeds_keeps_the_seeds_range():
    # 28,232 ports / 38 s = 743/s: at that rate the seed's own range is exhausted by itself
    assert auto_port_range(743.0, 38.0) == SEED_PORT_RANGE
    assert auto_port_range(5000.0, 38.0) == SEED_PORT_RANGE


def test_a_very_slow_machine_still_gets_a_usable_range():
    assert port_range_size(auto_port_range(0.1, 1.0)) == MIN_AUTO_PORTS


def test_the_time_wait_cap_keeps_the_profiles_share_of_the_seeds_range():
    assert tw_cap("auto", 1000, 28_232) == 1000
    assert tw_cap("auto", 1000, 14_116) == 500
    assert tw_cap("auto", 1000, 250) == 9
    assert tw_cap("auto", 1000, 10) == 1
    assert tw_cap("auto", 1000, None) == 1000  # the kernel's own range
    assert tw_cap(0, 1000, 250) == 1000
    assert tw_cap("50", 1000, 250) == 50


def test_a_time_wait_cap_that_is_no_number_is_refused():
    with pytest.raises(LabError, match="TW_BUCKETS"):
        tw_cap("many", 1000, 250)


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _opens(path, per_second):
    """A monitor CSV whose connection count grows by per_second[i] in second i + 1."""
    opened, rows = 0, ["t,tcp_active_opens", "0,0"]
    for t, gained in enumerate(per_second, start=1):
        opened += gained
        rows.append(f"{t},{opened}")
    _write(path, "\n".join(rows) + "\n")


def test_transfer_rate_from_the_monitor_and_the_log_events(tmp_path):
    rows = ["t,tcp_active_opens"] + [f"{t},{max(0, 100 * (t - 2))}" for t in range(12)]
    # opens grow 100/s from t=2 to t=11 (900 connections over 9 s), flat before
    _write(tmp_path / "monitor" / "sec-bind.csv", "\n".join(rows) + "\n")
    events = ["t,event,zone"] + [f"{2 + i / 100:.2f},transfer_ok,z{i}" for i in range(900)]
    events.append("11.0,connect_failed,zx")  # at the last sample: cuts nothing
    _write(tmp_path / "xfr_events.csv", "\n".join(events) + "\n")
    rate = transfer_rate(tmp_path)
    assert rate["connections_per_s"] == pytest.approx(100.0, rel=0.01)
    assert rate["transfers"] == 900
    assert rate["transfers_per_s"] == pytest.approx(100.0, rel=0.02)
    assert rate["monitor_samples"] == 10


def test_transfer_rate_over_the_first_seconds_when_the_rate_falls(tmp_path):
    # 800 connections/s for 10 s, then 200/s for 40 s: the ports a secondary uses up first
    # are those of its fast start, which a whole-run average hides
    _opens(tmp_path / "monitor" / "sec-bind.csv", [800] * 10 + [200] * 40)
    whole = transfer_rate(tmp_path)["connections_per_s"]
    first_10 = transfer_rate(tmp_path, window_s=10)["connections_per_s"]
    first_20 = transfer_rate(tmp_path, window_s=20)["connections_per_s"]
    assert whole == pytest.approx(16000 / 50)
    assert first_10 == pytest.approx(800.0)
    assert first_20 == pytest.approx(10000 / 20)
    # a window longer than the activity is the whole run
    assert transfer_rate(tmp_path, window_s=500)["connections_per_s"] == whole


def test_the_calibration_rate_ends_at_its_own_first_connect_failure(tmp_path):
    # 800 connections/s from t=1 until the seed's range ran out at t=18 (BIND 9.20), then
    # only as fast as TIME_WAIT frees ports: over the seed's 38 s the rate is about half the
    # real one. The failure's time is the log event's, on the monitor's clock.
    _opens(tmp_path / "monitor" / "sec-bind920.csv", [800] * 17 + [100] * 43)
    whole_38 = transfer_rate(tmp_path, window_s=38.0)
    assert whole_38["connections_per_s"] == pytest.approx((17 * 800 + 21 * 100) / 38, abs=0.1)
    _write(tmp_path / "xfr_events.csv", "t,event,zone\n1.5,transfer_ok,z1\n"
           "17.4,connect_failed,z9\n17.9,connect_failed,z8\n")
    own = transfer_rate(tmp_path, window_s=38.0)
    assert own["first_failure_t"] == 17.4
    assert own["connections_per_s"] == pytest.approx(800.0)
    assert own["monitor_samples"] == 18  # t=0 .. 17


def test_transfer_rate_without_files_is_unknown(tmp_path):
    (tmp_path / "monitor").mkdir()
    assert transfer_rate(tmp_path) == {"connections_per_s": None, "transfers_per_s": None,
                                           "transfers": 0, "monitor_samples": 0,
                                           "first_failure_t": None}


def test_an_axfr_is_timed_by_its_log_lines_when_the_log_clock_is_fine_enough():
    bind = {"log_span_s": 26.65, "log_resolution_s": 0.001, "log_secs": 26.649}
    knot = {"log_span_s": 27.0, "log_resolution_s": 1.0, "log_secs": 27.5}
    assert transfer_log_time(bind) == 26.65 and transfer_log_error(bind) == 0.001
    assert transfer_log_time(knot) == 27.5 and transfer_log_error(knot) == 0.01
    assert transfer_log_time({"log_span_s": None, "log_secs": None}) is None


def _run(**params):
    from types import SimpleNamespace

    from dnslab import topology

    return SimpleNamespace(spec=SimpleNamespace(topology="xfr"), params=params,
                           topology=topology.load("xfr"))


def test_primary_and_secondary_are_chosen_by_server_kind():
    pair = xfr.ends(_run(primary="knot"), "nsd")
    assert (pair.primary, pair.secondary) == ("pri-knot", "sec-nsd")
    assert pair.params()["primary"] == "knot" and "sec-bind" in pair.servers
    assert "pri-knot" not in pair.held and {"primary", "pri-nsd", "sec-nsd"} <= set(pair.held)
    assert xfr.ends(_run(), "bind").primary == "primary"  # the lab's first primary
    with pytest.raises(LabError) as exc:
        xfr.ends(_run(primary="unbound"), "bind")
    assert exc.value.hint == "PRIMARY=bind | knot | nsd"
    with pytest.raises(LabError):
        xfr.ends(_run(), "dnsdist")


def test_xot_needs_both_ends_to_have_it():
    xfr.check_transport("tls", "bind", "bind")
    with pytest.raises(LabError):
        xfr.check_transport("tls", "knot", "bind")


class _Writer:
    def __init__(self):
        self.placement = None

    def record_run_placement(self, placement):
        self.placement = placement


@pytest.fixture
def placed(monkeypatch):
    """Place a run's primary and secondary on a host that offers `allowed` CPUs."""

    def place(allowed, **params):
        monkeypatch.setattr(cpus, "available", lambda: allowed)
        run = _run(**params)
        run.writer = _Writer()
        pair = xfr.ends(run, "bind")
        return pair, transfer_placement(run, pair), run.writer.placement

    return place


def test_primary_and_secondary_get_disjoint_cores_by_default(placed):
    pair, sets, recorded = placed([0, 1], secondary_cpus="", primary_cpus="")
    assert sets == {pair.primary: "0", pair.client: "0", pair.secondary: "1"}
    assert recorded == {"primary_cpus": "0", "secondary_cpus": "1", "shared": False,
                        "host_cpus": 2}
    pair, sets, recorded = placed([0, 1, 2, 3], secondary_cpus="", primary_cpus="")
    assert sets[pair.secondary] == "3" and sets[pair.primary] == "0-2"


def test_transfer_placement_follows_its_parameters(placed):
    pair, sets, _ = placed([0, 1], secondary_cpus="0", primary_cpus="1")
    assert (sets[pair.primary], sets[pair.secondary]) == ("1", "0")
    pair, sets, recorded = placed([0, 1], secondary_cpus="", primary_cpus="", share_cores=True)
    assert sets[pair.primary] == sets[pair.secondary] == "0-1" and recorded["shared"] is True
    with pytest.raises(LabError, match="overlap"):
        placed([0, 1], secondary_cpus="0-1", primary_cpus="1")
    with pytest.raises(LabError, match="one CPU"):
        placed([0], secondary_cpus="", primary_cpus="")
    # an experiment without the parameters places nothing
    assert placed([0, 1])[1:] == ({}, None)
