"""The server drivers (dnslab/servers/): the registry, what each kind knows about itself
(packages, templates, options, log lines, state files, control commands)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dnslab import servers, topology
from dnslab.errors import LabError
from dnslab.servers import driver, merge_options

BIND_LOG = """\
23-Nov-2026 15:18:06.100 zone tld/IN: Transfer started.
23-Nov-2026 15:18:06.101 transfer of 'tld/IN' from 198.18.0.11#53: connected using 198.18.0.12#41000
23-Nov-2026 15:18:32.700 transfer of 'tld/IN' from 198.18.0.11#53: Transfer status: success
23-Nov-2026 15:18:32.750 transfer of 'tld/IN' from 198.18.0.11#53: Transfer completed: \
47700 messages, 14000000 records, 691000000 bytes, 26.649 secs (25929000 bytes/sec) (serial 1)
"""
# Knot 3.2's stderr log has whole seconds
KNOT_LOG = """\
2026-11-23T15:18:06+0000 info: [tld.] AXFR, incoming, remote 198.18.0.11@53, started
2026-11-23T15:18:33+0000 info: [tld.] AXFR, incoming, remote 198.18.0.11@53, \
finished, 27.50 seconds, 47700 messages, 691000000 bytes
"""


@pytest.mark.parametrize("server, log, span, resolution", [
    ("bind", BIND_LOG, 26.65, 0.001), ("knot", KNOT_LOG, 27.0, 1.0)])
def test_transfer_span_from_the_secondarys_own_log(server, log, span, resolution):
    found = driver(server).transfer_span("tld", log)
    assert found["log_span_s"] == pytest.approx(span)
    assert found["log_resolution_s"] == pytest.approx(resolution)
    assert found["log_start"].endswith("06+0000" if server == "knot" else "06.100")


def test_transfer_span_of_an_unfinished_transfer_is_none():
    found = driver("bind").transfer_span("tld", BIND_LOG.splitlines()[0])
    assert found["log_start"] and found["log_end"] is None and found["log_span_s"] is None
    assert driver("bind").transfer_span("other", BIND_LOG)["log_start"] is None



def test_every_kind_has_a_driver_and_the_topology_roles_come_from_them():
    assert set(servers.kinds()) >= {"bind", "knot", "nsd", "dnsdist", "unbound", "tools"}
    assert topology.SERVERS == set(servers.kinds())
    assert {"bind", "knot", "nsd"} <= topology.ROLE_SERVERS["primary"]
    assert {"bind", "knot", "nsd"} <= topology.ROLE_SERVERS["secondary"]
    assert topology.ROLE_SERVERS["frontend"] == {"dnsdist"}
    assert servers.kinds_for_role("client") == ["tools"]


def test_an_unknown_kind_is_a_lab_error_naming_the_known_ones():
    with pytest.raises(LabError) as exc:
        driver("bind10")
    assert "knot" in exc.value.hint


def test_each_drivers_templates_exist_and_only_daemons_get_a_run_script():
    templates = Path(__file__).resolve().parents[2] / "topologies" / "templates"
    for kind in servers.kinds():
        files = driver(kind).templates()
        assert ("run.sh" in files) == driver(kind).runs_daemon
        for template in files.values():
            assert (templates / template).is_file(), template
    assert not driver("tools").runs_daemon and driver("bind").binary == "named"


def test_missing_packages_are_the_debian_packages_of_what_is_not_on_the_path():
    def present(*names):
        return lambda name: f"/usr/bin/{name}" if name in names else None

    assert driver("knot").missing_packages(present("named")) == ["knot"]
    assert driver("knot").missing_packages(present("knotd")) == []
    assert driver("tools").missing_packages(present("dig", "kdig")) == ["dnsperf"]


def test_a_file_no_command_stands_for_is_checked_too(tmp_path, monkeypatch):
    knot = driver("knot")
    monkeypatch.setattr(type(knot), "files", {str(tmp_path / "*.so"): "knot-module"})
    assert knot.missing_packages(lambda name: name) == ["knot-module"]
    (tmp_path / "mod.so").write_text("")
    assert knot.missing_packages(lambda name: name) == []


SECONDARY_LOGS = {
    "bind": [
        ("23-Nov-2026 15:18:32.750 transfer of 'z1.test/IN' from 198.18.0.11#53: Transfer "
         "completed: 1 messages, 5 records, 200 bytes, 0.001 secs", ("transfer_ok", "z1.test")),
        ("transfer of 'z2.test/IN' from 198.18.0.11#53: failed to connect: address not "
         "available", ("connect_failed", "z2.test")),
        ("transfer of 'z3.test/IN' from 198.18.0.11#53: Transfer status: timed out",
         ("transfer_failed", "z3.test")),
    ],
    "knot": [
        ("info: [z1.test.] AXFR, incoming, remote 198.18.0.11@53, finished, 0.00 seconds, "
         "1 messages, 200 bytes", ("transfer_ok", "z1.test")),
        ("warning: [z2.test.] refresh, remote 198.18.0.11@53, address is not available",
         ("connect_failed", "z2.test")),
    ],
    "nsd": [
        ("[2026-11-23 15:18:06.100] nsd[12]: info: zone z1.test. serial 1 is updated",
         ("transfer_ok", "z1.test")),
        ("xfrd: zone z3.test. bad transfer", ("transfer_failed", "z3.test")),
    ],
}


@pytest.mark.parametrize("kind", sorted(SECONDARY_LOGS))
def test_a_secondarys_log_lines_become_transfer_events(kind, tmp_path):
    log = tmp_path / "node.log"
    log.write_text("old line before the follower started\n")
    follower = driver(kind).log_follower(log)
    lines, expected = zip(*SECONDARY_LOGS[kind], strict=True)
    with open(log, "a") as handle:
        handle.write("\n".join(lines) + "\nunrelated\npartial line without newline")
    assert follower.poll() == list(expected)
    assert follower.partial == "partial line without newline"


def test_a_kind_without_transfer_log_patterns_is_refused():
    with pytest.raises(LabError):
        driver("unbound").log_follower(Path("/nonexistent"))


def test_transfer_stats_are_the_daemons_own_figures_for_the_last_axfr():
    assert driver("bind").transfer_stats(BIND_LOG) == {
        "messages": 47700.0, "records": 14000000.0, "bytes": 691000000.0, "secs": 26.649}
    assert driver("knot").transfer_stats(KNOT_LOG)["secs"] == 27.5
    assert driver("nsd").transfer_stats("nothing here") == {}


def test_wipe_state_leaves_an_empty_node_folder_as_on_a_first_start(tmp_path):
    for sub in ("zones", "db", "xfr"):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "left.zone").write_text("x")
    for name in ("xfrd.state", "zone.list", "z.jnl", "nsd.conf"):
        (tmp_path / name).write_text("x")
    driver("nsd").wipe_state(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["db", "nsd.conf", "xfr", "zones"]
    assert not any((tmp_path / "zones").iterdir())


def test_option_translation_per_kind():
    assert driver("bind").payload_options(1232) == {"max-udp-size": 1232, "edns-udp-size": 1232}
    assert driver("knot").payload_options(1232) == {"server": {"udp-max-payload": 1232}}
    assert driver("nsd").payload_options(1232) == {"server": {"ipv4-edns-size": 1232}}
    assert driver("nsd").client_room_options(50) == {
        "server": {"rrl-ratelimit": 0, "rrl-whitelist-ratelimit": 0}, "tcp-count": 200}
    assert driver("bind").client_room_options(10) == {"tcp-clients": 150,
                                                      "http-listener-clients": 300}
    assert driver("unbound").client_room_options(100) == {"server": {"incoming-num-tcp": 200}}
    assert driver("knot").client_room_options(10) == {}
    # each outgoing transfer is a TCP client as well: BIND's 150 would cap transfers-out (a
    # 9.20.26+ secondary holds each transfer's connection 5 s: 150 / 5 s = 30 per second)
    assert driver("bind").transfer_out_options(5000) == {
        "transfers-out": 5000, "tcp-clients": 5000, "tcp-listen-queue": 5000}
    assert driver("bind").transfer_out_options(10) == {
        "transfers-out": 10, "tcp-clients": 150, "tcp-listen-queue": 10}
    assert driver("bind").transfer_out_options(0) == {}
    assert driver("nsd").transfer_out_options(5000) == {"tcp-count": 5000}
    assert merge_options({"server": {"a": 1}, "b": 2}, {"server": {"c": 3}, "b": 4}) == {
        "server": {"a": 1, "c": 3}, "b": 4}


def test_health_answers_and_control_commands():
    assert driver("bind").answer_healthy("NOERROR", {})
    assert not driver("bind").answer_healthy("REFUSED", {})
    assert driver("dnsdist").answer_healthy("REFUSED", driver("dnsdist").refuse_all_options())
    node_dir = Path("/lab/nodes/primary")
    assert driver("bind").reload_argv(node_dir, "example.test") == [
        "rndc", "-c", "/lab/nodes/primary/rndc.conf", "reload", "example.test"]
    assert driver("knot").reload_argv(node_dir, "example.test")[-2:] == [
        "zone-reload", "example.test."]
    assert driver("unbound").flush_argvs(node_dir)[0][-2:] == ["flush_zone", "."]
    assert driver("nsd").flush_argvs(node_dir) is None


def test_front_end_and_resolver_settings_only_where_the_kind_has_them():
    dnsdist = driver("dnsdist")
    assert dnsdist.listener_options(None) == {"listeners": 1, "listen_options": ""}
    tuned = dnsdist.listener_options([2, 3])
    assert tuned["listeners"] == 2 and tuned["cpu_list"] == [2, 3]
    options = driver("unbound").resolver_options(4, {"prefetch": "no"})["server"]
    assert options["num-threads"] == 4 and options["outgoing-range"] == 206
    assert options["prefetch"] == "no"
    with pytest.raises(LabError):
        driver("bind").resolver_options(4, {})
    with pytest.raises(LabError):
        driver("knot").refuse_all_options()
