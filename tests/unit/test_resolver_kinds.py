"""What the two resolver kinds beside Unbound need of their own: Knot Resolver (kresd) runs one
process per core and never falls back to the real root's hints or trust anchor; PowerDNS
Recursor's two configuration files (4.8's recursor.conf, 5's recursor.yml) carry the same
settings; both read their leftovers (in progress, failures held) from their control
commands' real output."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from dnslab import cpus
from dnslab.servers import driver
from tests.conftest import need_binary
from tests.unit.test_server_configs import render_one


def test_kresd_runs_one_process_per_core_the_others_ending_with_the_first(tmp_path,
                                                                         monkeypatch):
    monkeypatch.setattr(cpus, "available", lambda: [0, 1, 2, 3])
    for cpu_set, cores in (("1", 1), ("0-2", 3)):
        rendered = render_one(tmp_path / cpu_set, "kresd", "resolver", cpu_set=cpu_set)
        run_sh = (rendered.node_dir("under-test") / "run.sh").read_text()
        background = [line for line in run_sh.splitlines() if line.endswith("&")]
        assert len(background) == cores - 1
        assert all(line.startswith("setpriv --pdeathsig TERM kresd -n ") for line in background)
        assert sum(line.startswith("exec kresd -n ") for line in run_sh.splitlines()) == 1


def _kresd_loads(node_dir: Path) -> subprocess.CompletedProcess[str]:
    argv = driver("kresd").config_check_argv(node_dir)
    assert argv is not None
    need_binary("kresd")
    need_binary(argv[0])
    return subprocess.run(argv, capture_output=True, text=True, timeout=60)


def test_kresd_refuses_to_start_without_the_lab_roots_hints(tmp_path):
    """kresd loads the packaged real-root hints after its config when it has none: the lab's
    config makes that fallback fail, so a lab without hints stops instead of leaking."""
    rendered = render_one(tmp_path, "kresd", "resolver")
    folder = rendered.node_dir("under-test")
    conf = (folder / "kresd.conf").read_text()
    assert "trust_anchors.remove('.')" in conf and "modules.unload('ta_update')" in conf
    hints = (folder / "root.hints").read_text()
    addresses = [line.split()[-1] for line in hints.splitlines() if " A " in line]
    assert addresses == [str(rendered.topology.nodes["pri"].address)]
    assert _kresd_loads(folder).returncode == 0
    # without its hints line the config still loads; postconfig's fallback is what fails
    (folder / "kresd.conf").write_text(conf.replace("hints.root_file(", "-- hints.root_file("))
    (folder / "config-check.lua").write_text("")  # no quit: run postconfig as a start would
    started = _kresd_loads(folder)
    assert started.returncode != 0 and "never the real root" in started.stderr


def _yaml_value(value: object) -> object:
    return {"yes": True, "no": False}.get(str(value), value)


def test_recursor_writes_the_same_settings_for_4_8_and_5(tmp_path):
    drv = driver("recursor")
    options = {**drv.resolver_options(3, {"max-cache-entries": 200000}),
               **drv.client_room_options(50)}
    rendered = render_one(tmp_path, "recursor", "resolver", options=options)
    folder = rendered.node_dir("under-test")
    lines = (folder / "recursor.conf").read_text().splitlines()
    old = dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))
    assert old.pop("ignore-unknown-settings") == "tcp-threads"
    new = yaml.safe_load((folder / "recursor.yml").read_text())
    flat = {name: value for section in new.values() for name, value in section.items()}
    assert len(flat) == len(old)
    assert new["recursor"]["threads"] == new["recursor"]["tcp_threads"] == 3
    assert old["threads"] == old["tcp-threads"] == "3"
    assert new["recordcache"]["max_entries"] == 200000 and old["max-cache-entries"] == "200000"
    address = str(rendered.topology.nodes["under-test"].address)
    assert new["incoming"]["listen"] == [address, "127.0.0.1"]
    assert old["local-address"] == f"{address}, 127.0.0.1"
    assert new["dnssec"]["validation"] == old["dnssec"] == "off"
    assert new["recursor"]["hint_file"] == old["hint-file"] == str(folder / "root.hints")
    assert new["recursor"]["security_poll_suffix"] == old["security-poll-suffix"] == ""
    for name, value in old.items():
        yaml_name = name.replace("-", "_")
        if yaml_name in flat and not isinstance(flat[yaml_name], list):
            assert str(_yaml_value(value)) == str(flat[yaml_name]), name


def test_recursor_refuses_a_setting_it_has_no_yaml_name_for(tmp_path):
    from dnslab.errors import LabError

    with pytest.raises(LabError, match="rendering recursor config"):
        render_one(tmp_path, "recursor", "resolver", options={"no-such-setting": 1})


def test_kresd_leftovers_from_its_control_sockets():
    # two kresd processes answering `worker.stats().concurrent` through socat, as read
    found = driver("kresd").parse_unsettled(["> 3\n> \n> 4\n> \n"])
    assert found == {"in_progress": 7, "failures_cached": 0}
    assert driver("kresd").parse_unsettled(["> 0\n> \n"]) == {"in_progress": 0,
                                                              "failures_cached": 0}


def test_recursor_leftovers_are_its_queries_in_progress_and_throttled_failures():
    # `rec_control get concurrent-queries throttle-entries`, as read after 3 broken names
    assert driver("recursor").parse_unsettled(["0\n3\n"]) == {"in_progress": 0,
                                                              "failures_cached": 3}
    argv = driver("recursor").unsettled_commands(Path("/lab/nodes/r"))[0][0]
    assert argv == ["rec_control", "--socket-dir=/lab/nodes/r", "get", "concurrent-queries",
                    "throttle-entries"]
    assert driver("recursor").flush_argvs(Path("/lab/nodes/r")) == [
        ["rec_control", "--socket-dir=/lab/nodes/r", "wipe-cache", ".$"]]
