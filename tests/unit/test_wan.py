"""WAN emulation's pure parts: link shapes from experiment data, netem arguments, and the
delayer bookkeeping `lab down` relies on."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from dnslab import wan
from dnslab.errors import LabError


def test_a_link_shape_from_experiment_data():
    shape = wan.parse("sld", {"delay_ms": 40, "jitter_ms": 15, "loss_pct": 0.5})
    assert shape == wan.LinkShape(40.0, 15.0, 0.5)
    assert shape.netem_args() == ["netem", "delay", "40ms", "15ms", "distribution", "normal",
                                  "loss", "0.5%"]
    assert wan.parse("root", {"delay_ms": 20}).netem_args() == ["netem", "delay", "20ms"]
    assert wan.parse("dead", {"loss_pct": 100}).netem_args() == [
        "netem", "delay", "0ms", "loss", "100%"]


@pytest.mark.parametrize("spec, message", [
    ({"delay": 40}, "unknown key"),
    ({"delay_ms": "far"}, "must be numbers"),
    ({"loss_pct": 120}, "above 100"),
    ({"jitter_ms": -1}, "negative"),
    ("40ms", "not a mapping"),
])
def test_bad_link_shapes_get_one_clear_error(spec, message):
    with pytest.raises(LabError, match=message):
        wan.parse("sld", spec)


def test_stop_all_stops_the_delayers_recorded_and_forgets_them(tmp_path):
    state = wan.state_dir(tmp_path)
    state.mkdir()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    (state / "sld.pid").write_text(str(sleeper.pid))
    (state / "gone.pid").write_text("999999999")
    stopped = wan.stop_all(tmp_path)
    assert stopped == [f"wan delayer sld (pid {sleeper.pid})"]
    assert sleeper.wait(timeout=5) is not None
    assert not list(state.glob("*.pid"))
    assert wan.stop_all(tmp_path / "no-lab") == []


def test_delayer_counters_are_read_back_for_nfqueue_only(tmp_path):
    stats = tmp_path / "sld.json"
    stats.write_text('{"queued": 5, "accepted": 4, "dropped": 1}')
    assert wan.read_stats({"backend": "nfqueue", "stats_file": str(stats)})["dropped"] == 1
    assert wan.read_stats({"backend": "netem"}) is None


class RemoteHost:
    """Another host: what it is asked to run and copy is recorded."""

    local = False
    name = "a"

    def __init__(self, files: dict[str, bytes] | None = None):
        self.calls: list[tuple[str, dict]] = []
        self.pushed: list = []
        self.files = files or {}

    def call(self, verb, **args):
        self.calls.append((verb, args))
        return {"backend": "nfqueue", "stats_file": "/b/labs/r/wan/sld.json"}

    def push(self, sources):
        self.pushed += list(sources)

    def read_bytes(self, path, offset=0):
        return self.files.get(str(path), b"")


def test_wan_on_a_node_of_another_host_is_applied_there_with_this_nfqueue(tmp_path):
    """The delayer runs on the node's host, with the NetfilterQueue package this machine has
    (copied there first: no Debian package has it), and its counters are read there."""
    import netfilterqueue

    library = Path(netfilterqueue.__file__).parent
    host = RemoteHost({"/b/labs/r/wan/sld.json": b'{"accepted": 9}'})
    wan.ship_delayer(host)
    assert host.pushed == [library]
    applied = wan.apply_on(host, tmp_path, "sld", "/run/netns/x", wan.LinkShape(40, 15, 0.5),
                           seed=3)
    verb, args = host.calls[0]
    assert verb == "wan-apply" and args["shape"] == {"delay_ms": 40, "jitter_ms": 15,
                                                     "loss_pct": 0.5}
    assert args["python_path"] == [str(library.parent)] and args["seed"] == 3
    assert wan.read_stats(applied, host) == {"accepted": 9}
    assert wan.read_stats({"stats_file": "/b/none.json"}, host) is None
    from dnslab.hosts import LOCAL_HOST

    wan.ship_delayer(LOCAL_HOST)  # this machine has it already: nothing to copy


def test_a_shaped_node_stops_autocorking_and_reads_it_back(tmp_path, monkeypatch):
    """A delayed packet is its sender's until it leaves: autocorking would hold the socket's
    next small write back for the whole delay (a DoT query behind the client's Finished),
    so `apply` turns it off in the node's namespace and says what the kernel read back."""
    written, commands = [], []
    monkeypatch.setattr(wan.sysctl, "apply_in_netns",
                        lambda netns, values: written.append((netns, values)) or dict(values))
    monkeypatch.setattr(wan, "kernel_has_netem", lambda netns: True)
    monkeypatch.setattr(wan, "_in_ns", lambda netns, argv, check=True: commands.append(argv)
                        or subprocess.CompletedProcess(argv, 0, "qdisc netem 8001: root", ""))
    applied = wan.apply(tmp_path, "client", "/run/netns/x", wan.LinkShape(20))
    assert written == [("/run/netns/x", {"net.ipv4.tcp_autocorking": "0"})]
    assert applied["sysctls"] == {"net.ipv4.tcp_autocorking": "0"}
    assert applied["backend"] == "netem" and ["tc", "qdisc", "replace", "dev", "eth1", "root",
                                              "netem", "delay", "20ms"] in commands
