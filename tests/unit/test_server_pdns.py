"""The PowerDNS driver: its log lines (taken from pdns_server 4.7.3 as a secondary of the lab's
BIND primary), its option translation and control commands, and its rendered configuration."""

from __future__ import annotations

from pathlib import Path

from dnslab import render, topology
from dnslab.servers import driver

# A cold start, a zone whose SOA query went unanswered, one the primary refuses to transfer,
# and a secondary out of ports
# (ip_local_port_range 40000-40099, every port in TIME_WAIT)
PDNS_LOG = """\
Nov 23 18:45:41 1001 slave domains need checking, 0 queued for AXFR
Nov 23 18:45:44 Domain 'z00005.test' is empty, master 198.18.0.11 serial 2024010101
Nov 23 18:45:44 XFR-in zone: 'z00005.test', primary: '198.18.0.11', initiating transfer
Nov 23 18:45:44 XFR-in zone: 'z00005.test', primary: '198.18.0.11', starting AXFR
Nov 23 18:45:44 AXFR-in zone 'z00005.test', primary '198.18.0.11', retrieval started
Nov 23 18:45:44 AXFR-in zone: 'z00005.test', primary: '198.18.0.11', retrieval finished
Nov 23 18:45:44 Zone 'z00005.test' (/lab/sec-pdns/zones/z00005.test.zone) reloaded
Nov 23 18:45:45 AXFR-in zone: 'z00005.test', primary: '198.18.0.11', zone committed with \
serial 2024010101
Nov 23 18:45:44 Unable to retrieve SOA for z00304.test, this was the first time. NOTE: For \
every subsequent failed SOA check the domain will be suspended from freshness checks for \
'num-errors x 60 seconds', with a maximum of 3600 seconds. Skipping SOA checks until 1795459604
Nov 23 19:35:16 XFR-in zone: 'noxfr.test', primary: '198.18.0.11', unable to xfr zone \
(ResolverException): AXFR chunk error: Query Refused (This was attempt number 1. Excluding zone \
from slave-checks until 1795462576)
Nov 23 18:47:10 XFR-in zone: 'z00017.test', primary: '198.18.0.11', unable to xfr zone \
(PDNSException): Resolver binding to local TCP socket on '198.18.0.16': Address already in use
"""


def test_pdns_log_lines_become_transfer_events(tmp_path):
    log = tmp_path / "sec-pdns.log"
    log.write_text("")
    follower = driver("pdns").log_follower(log)
    log.write_text(PDNS_LOG)
    assert follower.poll() == [("transfer_ok", "z00005.test"),
                               ("transfer_failed", "z00304.test"),
                               ("transfer_failed", "noxfr.test"),
                               ("connect_failed", "z00017.test")]


def test_pdns_transfer_span_on_its_own_clock():
    span = driver("pdns").transfer_span("z00005.test", PDNS_LOG)
    assert (span["log_start"], span["log_end"]) == ("Nov 23 18:45:44", "Nov 23 18:45:45")
    assert span["log_span_s"] == 1.0 and span["log_resolution_s"] == 1.0
    assert driver("pdns").transfer_span("z00304.test", PDNS_LOG)["log_span_s"] is None
    # pdns logs no message, record or byte counts for a transfer
    assert driver("pdns").transfer_stats(PDNS_LOG) == {}


def test_pdns_options_and_control_commands(tmp_path):
    pdns = driver("pdns")
    assert pdns.roles == {"secondary"}
    assert pdns.payload_options(4096) == {"udp-truncation-threshold": 4096}
    assert pdns.client_room_options(50) == {"max-tcp-connections": 200}
    assert pdns.reload_argv(tmp_path, "example.test") == [
        "pdns_control", f"--config-dir={tmp_path}", "bind-reload-now", "example.test"]
    assert pdns.flush_argvs(tmp_path) == [["pdns_control", f"--config-dir={tmp_path}", "purge"]]
    assert "pdns-server" in pdns.missing_packages(lambda name: None)


def test_pdns_secondary_renders_its_zone_list_and_settings(tmp_path: Path):
    lab = topology.load("xfr")
    zone = tmp_path / "z1.test.zone"
    zone.write_text("")
    data = render.LabData(zones=[render.ZoneRef("z1.test.", zone)], health_zone="z1.test.",
                          node_options={"sec-pdns": {"udp-truncation-threshold": 4096}})
    rendered = render.render(lab, data, tmp_path / "lab")
    node_dir = rendered.node_dir("sec-pdns")
    conf = (node_dir / "pdns.conf").read_text().splitlines()
    address = str(lab.node("sec-pdns").address)
    assert f"local-address={address}, 127.0.0.1" in conf
    assert "secondary=yes" in conf and "launch=bind" in conf
    assert f"allow-notify-from={lab.node('primary').address}" in conf
    assert "security-poll-suffix=" in conf  # no query to powerdns.com
    assert conf[-1] == "udp-truncation-threshold=4096"
    zones = (node_dir / "named.conf").read_text()
    assert 'zone "z1.test." {' in zones and "type slave;" in zones
    assert f"masters {{ {lab.node('primary').address}; }};" in zones
    assert 'file "zones/z1.test.zone";' in zones
    assert (node_dir / "run.sh").read_text().endswith(
        f'exec pdns_server --config-dir="{node_dir}"\n')


def test_the_xfr_and_mobile_labs_have_a_pdns_secondary():
    for lab in ("xfr", "mobile"):
        node = topology.load(lab).node("sec-pdns")
        assert (node.role, node.server) == ("secondary", "pdns")
