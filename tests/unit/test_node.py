"""The node handle (dnslab/node.py): a running node's control commands, waits and health,
run through the part of its lab it needs (`NodeHost`), from its kind's driver."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from dnslab.errors import LabError
from dnslab.node import LabNode
from dnslab.servers import driver


class _FakeHost:
    """A lab of nodes under /lab: its commands answer from `outputs` (the argv's last word
    -> stdout) and are recorded; a node's log, liveness, address and netns are given."""

    def __init__(self, log: Path = Path("x"), alive: bool = True,
                 outputs: dict[str, str] | None = None):
        self._log, self._alive, self.outputs = log, alive, outputs or {}
        self.ran: list[tuple[str, list[str], float | None]] = []
        self.asked: list[tuple] = []

    def run(self, node, argv, timeout=None, check=True):
        self.ran.append((node, argv, timeout))
        return SimpleNamespace(stdout=self.outputs.get(argv[-1], "done\n"), stderr="")

    def node_dir(self, node):
        return Path("/lab") / node

    def log(self, node):
        return self._log

    def alive(self, node):
        return self._alive

    def address(self, node):
        return "198.18.0.12"

    def netns(self, node):
        return "/run/netns/none"

    def ask(self, from_node, server, name, rdtype="SOA", timeout=1.0, tcp=False, **options):
        """The lab's query from a node: recorded, answered by `answer` (None: no answer)."""
        self.asked.append((from_node, server, name, rdtype, timeout, options))
        return self.answer() if callable(getattr(self, "answer", None)) else None


def test_control_commands_run_the_drivers_argv_in_the_node():
    host = _FakeHost()
    out = LabNode(host, "primary", driver("bind")).reload_zone("example.test.")
    assert host.ran == [("primary", ["rndc", "-c", "/lab/primary/rndc.conf", "reload",
                                     "example.test"], 30)]
    assert out == "$ rndc -c /lab/primary/rndc.conf reload example.test\ndone\n"
    flushed = LabNode(host, "resolver", driver("unbound")).flush()
    assert flushed.count("$ unbound-control") == 3
    with pytest.raises(LabError, match=r"node 'sec' \(nsd\) has no cache flush command"):
        LabNode(host, "sec", driver("nsd")).flush()


def test_unbound_counts_the_failures_it_holds_and_the_queries_in_progress():
    dump = "\n".join([
        "START_RRSET_CACHE", ";rrset 3500 1 0 2 0", "www.a.test. 3600 IN A 198.18.0.1",
        "END_RRSET_CACHE", "START_MSG_CACHE",
        "msg www.a.test. IN A 33152 1 3500 0 1 0 0",      # NOERROR
        "www.a.test. IN A 0",
        "msg nx1.a.test. IN A 33155 1 3500 0 0 1 0",      # NXDOMAIN
        "msg www.broken.test. IN A 33154 1 4 0 0 0 0",    # SERVFAIL, 4 s left
        "msg mail.broken.test. IN MX 33154 1 1 0 0 0 0",  # SERVFAIL
        "END_MSG_CACHE", "EOF"])
    host = _FakeHost(outputs={
        "stats_noreset": "thread0.num.queries=5\ntotal.requestlist.current.all=3\n",
        "dump_cache": dump})
    got = LabNode(host, "resolver", driver("unbound")).unsettled()
    assert got == {"in_progress": 3, "failures_cached": 2}
    assert [argv[-1] for _, argv, _ in host.ran] == ["stats_noreset", "dump_cache"]
    assert LabNode(host, "sld", driver("nsd")).unsettled() is None


def test_wait_for_log_returns_the_line_written_after_the_offset(tmp_path):
    log = tmp_path / "n.log"
    log.write_text("zone a.test loaded serial 1\n")
    node = LabNode(_FakeHost(log), "n", driver("nsd"))
    since = log.stat().st_size
    with open(log, "a") as handle:
        handle.write("zone a.test loaded serial 2\n")
    line = node.wait_for_log(r"serial (\d+)", timeout=1, since=since)
    assert line.endswith("serial 2")
    with pytest.raises(LabError, match="to log a line matching 'never'"):
        node.wait_for_log("never", timeout=0.1)
    with pytest.raises(LabError, match="exited"):
        LabNode(_FakeHost(log, alive=False), "n", driver("nsd")).wait_for_log("never", 5)


def test_wait_for_serial_waits_for_that_serial():
    serials = iter([None, 1, 2])
    host = _FakeHost()
    host.answer = lambda: SimpleNamespace(serial=next(serials))
    node = LabNode(host, "n", driver("knot"))
    assert node.wait_for_serial("a.test.", 2, 5, from_node="c") >= 0
    assert {a[0] for a in host.asked} == {"c"}  # asked from the client, of the node
    host.answer = lambda: None
    with pytest.raises(LabError, match="serial 3"):
        node.wait_for_serial("a.test.", 3, 0.05, from_node="c")


def test_health_is_the_manifests_query_asked_from_the_node_itself():
    host = _FakeHost()
    assert LabNode(host, "sec", driver("knot")).ask_health("a.test", 0.3) is None
    assert host.asked == [("sec", "198.18.0.12", "a.test", "SOA", 0.3, {})]
    assert LabNode(host, "client", driver("tools")).ask_health("a.test", 0.3) is None
    assert len(host.asked) == 1


def test_a_lab_hands_out_its_nodes_with_their_kinds_driver():
    from dnslab.lab import Lab
    from dnslab.runtime.base import LabState, NodeState

    state = LabState(lab="l", runtime="netns", topology="t", root="/lab-root", nodes={
        "sec": NodeState(name="sec", role="secondary", server="pdns", address="198.18.0.12",
                         netns="dnslab-l-sec", log="/lab-root/logs/sec.log")})
    node = Lab(None, state, runtime=None).node("sec")
    assert node.kind == "pdns" and node.dir == Path("/lab-root/nodes/sec")
    with pytest.raises(LabError, match="lab 'l' has no node 'primary'"):
        Lab(None, state, runtime=None).node("primary")
