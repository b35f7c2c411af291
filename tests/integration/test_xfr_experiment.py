"""xfr-30k-zones at SCALE=ci on both runtimes with real BIND and Knot secondaries (and
xfr-smallest with Knot and NSD primaries).

The CI scale calibrates the secondary's rate on 400 zones and gives it the ports it uses in
0.5 s (a few hundred) for 1,000 zones and the TIME_WAIT cap the same share of them
as 1000 of the seed's 28,232, so the published failure (connect: address not
available once TIME_WAIT holds every port) shows up in seconds instead of 38 s; over TCP and
over TLS (XoT). The mechanics are checked on Debian 12's BIND 9.18 (PRIMARY=bind
SECONDARY=bind: the lab's calibration, measured there first); the default, BIND 9.20 at both
ends, runs end to end on both runtimes in the parity test.
"""

from __future__ import annotations

import pytest

import zones
from dnslab import experiment
from dnslab.results import read_meta
from experiments.f3_xfr.xfr_single import TLD_ZONE_PARAMS
from tests.integration.conftest import RUNTIMES, analysed, cell_figures, run_once, verdict_statuses
from zones.axfr import zone_axfr_size

pytestmark = pytest.mark.integration


BIND_918 = ["PRIMARY=bind", "SECONDARY=bind"]


def test_bind_secondary_runs_out_of_ports_only_with_the_calibrated_range(results, runtime):
    run = run_once("xfr-30k-zones", ["SCALE=ci", f"RUNTIME={runtime}", *BIND_918])
    analysed(run)
    figures = cell_figures(run)
    meta = read_meta(run.path)
    for transport in ("tcp", "tls"):
        choice = meta["port_range_choice"][f"bind,{transport}"]
        assert choice["rule"] == "auto" and choice["calibration_zones"] == 400
        calibration = figures[f"phase=calibrate,secondary=bind,transport={transport}"]
        assert calibration["zones_served"] == 400 and calibration["connect_failures"] == 0
        ports = choice["ports"]
        assert 250 <= ports < 1000  # fewer ports than zones: exhaustion is due
        default = figures[f"transport={transport},profile=default"]
        assert default["port_range"] == choice["port_range"]
        assert default["port_range_size"] == ports
        assert default["connect_failures"] > 0
        assert default["first_connect_failure_s"] is not None
        assert default["tw_peak"] >= 0.95 * ports  # TIME_WAIT fills the whole range
        assert default["zones_served"] < default["zones"]
        wide = figures[f"transport={transport},profile=wide-ports"]
        assert wide["connect_failures"] == 0 and wide["zones_served"] == wide["zones"]
        assert wide["total_time_s"] is not None and wide["tw_peak"] > ports
        capped = figures[f"transport={transport},profile=tw-buckets-1000"]
        cap = int(capped["tw_buckets"])  # auto: the profile's share of the seed's range
        assert cap == max(1, round(1000 * ports / 28232))
        assert capped["connect_failures"] == 0 and capped["tw_peak"] <= cap + 5
        readback = meta["cells"][f"transport={transport},profile=wide-ports"]["sysctls"]
        assert readback["sec-bind"]["net.ipv4.ip_local_port_range"] == "2048 65500"
    monitor = (run.path / "cells" / "transport=tcp,profile=default" / "monitor"
               / "sec-bind.csv")
    assert len(monitor.read_text().splitlines()) > 10  # one row a second


def test_the_seeds_port_range_is_one_parameter_away(results, runtime):
    run = experiment.run_experiment("xfr-30k-zones", ["SCALE=ci", f"RUNTIME={runtime}",
                                                      "PORT_RANGE=seed", "TRANSPORTS=tcp",
                                                      "PROFILE=default"])
    analysed(run)
    figures = cell_figures(run)
    assert list(figures) == ["transport=tcp,profile=default"]  # no calibration needed
    assert figures["transport=tcp,profile=default"]["port_range"] == "32768 60999"
    meta = read_meta(run.path)
    assert meta["port_range_choice"]["bind@9.20,tcp"] == {"rule": "seed",
                                                          "port_range": "32768 60999"}


