"""tcp-fallback at SCALE=ci on both runtimes with real BIND (and Knot and NSD) secondaries.

The CI scale runs three short, low-rate stair steps per cell, far below any capacity, so the
assertions are about what the lab measures, not about where the server breaks: the TCP share
the stair measures equals the one the server's own UDP answers predict, the answer sizes of
today's servers (no additional section for big NAPTR sets) next to the modelled full answer,
and the client's sysctls.
"""

from __future__ import annotations

import csv
import subprocess

import pytest

from dnslab import cpus, experiment, paths
from dnslab.results import read_cell, read_meta
from tests.integration.conftest import analysed, cell_figures, run_once

pytestmark = pytest.mark.integration


def test_bind_stair_measures_the_tcp_share_the_answers_predict(results, runtime):
    run = run_once("tcp-fallback", ["SCALE=ci", f"RUNTIME={runtime}"])
    analysed(run)
    figures = cell_figures(run)
    ceilings = {f"server=ceiling,records={r}" for r in ("before", "after")}
    assert set(figures) == ceilings | {f"server=bind,records={r},tuning={t}"
                                       for r in ("before", "after") for t in ("untuned", "tuned")}
    for cell_id in ceilings:
        # the generator's ceiling against dnsload serve, on the same placement: the CI rates
        # (500, 1000, 2000) are far below it
        assert figures.pop(cell_id)["capacity_qps"] == 2000, cell_id
    meta = read_meta(run.path)
    placement = meta["placement"]
    assert placement["shared"] is False
    assert not set(cpus.parse(placement["generator_cpus"])) & set(
        cpus.parse(placement["server_cpus"]))
    for cell_id, f in figures.items():
        # the CI rates are far below capacity: every step passes
        assert f["capacity_qps"] == 600 and f["steps_run"] == 3, cell_id
        assert f["tcp_share"] == pytest.approx(f["predicted_tcp_share"], abs=0.03), cell_id
        assert f["truncated_per_s"] > 0 and f["p99_ms_at_capacity"] > 0
        assert f["max_latency_ms_at_capacity"] >= f["p99_ms_at_capacity"]
        # BIND 9.18 truncates the TAC answer over UDP; over TCP it sends the answer section
        # only (no additional processing for RRsets > 13), less than the modelled full answer
        assert f["tac_udp_truncated"] is True
        assert f["tac_tcp_additional"] == 1  # the OPT record
        assert f["tac_udp_size"] < 4096 < f["tac_tcp_size"] < f["tac_model_size"]
        # record by record: the full answer's additional records are what BIND 9.18 leaves
        # out, and it sends nothing the model lacks; each TCP answer is kept as received
        assert f["tac_tcp_missing"] >= f["tac_model_additional"] - 1 > 0, cell_id
        assert f["tac_tcp_extra"] == 0, cell_id
        assert f["tac_tcp_size_full_compression"] <= f["tac_tcp_size"]
        kept = list((run.path / "cells" / cell_id / "answers").glob("*.tcp.bin"))
        assert len(kept) > 2 and any(p.stat().st_size == f["tac_tcp_size"] for p in kept)
        assert f["client_sysctls"]["net.ipv4.tcp_tw_reuse"] == "1"
        assert f["client_sysctls"]["net.ipv4.ip_local_port_range"] == "1024 65535"
        # function test: records added and deleted on the primary during load reach the
        # server under test (serial, then the record), and the load still passes
        assert f["function_passed"] is True, cell_id
        assert f["function_synced"] == f["function_changes"] == 6, cell_id
    after = figures["server=bind,records=after,tuning=untuned"]
    before = figures["server=bind,records=before,tuning=untuned"]
    assert after["tac_tcp_answer"] == after["tac_model_answer"] == 93
    assert before["tac_tcp_answer"] == 47
    assert after["tac_tcp_size"] > 1.5 * before["tac_tcp_size"]
    tuned = figures["server=bind,records=after,tuning=tuned"]
    assert tuned["server_sysctls"]["net.core.somaxconn"] == "65535"
    assert after["server_sysctls"]["net.core.somaxconn"] != "65535"

    cell_dir = run.path / "cells" / "server=bind,records=after,tuning=tuned"
    with open(cell_dir / "stair.csv") as handle:
        steps = list(csv.DictReader(handle))
    assert [float(s["target_qps"]) for s in steps] == [200, 400, 600]
    assert all(int(s["tcp"]) > 0 and s["passed"] == "True" for s in steps)
    # each step keeps where each side ran and how busy its cores and the generator were
    assert {s["server_cpus"] for s in steps} == {placement["server_cpus"]}
    assert {s["generator_cpus"] for s in steps} == {placement["generator_cpus"]}
    assert all(float(s["generator_cpu_pct"]) > 0 for s in steps)
    assert all(s["server_cores_busy_pct"] != "" for s in steps)
    cell_meta = meta["cells"]["server=bind,records=after,tuning=tuned"]
    assert cell_meta["placement"]["client"] == placement["generator_cpus"]
    assert cell_meta["placement"]["sec-bind"] == placement["server_cpus"]
    # read back from the running daemon: BIND may use the server's CPUs only
    assert cell_meta["affinity"]["sec-bind"] == placement["server_cpus"]
    assert (cell_dir / "monitor" / "cores.csv").exists()
    with open(cell_dir / "responses.csv") as handle:
        responses = list(csv.DictReader(handle))
    assert {r["source"] for r in responses} == {"udp", "tcp", "model"}
    assert {r["kind"] for r in responses} == {"tac", "apn"}
    params = read_cell(cell_dir)["params"]
    assert params["server_options"]["tcp-listen-queue"] == 65535
    assert params["server_options"]["minimal_responses"] == "no"
    monitor = cell_dir / "monitor" / "sec-bind.csv"
    assert len(monitor.read_text().splitlines()) > 5


