"""PowerDNS Authoritative (the bind backend) as the lab's sixth server, on both runtimes: a
cold-start secondary in xfr-30k-zones at SCALE=ci, and the server under test in tcp-fallback.

PowerDNS runs out of ports in bind() ("Address already in use"), not in connect(): its
driver counts that as the connect failure the seed saw. A zone whose SOA check at start
goes unanswered waits 60 s, longer than the CI deadline, so the run without a port limit is
asked for (almost) every zone, not every one."""

from __future__ import annotations

import pytest

from dnslab import experiment
from dnslab.results import read_cell, read_meta
from tests.integration.conftest import analysed, cell_figures, verdict_statuses

pytestmark = pytest.mark.integration


# the secondary's wall is PowerDNS's and the kernel's (Debian 12's 4.7 on both runtimes); its
# clab path (the image) runs in the tcp-fallback test below
@pytest.mark.parametrize("runtime", ["netns"])
def test_pdns_secondary_runs_out_of_ports_only_with_the_calibrated_range(results, runtime):
    run = experiment.run_experiment("xfr-30k-zones", [
        "SCALE=ci", f"RUNTIME={runtime}", "SECONDARY=pdns", "TRANSPORTS=tcp"])
    analysed(run)
    figures = cell_figures(run)
    meta = read_meta(run.path)
    ports = meta["port_range_choice"]["pdns,tcp"]["ports"]
    calibration = figures["phase=calibrate,secondary=pdns,transport=tcp"]
    assert calibration["zones_served"] == 400 and calibration["connect_failures"] == 0
    default = figures["transport=tcp,profile=default"]
    assert default["connect_failures"] > 0 and default["first_connect_failure_s"] is not None
    assert default["tw_peak"] >= 0.95 * ports
    # one transfer per port, then nothing until TIME_WAIT expires
    assert default["zones_served"] <= ports < default["zones"]
    wide = figures["transport=tcp,profile=wide-ports"]
    assert wide["connect_failures"] == 0 and wide["zones_served"] >= 0.98 * wide["zones"]
    assert wide["tw_peak"] > ports
    capped = figures["transport=tcp,profile=tw-buckets-1000"]
    assert capped["connect_failures"] == 0
    assert capped["tw_peak"] <= int(capped["tw_buckets"]) + 5
    statuses = verdict_statuses(run)
    assert statuses["F3.default.connect-failures"] == "reproduced"
    assert statuses["F3.wide-ports.no-failures"] == "reproduced"


def test_pdns_does_not_offer_zone_transfers_over_tls(results):
    from dnslab.errors import LabError

    with pytest.raises(LabError) as exc:
        experiment.run_experiment("xfr-30k-zones", ["SCALE=ci", "RUNTIME=netns",
                                                    "SECONDARY=pdns", "TRANSPORTS=tls"])
    assert "TLS" in str(exc.value) and "TRANSPORTS=tcp" in exc.value.hint


def test_pdns_under_test_truncates_what_the_mix_predicts_and_follows_the_primary(results,
                                                                                  runtime):
    run = experiment.run_experiment("tcp-fallback", [
        "SCALE=ci", f"RUNTIME={runtime}", "SERVERS=pdns", "RECORDS=after", "STAIR_STOP=200"])
    analysed(run)
    figures = cell_figures(run)
    for tuning in ("untuned", "tuned"):
        f = figures[f"server=pdns,records=after,tuning={tuning}"]
        assert f["tac_udp_truncated"] is True
        # the answer section only (no additional records for NAPTR), with the OPT record
        assert f["tac_tcp_answer"] == 93 and f["tac_tcp_additional"] == 1
        assert f["tac_tcp_size"] < 0.5 * f["tac_model_size"]
        assert f["tcp_share"] == pytest.approx(f["predicted_tcp_share"], abs=0.03)
        assert f["capacity_qps"] == 200
        # records added and deleted on the primary reach it by NOTIFY and AXFR under load
        assert f["function_passed"] is True and f["function_synced"] == 6
    tuned = read_cell(run.path / "cells" / "server=pdns,records=after,tuning=tuned")
    options = tuned["params"]["server_options"]
    assert options == {"udp-truncation-threshold": 4096, "max-tcp-connections": 10000}
