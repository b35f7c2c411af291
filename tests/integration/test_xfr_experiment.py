"""xfr-30k-zones at SCALE=ci on the netns runtime with real BIND and Knot secondaries.

The CI scale shrinks the secondary's port range to 200 ports and uses 1,000 zones, so the
published failure (connect: address not available once TIME_WAIT holds every port) shows up
in seconds instead of 38 s.
"""

from __future__ import annotations

import json

import pytest

from dnslab import experiment
from tests.integration.conftest import analysed, cell_figures

pytestmark = pytest.mark.integration


def test_bind_secondary_runs_out_of_ports_only_with_the_default_range(results):
    run = experiment.run_experiment("xfr-30k-zones", ["SCALE=ci", "RUNTIME=netns"])
    analysed(run)
    figures = cell_figures(run)
    default = figures["profile=default"]
    assert default["port_range_size"] == 200
    assert default["connect_failures"] > 0
    assert default["first_connect_failure_s"] is not None
    assert default["tw_peak"] >= 190  # TIME_WAIT fills the whole range
    assert default["zones_served"] < default["zones"]
    wide = figures["profile=wide-ports"]
    assert wide["connect_failures"] == 0 and wide["zones_served"] == wide["zones"]
    assert wide["total_time_s"] is not None and wide["tw_peak"] > 200
    capped = figures["profile=tw-buckets-1000"]
    assert capped["connect_failures"] == 0 and capped["tw_peak"] <= 60
    meta = json.loads((run.path / "meta.json").read_text())
    readback = meta["cells"]["profile=wide-ports"]["sysctls"]["sec-bind"]
    assert readback["net.ipv4.ip_local_port_range"] == "2048 65500"
    monitor = (run.path / "cells" / "profile=default" / "monitor" / "sec-bind.csv")
    assert len(monitor.read_text().splitlines()) > 10  # one row a second


def test_knot_secondary_hits_the_same_wall(results):
    run = experiment.run_experiment("xfr-30k-zones", ["SCALE=ci", "RUNTIME=netns",
                                                      "SECONDARY=knot",
                                                      "PROFILE=default,wide-ports"])
    analysed(run)
    figures = cell_figures(run)
    assert figures["profile=default"]["connect_failures"] > 0
    assert figures["profile=default"]["tw_peak"] >= 190
    assert figures["profile=wide-ports"]["zones_served"] == 1000
    assert figures["profile=wide-ports"]["connect_failures"] == 0


def test_tld_transfer_repeats_into_a_cold_secondary(results):
    run = experiment.run_experiment("xfr-tld", ["SCALE=ci", "RUNTIME=netns",
                                                "SECONDARIES=bind"])
    analysed(run)
    figures = cell_figures(run)["secondary=bind"]
    assert figures["completed"] == figures["repetitions"] == 3
    assert figures["records"] >= 20000 and figures["messages"] > 1
    assert figures["mean_s"] > 0 and figures["rel_stdev_pct"] is not None


def test_smallest_zone_delay_is_measured_on_one_clock(results):
    run = experiment.run_experiment("xfr-smallest", ["SCALE=ci", "RUNTIME=netns"])
    analysed(run)
    for figures in cell_figures(run).values():
        assert figures["completed"] == 3
        assert all(d > 0 for d in figures["delays_s"])  # one clock: never negative
        assert 0 < figures["error_s"] < 0.5