# the answers are the servers' own: Knot 3.2.6 and NSD 4.6.1 are Debian 12's packages on both
# runtimes (the host's, the images'), and both runtimes' paths run in the BIND tests above and
# below, so this one runs on netns only (85 s of CI's time on clab)
@pytest.mark.parametrize("runtime", ["netns"])
def test_knot_and_nsd_add_nothing_for_naptr(results, runtime):
    run = experiment.run_experiment("tcp-fallback", [
        "SCALE=ci", f"RUNTIME={runtime}", "SERVERS=knot,nsd", "RECORDS=after", "TUNINGS=untuned",
        "STAIR_STOP=200"])
    analysed(run)
    figures = cell_figures(run)
    for server in ("knot", "nsd"):
        f = figures[f"server={server},records=after,tuning=untuned"]
        assert f["tac_udp_truncated"] is True
        # nothing for the NAPTR records (no SRV, A, AAAA): at most the NS glue and OPT
        assert f["tac_tcp_answer"] == 93 and f["tac_tcp_additional"] <= 1 + 14
        assert f["apn_tcp_additional"] <= 1 + 14
        assert f["tac_tcp_size"] < 0.5 * f["tac_model_size"]
        assert f["tcp_share"] == pytest.approx(f["predicted_tcp_share"], abs=0.03)
        assert f["capacity_qps"] == 200


def test_cache_curve_rises_once_records_exceed_the_cache(results):
    run = experiment.run_experiment("tcp-fallback-cache", ["SCALE=ci"])
    analysed(run)
    figures = cell_figures(run)
    for dist in ("uniform", "zipf"):
        f = figures[f"dist={dist}"]
        assert f["cache_size"] == 1000
        below = [a for r, a in zip(f["records"], f["amplification"], strict=True) if r < 1000]
        assert all(a == pytest.approx(1.0, abs=0.02) for a in below)
        assert f["onset_records"] is not None and f["onset_records"] > 1000 * 0.9
        cache_csv = run.path / "cells" / f"dist={dist}" / "cache.csv"
        assert len(cache_csv.read_text().splitlines()) == len(f["records"]) + 1


@pytest.fixture(scope="module")
def bind916_image():
    """The BIND 9.16 image (Debian 11), built if missing; it starts dockerd if none answers
    (.ci/run stops it at the end)."""
    res = subprocess.run([str(paths.REPO / "scripts" / "build-images.sh"), "bind@9.16"],
                         capture_output=True, text=True, timeout=1800)
    assert res.returncode == 0, res.stdout + res.stderr


def test_bind916_from_its_image_fills_the_additional_section(results, runtime, bind916_image):
    """SERVERS=bind@9.16,bind@9.20: the run adds a BIND 9.20 secondary beside the mobile lab's
    BIND 9.16 (clab: each version's image; netns: each one's root file system). The server
    under test really is each version; 9.16's TAC answer holds every record of the modelled
    full response (the additional section the seed's BIND sent), 9.20's none (CVE-2024-11187's
    fix), while the TCP share is the same (the answer was truncated over UDP either way), and
    the claims are judged per version. As a secondary 9.16 compresses less than the model
    (seen: 17,907 B for the 14,616 B modelled), so bytes are a floor."""
    run = experiment.run_experiment("tcp-fallback", [
        "SCALE=ci", f"RUNTIME={runtime}", "SERVERS=bind@9.16,bind@9.20", "RECORDS=before",
        "TUNINGS=tuned", "STAIR_STOP=200"])
    summary = analysed(run)
    figures = cell_figures(run)
    f = figures["server=bind@9.16,records=before,tuning=tuned"]
    assert f["server_version"].startswith("9.16."), f["server_version"]
    assert f["tac_udp_truncated"] is True
    assert f["tac_tcp_size"] >= f["tac_model_size"] > 3 * 4096
    assert f["tac_tcp_answer"] == f["tac_model_answer"]
    assert f["tac_tcp_additional"] == f["tac_model_additional"] > 100
    assert f["apn_tcp_additional"] == f["apn_model_additional"]
    assert f["tcp_share"] == pytest.approx(f["predicted_tcp_share"], abs=0.03)
    assert f["capacity_qps"] == 200 and f["function_synced"] == f["function_changes"] == 6
    new = figures["server=bind@9.20,records=before,tuning=tuned"]
    assert new["server_version"].startswith("9.20."), new["server_version"]
    assert new["tac_tcp_answer"] == f["tac_tcp_answer"] and new["tac_tcp_additional"] == 1
    assert new["tcp_share"] == pytest.approx(f["tcp_share"], abs=0.03)
    meta = read_meta(run.path)
    assert meta["images"] == {"sec-bind916": "dnslab/bind9:9.16.50-1-deb11u2",
                              "sec-bind920": "dnslab/bind9:9.20.30-1-deb13u1"}
    assert {meta["node_versions"][n]["runs"] for n in ("sec-bind916", "sec-bind920")} == {
        "bind@9.16", "bind@9.20"}
    by_version = {k: {v["claim_id"]: v["status"] for v in vs}
                  for k, vs in summary["verdicts_by_version"].items()}
    assert list(by_version) == ["bind@9.16", "bind@9.20"]
    assert by_version["bind@9.20"]["F1.full-answer"] == "not_applicable"
    cell = read_cell(run.path / "cells" / "server=bind@9.16,records=before,tuning=tuned")
    # 9.16 has no socket buffer options: the tuned cell sets only what it knows
    assert set(cell["params"]["server_options"]) >= {"tcp-clients", "tcp-listen-queue"}
    assert "udp-receive-buffer" not in cell["params"]["server_options"]