# Knot's wall is the server's and the kernel's (Debian 12's Knot 3.2.6 on both runtimes);
# the clab path of xfr-30k-zones runs in the BIND tests and the runtimes' parity test here
@pytest.mark.parametrize("runtime", ["netns"])
def test_knot_secondary_hits_the_same_wall(results, runtime):
    run = experiment.run_experiment("xfr-30k-zones", ["SCALE=ci", f"RUNTIME={runtime}",
                                                      "SECONDARY=knot", "TRANSPORTS=tcp",
                                                      "PROFILE=default,wide-ports"])
    analysed(run)
    figures = cell_figures(run)
    default = figures["transport=tcp,profile=default"]
    assert default["connect_failures"] > 0
    assert default["tw_peak"] >= 0.95 * default["port_range_size"]
    assert figures["transport=tcp,profile=wide-ports"]["zones_served"] == 1000
    assert figures["transport=tcp,profile=wide-ports"]["connect_failures"] == 0


def test_tld_transfer_repeats_into_a_cold_secondary(results, runtime):
    run = experiment.run_experiment("xfr-tld", ["SCALE=ci", f"RUNTIME={runtime}",
                                                "SECONDARIES=bind"])
    analysed(run)
    figures = cell_figures(run)["secondary=bind"]
    assert figures["completed"] == figures["repetitions"] == 3
    assert figures["records"] >= 20000 and figures["messages"] > 1
    # the signed TLD goes as zones/axfr.py models BIND 9.18's transfer (the model xfr-tld's
    # default mix is fitted to the seed's 691 MB in 47,700 messages with): 20001 records,
    # 1,000,797 bytes in 69 messages measured, 1,000,799 modelled (run 20261127T144257Z-4d39)
    params = read_meta(run.path)["params"]
    assert params["signed"] is True
    zone = zones.ensure("tld", {key: params[key] for key in TLD_ZONE_PARAMS},
                        seed=params["seed"]).zones[0]
    model = zone_axfr_size(zone.path, zone.fqdn)
    assert figures["messages"] == model.messages
    assert abs(figures["bytes"] / model.bytes - 1) < 0.001
    # each AXFR timed by the secondary's own log (BIND: ms timestamps on the lines that open
    # and close it), shorter than daemon start -> first SOA answer, which includes start-up
    assert figures["timing_source"] == "transfer-log"
    assert figures["delays_s"] == figures["xfr_log_span_s"]
    assert all(0 < d < s for d, s in zip(figures["delays_s"], figures["start_to_soa_s"],
                                         strict=True))
    # primary and secondary on separate cores, as the seed's separate hosts; read back
    meta = read_meta(run.path)
    placed = meta["placement"]
    assert placed["shared"] is False and placed["primary_cpus"] != placed["secondary_cpus"]
    cell = meta["cells"]["secondary=bind"]
    assert cell["placement"]["sec-bind"] == placed["secondary_cpus"]
    assert cell["placement"]["primary"] == cell["affinity"]["primary"] == placed["primary_cpus"]


def test_smallest_zone_delay_is_measured_on_one_clock(results, runtime):
    run = run_once("xfr-smallest", ["SCALE=ci", f"RUNTIME={runtime}"])
    analysed(run)
    for figures in cell_figures(run).values():
        assert figures["completed"] == 3
        assert all(d > 0 for d in figures["delays_s"])  # one clock: never negative
        assert 0 < figures["error_s"] < 0.5


@pytest.mark.parametrize("primary, secondary", [("knot", "nsd"), ("nsd", "bind")])
def test_any_authoritative_kind_can_be_the_primary(results, primary, secondary):
    """PRIMARY= like SECONDARY=: a Knot or NSD primary feeds a cold secondary (netns: the
    server kinds are the same on both runtimes, the parity test covers the runtimes)."""
    run = experiment.run_experiment("xfr-smallest", [
        "SCALE=ci", "RUNTIME=netns", f"PRIMARY={primary}", f"SECONDARIES={secondary}"])
    figures = cell_figures(run)[f"secondary={secondary}"]
    cell = read_meta(run.path)["cells"][f"secondary={secondary}"]
    assert cell["params"]["primary"] == primary and cell["params"]["primary_node"] != "primary"
    assert figures["completed"] == 3 and all(d > 0 for d in figures["delays_s"])


