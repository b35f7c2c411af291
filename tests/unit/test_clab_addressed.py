"""A clab lab is up only once every node's entrypoint has put its address on eth1: deploy
returns when the links exist, and a probe from a client (which has no health check) sent
before that found no route (CI, the xfr tests on clab)."""

from __future__ import annotations

import pytest

from dnslab.errors import LabError
from dnslab.runtime.base import LabState, NodeState
from dnslab.runtime.clab import ClabRuntime


class SlowEntrypointHost:
    """This machine, where each node's address shows after `late[node]` asks."""

    local, name = True, ""

    def __init__(self, late: dict[str, int]):
        self.late, self.asked = late, {n: 0 for n in late}

    def call(self, verb: str, netns: str, iface: str) -> list[str] | None:
        assert verb == "interface-addresses" and iface == "eth1"
        node = netns.rsplit("/", 1)[1]
        self.asked[node] += 1
        if self.asked[node] <= self.late[node]:
            return None
        return [f"198.18.0.{len(node)}"]


def lab_with(host: SlowEntrypointHost, monkeypatch: pytest.MonkeyPatch) -> LabState:
    state = LabState(lab="t", runtime="clab", topology="", root="/tmp")
    for name in host.late:
        state.nodes[name] = NodeState(name=name, role="", server="", log=f"/logs/{name}.log",
                                      address=f"198.18.0.{len(name)}", netns=f"/proc/{name}")
    monkeypatch.setattr(LabState, "host", lambda self, node: host)
    return state


def test_the_lab_waits_for_each_nodes_address(monkeypatch: pytest.MonkeyPatch) -> None:
    host = SlowEntrypointHost({"client": 3, "primary": 0})
    ClabRuntime._wait_addressed(lab_with(host, monkeypatch), timeout=5)
    assert host.asked == {"client": 4, "primary": 1}


def test_a_node_that_never_gets_its_address_is_named_with_its_log(
        monkeypatch: pytest.MonkeyPatch) -> None:
    host = SlowEntrypointHost({"client": 10**6, "primary": 0})
    with pytest.raises(LabError, match="node 'client' has no address 198.18.0.6 on its eth1") \
            as raised:
        ClabRuntime._wait_addressed(lab_with(host, monkeypatch), timeout=0.2)
    assert raised.value.hint == "its log: /logs/client.log"
