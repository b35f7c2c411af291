"""What the load procedures derive from raw counters: a step's note on retried SYNs, the mean
busy share of a CPU set over a step, kxdpgun's totals, the ceilings benchmark's rows."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import bench_ceilings
from dnslab.counters import mean_cores, mean_cpu
from dnslab.errors import LabError
from dnslab.results import RunWriter
from experiments.f1_tcp_fallback.stair_recorder import step_note
from experiments.generators.kxdpgun import parse_kxdpgun

KXDPGUN = """using interface eth1, XDP threads 1, UDP, native mode
thread#00: sent 100010, received 98192
total queries:     100010 (20002 pps)
total replies:     98192 (19638 pps) (98%)
average DNS reply size: 42 B
average Ethernet reply rate: 13197288 bps (13.20 Mbps)
responded REFUSED:   98192
duration: 5 s
"""


def test_a_step_failing_on_one_retried_syn_says_so():
    row = {"client_syn_retrans": 1, "listen_overflows": 1, "req_q_full_drops": 0,
           "max_ms": 1043.0, "p99_ms": 12.0}
    note = step_note(row, 1000.0)
    assert note.startswith("worst TAT 1043 ms is a retried SYN")
    assert "1 SYN retransmission(s)" in note and "1 listen/SYN-queue drop(s)" in note
    # the p99 is over the limit too: the SYN is not the whole story
    assert not step_note({**row, "p99_ms": 1500.0}, 1000.0).startswith("worst TAT")
    assert step_note({**row, "client_syn_retrans": 0}, 1000.0) == ""


def test_mean_cores_and_cpu_over_a_step_window(tmp_path: Path):
    cores = tmp_path / "cores.csv"
    cores.write_text("t,cpu0,cpu1\n1.0,10,90\n2.0,20,80\n3.0,30,70\n")
    assert mean_cores(cores, "0", 1.0, 3.0) == 25.0
    assert mean_cores(cores, "0-1", 0.0, 1.0) == 50.0
    assert mean_cores(cores, "any", 0.0, 3.0) is None
    monitor = tmp_path / "node.csv"
    monitor.write_text("t,cpu_pct\n1.0,\n2.0,40\n3.0,60\n")
    assert mean_cpu(monitor, 0.0, 3.0) == 50.0


def test_kxdpgun_totals_parse():
    result = parse_kxdpgun(KXDPGUN)
    assert (result.sent, result.received, result.duration_s) == (100010, 98192, 5.0)
    assert result.rcodes == {"REFUSED": 98192}
    assert result.offered_qps == pytest.approx(20002)
    assert result.qps == pytest.approx(19638)  # kxdpgun's own pps (exact duration)
    assert result.failures_per_s == pytest.approx((100010 - 98192) / 5)
    with pytest.raises(LabError, match="no totals"):
        parse_kxdpgun("failed to initialize XDP socket\n")


PLACED = {"generator_cpus": "1", "server_cpus": "0", "shared": False}


def _run(root: Path, experiment: str, run_id: str, params: dict) -> RunWriter:
    writer = RunWriter.create(root, experiment, run_id, {"params": params})
    writer.record_run_placement(PLACED)
    return writer


def _cell(run: RunWriter, cell_id: str, params: dict, figures: dict) -> None:
    run.start_cell(cell_id, params, started="2026-11-25T00:00:00+00:00")
    run.write_cell(cell_id, figures, "complete")


def test_ceilings_benchmark_puts_each_cell_beside_its_ceiling(tmp_path: Path):
    writer = _run(tmp_path, "tcp-fallback", "r1", {})
    run = writer.dir
    _cell(writer, "server=ceiling,records=after", {"server": "ceiling", "records": "after"},
          {"capacity_qps": 20000, "first_fail_qps": 25000})
    _cell(writer, "server=bind,records=after,tuning=tuned",
          {"server": "bind", "records": "after", "tuning": "tuned"}, {"capacity_qps": 19000})
    _cell(writer, "server=bind,records=after,tuning=untuned",
          {"server": "bind", "records": "after", "tuning": "untuned"}, {"capacity_qps": 2000})
    rows = {r["cell"]: r for r in bench_ceilings.rows_for(run)}
    assert rows["server=bind,records=after,tuning=tuned"]["share"] == pytest.approx(0.95)
    assert rows["server=bind,records=after,tuning=untuned"]["share"] == pytest.approx(0.1)
    assert rows["server=bind,records=after,tuning=tuned"]["lower_bound"] is False
    assert bench_ceilings.main([str(run)]) == 0


def test_ceilings_benchmark_puts_each_paced_load_beside_dnsperfs_ceiling(tmp_path: Path,
                                                                         capsys):
    writer = _run(tmp_path, "tcp-sysctl", "r2", {"loads": [10, 100]})
    run = writer.dir
    _cell(writer, "phase=capacity", {"phase": "capacity", "profile": "default"},
          {"capacity_qps": 18000})
    _cell(writer, "phase=ceiling", {"phase": "ceiling"},
          {"ceiling_qps_l10": 1800, "ceiling_qps_l100": 10600})
    _cell(writer, "profile=default", {"profile": "default"},
          {"target_qps_l10": 1800, "target_qps_l100": 18000, "qps_l10": 1790,
           "qps_l100": 10500})
    rows = {r["cell"]: r for r in bench_ceilings.paced_rows_for(run)}
    assert rows["profile=default @100%"]["generator_limited"] is True
    assert rows["profile=default @100%"]["share"] == pytest.approx(10500 / 10600)
    assert rows["profile=default @10%"]["generator_limited"] is False
    assert bench_ceilings.main([str(run)]) == 0
    out = capsys.readouterr().out
    assert "profile=default @100%" in out and "generator-limited" in out


def test_ceilings_benchmark_puts_each_resolver_pass_beside_dnsperfs_ceiling_at_its_q(
        tmp_path: Path, capsys):
    writer = _run(tmp_path, "resolver-cache", "r3", {})
    run = writer.dir
    _cell(writer, "phase=ceiling", {"phase": "ceiling", "outstanding": [100, 300]},
          {"ceiling_qps_q100": 40000, "ceiling_qps_q300": 60000})
    _cell(writer, "cache=warm,outstanding=100", {"cache": "warm", "outstanding": 100},
          {"qps": 38000})
    _cell(writer, "cache=warm,outstanding=300", {"cache": "warm", "outstanding": 300},
          {"qps": 6000})
    _cell(writer, "ramp=resperf,cache=warm", {"cache": "warm", "tool": "resperf"},
          {"max_throughput_qps": 9000})
    rows = {r["cell"]: r for r in bench_ceilings.rows_for(run)}
    assert rows["cache=warm,outstanding=100"]["share"] == pytest.approx(0.95)
    assert rows["cache=warm,outstanding=300"]["share"] == pytest.approx(0.1)
    assert rows["ramp=resperf,cache=warm"]["ceiling"] is None
    assert bench_ceilings.main([str(run)]) == 0
    out = capsys.readouterr().out
    assert "cache=warm,outstanding=100" in out and "generator-limited" in out
