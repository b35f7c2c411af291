"""F6's integration checks (tests/integration/test_finding_packages.py runs both experiments
at SCALE=ci: transport-cost on both runtimes, transport-latency on netns, as RUNTIMES says):
each run measured what its claims and plots need, with the
lab's guarantees kept. Every transport's generator ceiling against `dnsload serve`; every
server over each transport its packaged version serves (the others recorded as not served),
answering NOERROR from memory over connections kept open, on the server's cores while the
generator ran on its own; TLS 1.3 on every encrypted listener; each server's TCP_NODELAY read
off its own socket (the responder's on); under an emulated round trip, that delay read back
in every cell (autocorking off where it is applied), every answer slower than it, and the
responder's new DoT connection at the handshakes' count (nothing of the lab's own adds a
round trip)."""

from __future__ import annotations

from typing import Any

from analysis.rundata import load_run
from analysis.verdicts import experiment_claims
from dnslab import cpus
from dnslab.experiment import Run
from dnslab.results import read_meta
from dnslab.servers import driver
from experiments.f6_transport_cost import derived

EXPERIMENTS = ["transport-cost", "transport-latency"]
# transport-latency starts the servers and listeners transport-cost starts, which runs on both
# runtimes; its own part (the emulated round trip, the handshakes counted) is the runtime's
# netem and the servers' sockets alike on each, so the clab run (85 s of CI) adds no path
RUNTIMES = {"transport-latency": ["netns"]}


def check(run: Run, runtime: str, summary: dict[str, Any]) -> None:
    loaded = load_run(run.path)
    meta = read_meta(run.path)
    assert loaded.complete and meta["runtime"] == runtime
    assert all(cell.status == "complete" for cell in loaded.cells)
    placement = meta["placement"]
    assert not placement["shared"]
    assert not set(cpus.parse(placement["server_cpus"])) & set(
        cpus.parse(placement["generator_cpus"]))
    transports = list(run.params["transports"])
    ceiling = derived.ceiling_cell(loaded)
    assert ceiling is not None
    top = derived.trials(ceiling)
    for transport in transports:
        assert derived.median_qps(top, transport) > 0, transport
        if transport in ("dot", "doh"):
            assert ceiling.figures[f"tls_{transport}"].startswith("TLSv1.3"), transport
        if transport != "udp":  # Go's sockets: TCP_NODELAY on
            assert ceiling.figures[f"nodelay_{transport}"] is True, transport
    cells = derived.server_cells(loaded)
    assert list(cells) == list(run.params["servers"])
    for server, cell in cells.items():
        node = cell.params["server_node"]
        affinity = meta["cells"][cell.id]["affinity"]
        assert affinity[node] == placement["server_cpus"], (server, affinity)
        client = run.topology.node(role="client").name
        assert meta["cells"][cell.id]["placement"][client] == placement["generator_cpus"]
        serves = {"udp", "tcp", *driver(server).encrypted_transports}
        assert set(cell.figures["not_served"]) == set(transports) - serves, server
        assert cell.figures["warm_noerror"] == cell.figures["warm_completed"] > 0, server
        frame = derived.trials(cell)
        for transport in sorted(serves & set(transports)):
            found = derived.measured(loaded, server, transport)
            assert found is not None and found.qps > 0, (server, transport)
            assert found.noerror_share >= 0.99, (server, transport, found)
            if transport in ("dot", "doh"):
                assert cell.figures[f"tls_{transport}"].startswith("TLSv1.3"), server
            if transport != "udp":
                assert derived.nodelay_of(loaded, server, transport) is not None, server
        kept = frame[frame["mode"] == derived.PERSISTENT]
        assert (kept["reconnections"].fillna(0).astype(float) == 0).all(), server
    assert {v["claim_id"] for v in summary["verdicts"]} == set(experiment_claims(run.spec.name))
    if derived.rtt_ms(loaded):
        _latency(loaded)


def _latency(loaded: Any) -> None:
    """Under the emulated round trip: read back in every cell, and no answer faster."""
    rtt = derived.rtt_ms(loaded)
    for cell in loaded.cells:
        assert derived.wan_applied(loaded, cell) == rtt, cell.id
        for applied in loaded.meta["cells"][cell.id]["wan"].values():
            assert applied["sysctls"] == {"net.ipv4.tcp_autocorking": "0"}, cell.id
        frame = derived.trials(cell)
        for transport, mode in {(t, m) for t, m in zip(frame["transport"], frame["mode"],
                                                        strict=True)}:
            pooled = derived.pooled_latency(cell, transport, mode)
            assert pooled is not None and pooled.answered > 0, (cell.id, transport, mode)
            fastest = float(pooled.upper_ms[pooled.counts > 0].min())
            # a histogram bucket's upper edge: the fastest answer's bucket ends above the RTT
            assert fastest >= rtt, (cell.id, transport, mode, fastest)
    # TCP's, then TLS 1.3's handshake, then the query: 3 round trips (4.1 while the delayed
    # client's autocorking held its first query behind its Finished for one more delay)
    responder = derived.responder_median_ms(loaded, "dot", derived.PER_QUERY)
    if responder is not None:
        assert abs(responder / rtt - 3) <= 0.6, responder
