"""xfr-30k-zones at SCALE=ci on both runtimes with real BIND and Knot secondaries.

The CI scale shrinks the secondary's port range to 200 ports and uses 1,000 zones, so the
published failure (connect: address not available once TIME_WAIT holds every port) shows up
in seconds instead of 38 s.
"""

from __future__ import annotations

import json

import pytest

from dnslab import experiment
from tests.integration.conftest import RUNTIMES, analysed, cell_figures, run_once, verdict_statuses

pytestmark = pytest.mark.integration


def test_bind_secondary_runs_out_of_ports_only_with_the_default_range(results, runtime):
    run = run_once("xfr-30k-zones", ["SCALE=ci", f"RUNTIME={runtime}"])
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


def test_knot_secondary_hits_the_same_wall(results, runtime):
    run = experiment.run_experiment("xfr-30k-zones", ["SCALE=ci", f"RUNTIME={runtime}",
                                                      "SECONDARY=knot",
                                                      "PROFILE=default,wide-ports"])
    analysed(run)
    figures = cell_figures(run)
    assert figures["profile=default"]["connect_failures"] > 0
    assert figures["profile=default"]["tw_peak"] >= 190
    assert figures["profile=wide-ports"]["zones_served"] == 1000
    assert figures["profile=wide-ports"]["connect_failures"] == 0


def test_tld_transfer_repeats_into_a_cold_secondary(results, runtime):
    run = experiment.run_experiment("xfr-tld", ["SCALE=ci", f"RUNTIME={runtime}",
                                                "SECONDARIES=bind"])
    analysed(run)
    figures = cell_figures(run)["secondary=bind"]
    assert figures["completed"] == figures["repetitions"] == 3
    assert figures["records"] >= 20000 and figures["messages"] > 1
    assert figures["mean_s"] > 0 and figures["rel_stdev_pct"] is not None


def test_smallest_zone_delay_is_measured_on_one_clock(results, runtime):
    run = experiment.run_experiment("xfr-smallest", ["SCALE=ci", f"RUNTIME={runtime}"])
    analysed(run)
    for figures in cell_figures(run).values():
        assert figures["completed"] == 3
        assert all(d > 0 for d in figures["delays_s"])  # one clock: never negative
        assert 0 < figures["error_s"] < 0.5


# Parity: the same experiment on both runtimes. Counts the kernel decides (port range, the
# TIME_WAIT peak, zones served, connect failures) agree within COUNT_BAND; durations within
# a factor TIME_FACTOR, as containers add their own scheduling on 2 shared cores.
COUNT_BAND = 0.10
TIME_FACTOR = 2.0
COUNTS = ["port_range_size", "tw_peak", "zones_served", "transfers_logged"]
TIMES = ["first_connect_failure_s", "total_time_s"]


def test_both_runtimes_agree_on_xfr_30k_zones(results, request):
    for runtime in RUNTIMES:
        if runtime == "clab":
            request.getfixturevalue("clab_ready")
    runs = {rt: run_once("xfr-30k-zones", ["SCALE=ci", f"RUNTIME={rt}"]) for rt in RUNTIMES}
    statuses = {rt: verdict_statuses(run) for rt, run in runs.items()}
    assert statuses["netns"] and statuses["netns"] == statuses["clab"]
    figures = {rt: cell_figures(run) for rt, run in runs.items()}
    table = []
    for cell in figures["netns"]:
        a, b = figures["netns"][cell], figures["clab"][cell]
        for key in COUNTS + TIMES:
            table.append(f"{cell:<28} {key:<24} {a[key]!s:>10} {b[key]!s:>10}")
            if a[key] is None or b[key] is None:
                assert a[key] == b[key], (cell, key, a[key], b[key])
            elif key in COUNTS:
                assert abs(a[key] - b[key]) <= COUNT_BAND * max(a[key], b[key]), (cell, key)
            else:
                assert max(a[key], b[key]) <= TIME_FACTOR * min(a[key], b[key]) + 0.5, \
                    (cell, key)
        failures = (a["connect_failures"], b["connect_failures"])
        assert (failures[0] == 0) == (failures[1] == 0), (cell, failures)
    print("\nparity xfr-30k-zones SCALE=ci (netns, clab)\n" + "\n".join(table))


def test_zone_sweep_completes_with_verdicts(results, runtime):
    run = experiment.run_experiment("xfr-zone-sweep", ["SCALE=ci", f"RUNTIME={runtime}"])
    analysed(run)
    figures = cell_figures(run)
    assert figures and verdict_statuses(run)
    for cell_id, fig in figures.items():
        assert 0 < fig["zones_served"] <= fig["zones"], cell_id