# Parity: the same experiment on both runtimes. Counts the kernel decides (port range, the
# TIME_WAIT peak, zones served, connect failures) agree within COUNT_BAND. Durations are only
# printed (a duration is a speed figure: `make bench-lab` compares the runtimes' timings; on 2
# shared cores one wide-ports cold start took 1.4 s on netns and 6.1 s on clab in one CI run);
# what must agree is whether there is one (a failure time, a finished transfer).
COUNT_BAND = 0.10
COUNTS = ["port_range_size", "tw_peak", "zones_served", "transfers_logged"]
TIMES = ["first_connect_failure_s", "total_time_s"]


def test_both_runtimes_agree_on_xfr_30k_zones(results, request):
    for runtime in RUNTIMES:
        if runtime == "clab":
            request.getfixturevalue("clab_ready")
    # one fixed port range: the calibrated one follows each runtime's own transfer rate;
    # 500 ports, well above the 100 transfers BIND runs at once (with 200 the ports ran out
    # while half were still open on one runtime and not the other: a TIME_WAIT-ceiling flake)
    runs = {rt: run_once("xfr-30k-zones", ["SCALE=ci", f"RUNTIME={rt}", "TRANSPORTS=tcp",
                                           "PORT_RANGE=40000 40499"]) for rt in RUNTIMES}
    statuses = {rt: verdict_statuses(run) for rt, run in runs.items()}
    assert statuses["netns"] and statuses["netns"] == statuses["clab"]
    # the default: BIND 9.20 at both ends, nodes the run added, the seed's 9.20 behaviour
    for run in runs.values():
        meta = read_meta(run.path)
        cell = meta["cells"]["transport=tcp,profile=default"]
        assert (cell["params"]["primary"], cell["params"]["secondary"]) == ("bind@9.20",) * 2
        assert (cell["params"]["primary_node"], cell["params"]["secondary_node"]) == (
            "primary920", "sec-bind920")
        ran = meta["node_versions"]
        assert ran["sec-bind920"]["runs"] == ran["primary920"]["runs"] == "bind@9.20"
        assert ran["sec-bind920"]["version"] == "1:9.20.30-1~deb13u1"
        # the seed's 9.20 (before 9.20.26's tcp-reuse-timeout): BIND920_OPTIONS
        assert cell["params"]["secondary_options"]["tcp-reuse-timeout"] == 0
    figures = {rt: cell_figures(run) for rt, run in runs.items()}
    table = []
    for cell in figures["netns"]:
        a, b = figures["netns"][cell], figures["clab"][cell]
        for key in COUNTS + TIMES:
            table.append(f"{cell:<28} {key:<24} {a[key]!s:>10} {b[key]!s:>10}")
            if key == "total_time_s":
                # None: a zone or a few left to BIND's retry after the deadline (CI: 999 of
                # 1,000 on one runtime, all on the other); zones_served holds them in the band
                continue
            if a[key] is None or b[key] is None:
                assert a[key] == b[key], (cell, key, a[key], b[key])
            elif key in COUNTS:
                assert abs(a[key] - b[key]) <= COUNT_BAND * max(a[key], b[key]), (cell, key)
        failures = (a["connect_failures"], b["connect_failures"])
        assert (failures[0] == 0) == (failures[1] == 0), (cell, failures)
    print("\nparity xfr-30k-zones SCALE=ci (netns, clab)\n" + "\n".join(table))


def test_zone_sweep_completes_with_verdicts(results, runtime):
    run = run_once("xfr-zone-sweep", ["SCALE=ci", f"RUNTIME={runtime}"])
    analysed(run)
    figures = cell_figures(run)
    assert figures and verdict_statuses(run)
    for cell_id, fig in figures.items():
        assert 0 < fig["zones_served"] <= fig["zones"], cell_id
