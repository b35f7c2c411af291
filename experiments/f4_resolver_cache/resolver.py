"""F4 (seed 003): a caching Unbound in front of an emulated internet, cold vs warm cache.

Lab `resolver`: `root` (NSD, the lab root zone), `tld` (NSD, the TLD zones), `sld` (NSD,
the second-level zones), `sld-slow`, `sld-dead` and `sld-broken` (NSD, the `slow_pct` %,
`dead_pct` % and `broken_pct` % of second-level zones that make the tail real traffic has),
the resolver under test, the node of kind `resolver` (`resolver`: Unbound configured as in
the seed, scaled to this host's cores; or Knot Resolver, PowerDNS Recursor: their driver's
`resolver_options`; the other resolvers are held in every cell; cells name it as
`resolver_node`) and `client` (dnsperf, resperf). The zones come from
the `internet` generator with the delegations pointing at exactly these nodes (and
`nxdomain_pct` % of the name list asking for names that do not exist); Unbound's root hints
name only `root`. NSD's response rate limiting is off on all of them (a resolver is one
source address).

The seed's upstream was the internet, tens of milliseconds away: `wan` gives each
authoritative node a delay, jitter and loss on its link (dnslab.wan, applied to what the node
sends, so a round trip to it takes that much longer; read back into meta.json per cell).
`sld-dead`'s link loses everything (its names time out: SERVFAIL or lost queries).
`sld-broken` answers, but SERVFAIL: its zones are configured without their data (the zone
file is absent, as on a secondary whose zone expired), so its names fail after the round
trips the resolver spends retrying them, every time they are asked (a resolver keeps a
failure only seconds). That is the seed's warm tail: 1.0-1.6 % of names answered SERVFAIL
after up to ~4.9 s, holding dnsperf's outstanding-query slots, so that more `-q` gave more qps.

Placement (`Run.placement`): the client (dnsperf, resperf) on the generator's CPUs (the
last core), the resolver and the emulated internet's servers on the others (SHARE_CORES=1:
every node on every core, said in the run); Unbound's num-threads is the number of the
resolver's CPUs unless `cores` says otherwise. Across hosts (HOSTS=) the client is on the
generator's host and the resolver, the emulated internet and its WAN emulation on the
server's host, each side on every CPU of its own host; the ceiling's responder answers at
the resolver's address there, through the same VXLAN path. Recorded in meta.json and in
every cell.

First (after the calibration, below), unless `ceiling: false`, `phase=ceiling`: the
generator's own ceiling for exactly the cells' dnsperf command (one pass over the list at
each `-q`; with `warm_s` > 0 also the warm cells' loop of that many seconds),
`ceiling_trials` times, against `dnsload serve` (a canned responder) in the resolver's
namespace on the resolver's CPUs, every DNS daemon held. Figures `ceiling_qps_q<q>` (median
answered qps), `ceiling_qps_trials_q<q>`, with `warm_s` also `ceiling_loop_qps_q<q>`;
`ceiling.csv` one row per pass; `dnsload/serve.jsonl` the responder's counts. dnsperf's own
CPU share is no evidence of its limit: it busy-waits (99 % of a core while a pass waits
seconds on a few slow names), so a pass is generator-limited when its qps is near this
ceiling, not when dnsperf's CPU is high.

Before the ceiling and every other cell, unless `calibrate: false` (or WAN={}),
`phase=calibration,round=<r>`: the emulated internet calibrated to the seed's cold pass
(calibration.py): per round a fresh lab with that round's link shapes, a flush and one cold
pass at `-q calibration_outstanding` (figures as a cold cell's, plus `met` {latency,
slowest, lost}, `scale` and `broken_delay_ms`), until a pass meets every target or
`calibration_rounds` ran; the round that met most (the nearest average latency among them)
gives every later cell its shapes (meta.json `wan_calibrated`; each cell's `wan_from` names
the round; no round meeting all: a warning in meta.json `warnings`).

Then, in this order for each `-q` in `outstanding` (each cell a fresh lab):
- `cache=cold,outstanding=<q>`: `trials` times: flush the cache (the resolver
  driver's `flush`: every cache and the request list, over its unix control socket), then
  one dnsperf pass over the `names`-name list (`-n 1 -q <q>`, as in the seed);
- `cache=warm,outstanding=<q>`: `trials` times: flush, one pass to fill the cache (its
  figures are kept as `warmup_*`), the wait until the resolver holds none of that pass's
  failures (`settle`: Unbound answers a failed name from its cache for 5 s; at most
  `settle_max_s`), then the measured run, the same one pass as cold (or, with `warm_s` > 0,
  dnsperf looping over the list for that many seconds).
Then, when `resperf` is on, `ramp=resperf,cache=cold` and `ramp=resperf,cache=warm`:
resperf's ramp (`-m resperf_max_qps -r resperf_ramp_s`) against a flushed resolver and
against one warmed by a pass over the whole list. The cold ramp reads the list once (no
`-R`), so every query is for a name not yet asked and its ceiling is capped to what the list
can feed (`resperf_max_qps_used`).

Files per cell: `trials.csv` (one row per trial: `trial` and the figures below),
`dnsperf-<trial>.txt` (raw; warm cells also `dnsperf-warmup-<trial>.txt`), with
LATENCY_HISTOGRAM=true each pass's answer latencies binned (`latency-<trial>.csv`,
`latency-warmup-<trial>.csv`; columns `upper_s`, `count`, from dnsperf -v), `flush.txt`
(the flush commands' output), `leak.json` (the no-leak evidence below), `monitor/resolver.csv`;
resperf cells `resperf.txt` (raw stdout), `resperf.gnuplot` (raw plot file) and
`resperf.csv` (columns `time_s`, `target_qps`, `actual_qps`, `responses_per_s`,
`failures_per_s`, `avg_latency_s`, `connections_per_s`, `conn_latency_s`).
`cell.json` figures (dnsperf cells; the median over the trials, `qps_trials` each):
`qps`, `sent`, `completed`, `lost`, `run_time_s`,
`avg_latency_ms`, `max_latency_ms`, `rcode_NOERROR`, `rcode_SERVFAIL`, `rcode_NXDOMAIN`,
`generator_cpu_pct`, `resolver_cpu_pct`, `names`; with the latency histogram also the
waiting split by response code (`tail_split`): `healthy_answers`, `healthy_mean_ms`,
`healthy_slot_s`, `tail_slot_s` (SERVFAIL answers' latencies plus `timeout_s` per lost
query), `servfail_mean_ms`, `servfail_max_ms`; warm cells add `warmup_qps`,
`warmup_run_time_s`, and from the wait: `failures_cached_after_fill`,
`in_progress_after_fill`, `settle_s`, `failures_cached_at_start` (the warm resperf cell
too). resperf cells: `max_throughput_qps`, `lost_at_max`,
`peak_responses_per_s`, `latency_at_peak_s`, `resperf_max_qps_used`, `plot_rows`.
Every cell: `leak_datagrams` (UDP datagrams the resolver sent that reached no lab node's
IP layer and no drop inside the lab explains: 0 when nothing left the lab), with
`unaccounted_datagrams` (before the drops, which `leak.json` lists: on the lab's links, in
a full input backlog, at an unresolved next hop) and in `leak.json` `read_by_node` (what the
programs read: a late answer still queued as dnsperf closes its socket is never read; the
check counted reads until CI once found 1 of 12,351 datagrams unaccounted in a cold pass),
`outside_lab_packets` (an iptables OUTPUT counter in the resolver's namespace on every
destination outside 198.18.0.0/24 and loopback), `routes` (the resolver namespace's
routing table: only the lab LAN).
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import zones
from dnslab import cpus, paths
from dnslab.counters import read_series
from dnslab.errors import LabError
from dnslab.experiment import Cell, Run
from dnslab.lab import Lab
from dnslab.render import LabData, ZoneRef
from dnslab.servers import driver
from dnslab.servers.base import merge_options
from dnslab.topology import LAN, Topology, spare_addresses
from dnslab.wait import WaitTimeout, wait_until
from experiments.f4_resolver_cache import calibration
from experiments.generators import perf
from experiments.generators.dnsload import ensure_dnsload, serving

# where an authoritative node sits in the emulated internet: its `dnslab.tier` label
TIERS = ("root", "tld", "sld", "sld-slow", "sld-dead", "sld-broken")
TAIL_TIERS = {"slow_pct": "sld-slow", "dead_pct": "sld-dead", "broken_pct": "sld-broken"}
# where the broken tier's zone files are said to be: nowhere (a folder never created)
ABSENT = "absent"


@dataclass(frozen=True)
class ResolverNodes:
    """The lab's nodes by role and label: the resolver under test, the client (dnsperf,
    resperf), the emulated internet's authoritative servers by tier, and the lab's other
    resolvers (held in every cell)."""

    resolver: str
    client: str
    tiers: dict[str, str]  # tier -> node
    other_resolvers: tuple[str, ...] = ()

    @property
    def auth(self) -> list[str]:
        return list(self.tiers.values())

    @classmethod
    def of(cls, topo: Topology, kind: str | None = None) -> ResolverNodes:
        """The nodes of `topo`, the resolver under test the one of server `kind` (None: the
        lab's only resolver)."""
        tiers = {str(n.label("tier")): n.name for n in topo.nodes_where(role="primary")
                 if n.label("tier")}
        missing = [t for t in TIERS if t not in tiers]
        if missing:
            raise LabError(f"topology {topo.name!r} has no node labelled dnslab.tier="
                           f"{', '.join(missing)}",
                           hint="label each authoritative node of the emulated internet with "
                           f"its tier ({', '.join(TIERS)}), as topologies/resolver.clab.yml does")
        resolver = topo.node(role="resolver", server=kind).name
        return cls(resolver=resolver, client=topo.one("client").name,
                   tiers={t: tiers[t] for t in TIERS},
                   other_resolvers=tuple(n.name for n in topo.by_role("resolver")
                                         if n.name != resolver))


# the tiers whose zones' name servers are several addresses of one node: the parameter that
# says how many, and the tier's share of the zones (none: its node's own address only)
MULTI_ADDRESS_TIERS = {"sld-dead": ("dead_addresses", "dead_pct"),
                       "sld-broken": ("broken_addresses", "broken_pct")}


def tier_addresses(params: dict[str, Any], topo: Topology, nodes: ResolverNodes
                   ) -> dict[str, list[str]]:
    """The dead and the broken tier's name-server addresses: each one's node's own, then the
    spare LAN addresses it is given as well (`dead_addresses` - 1, then `broken_addresses` -
    1, so the dead tier's do not move when the broken tier gets more).

    Dead: on the internet each dead domain has name servers of its own, and a resolver learns
    each one's death separately (Unbound's infra cache keeps a timeout count per address);
    behind one shared address the first few timeouts would block it for all of them, and
    every later dead name would get an instant SERVFAIL. Broken: each broken zone is delegated
    to every broken address, and a resolver asks each before it answers SERVFAIL (Unbound: 5
    tries per address, outbound-msg-retry), so its failing names take as long as the seed's
    ~4.9 s at a delay below Unbound's first timeout (376 ms), which one address never did."""
    counts = {tier: max(1, int(params.get(key) or 1)) if float(params.get(share) or 0) else 1
              for tier, (key, share) in MULTI_ADDRESS_TIERS.items()}
    spare = iter(spare_addresses(topo, sum(count - 1 for count in counts.values())))
    return {tier: [str(topo.node(nodes.tiers[tier]).address),
                   *(str(next(spare)) for _ in range(count - 1))]
            for tier, count in counts.items()}


def internet(params: dict[str, Any], topo: Topology, nodes: ResolverNodes
             ) -> tuple[zones.ZoneSet, dict[str, list[ZoneRef]]]:
    """The emulated internet for this lab's addresses, and which node serves which zones."""
    addr = {tier: str(topo.node(node).address) for tier, node in nodes.tiers.items()}
    several = tier_addresses(params, topo, nodes)
    dead, broken_addrs = several["sld-dead"], several["sld-broken"]
    tail = {key: float(params.get(key, 0)) for key in (*TAIL_TIERS, "nxdomain_pct")}
    zone_set = zones.ensure("internet", {
        "root_servers": [addr["root"]], "tld_servers": [addr["tld"]],
        "sld_servers": [addr["sld"]], "tlds": params["tlds"], "slds": params["slds"],
        "names": max(params["names"], params["resperf_names"]),
        **({"slow_servers": [addr["sld-slow"]]} if tail["slow_pct"] else {}),
        **({"dead_servers": dead} if tail["dead_pct"] else {}),
        **({"broken_servers": broken_addrs} if tail["broken_pct"] else {}),
        **{k: v for k, v in tail.items() if v}}, seed=params["seed"])
    node_of = {a: nodes.tiers[tier] for tier, a in addr.items()} | {
        a: nodes.tiers[tier] for tier, addresses in several.items() for a in addresses}
    per_node: dict[str, list[ZoneRef]] = {n: [] for n in nodes.auth}
    broken = nodes.tiers["sld-broken"]
    for zone in zone_set.zones:
        servers = zone.servers or [addr[zone.role or "sld"]]
        node = node_of.get(servers[0], nodes.tiers[zone.role or "sld"])
        path = zone_set.path / ABSENT / zone.path.name if node == broken else zone.path
        per_node[node].append(ZoneRef(zone.fqdn, path, on_secondaries=False))
    return zone_set, {n: z for n, z in per_node.items() if z}


def name_lists(run: Run, zone_set: zones.ZoneSet) -> tuple[Path, Path]:
    """(the dnsperf list: the `names` most popular names; the resperf list: all of them)."""
    popular = zone_set.file("popular_names")
    lines = popular.read_text().splitlines(keepends=True)
    if len(lines) < run.params["names"]:
        raise LabError(f"the name list has {len(lines)} names, fewer than NAMES",
                       hint="raise SLDS (5 names per second-level zone at most)")
    out = run.path / "queries"
    out.mkdir(exist_ok=True)
    dnsperf_list = out / f"popular-{run.params['names']}.txt"
    dnsperf_list.write_text("".join(lines[: run.params["names"]]))
    return dnsperf_list, popular


def add_tier_addresses(lab: Lab, nodes: ResolverNodes, several: dict[str, list[str]]) -> None:
    """Put each tier's extra addresses (`tier_addresses`, its node's own first) on its node's
    eth1 (gone with the node), and pin every one of them to that node's MAC in the resolver's
    neighbour table: a link that loses everything also loses ARP replies under netem, and a
    query that never leaves the resolver would not reach the node (nor be counted by the leak
    check). The broken node's NSD listens on its extra addresses already (ip-freebind)."""
    pins = []
    for tier, addresses in several.items():
        node = nodes.tiers[tier]
        _ip_in(lab, node, [f"addr add {a}/{LAN.prefixlen} dev eth1" for a in addresses[1:]])
        link = json.loads(_ip_in(lab, node, ["link show dev eth1"], "-j"))[0]["address"]
        pins += [f"neigh replace {a} lladdr {link} dev eth1 nud permanent" for a in addresses]
    _ip_in(lab, nodes.resolver, pins)


def _ip_in(lab: Lab, node: str, commands: list[str], *options: str) -> str:
    """`ip` commands in a node's network namespace, on the node's host, in one `ip -batch`
    (one round trip to a host, however many addresses); nsenter, so the node itself needs no
    capability for it. Their output."""
    if not commands:
        return ""
    try:
        argv = ["nsenter", f"--net={lab.netns(node)}", "ip", *options, "-batch", "-"]
        return lab.host(node).run(argv, input="\n".join(commands) + "\n").stdout
    except LabError as exc:
        raise LabError(exc.message, hint="the resolver lab needs iproute2 and nsenter on "
                                         "the host (make setup)") from None


def flush(lab: Lab, cell: Cell, node: str) -> None:
    """Empty the resolver's caches with its control command (no network involved)."""
    (cell.path / "flush.txt").write_text(lab.node(node).flush())


# --- no-leak evidence --------------------------------------------------------------------

def _arrived(tables: dict[str, dict[str, int]]) -> int:
    """UDP datagrams that reached the node's IP layer: every packet handed to a protocol
    but TCP's and ICMP's. Not Udp's InDatagrams: the kernel counts that when the program
    reads a datagram, so one still queued when the program closes its socket (a late answer
    as dnsperf ends its pass) would count as never received."""
    ip, tcp, icmp = tables.get("Ip", {}), tables.get("Tcp", {}), tables.get("Icmp", {})
    return ip.get("InDelivers", 0) - tcp.get("InSegs", 0) - icmp.get("InMsgs", 0)


def _read(tables: dict[str, dict[str, int]]) -> int:
    # a datagram dropped on a full socket buffer or sent to a closed port still arrived
    udp = tables.get("Udp", {})
    return udp.get("InDatagrams", 0) + udp.get("InErrors", 0) + udp.get("NoPorts", 0)


class LeakCheck:
    """Three pieces of evidence that the resolver sends nothing outside the lab: its routing
    table, an iptables counter on non-lab destinations in its namespace, and UDP accounting
    (datagrams it sent minus datagrams the client and the lab's servers received)."""

    def __init__(self, lab: Lab, nodes: ResolverNodes):
        self.lab, self.nodes = lab, nodes
        try:
            lab.run(nodes.resolver, ["iptables", "-w", "-I", "OUTPUT", "1", "!", "-o", "lo", "!",
                                 "-d", str(LAN), "-m", "comment", "--comment", "dnslab-leak"])
        except LabError as exc:
            raise LabError("the resolver node cannot count packets leaving the lab: "
                           + exc.message,
                           hint="the leak check needs iptables: sudo apt-get install -y "
                           "iptables (or: make setup); on clab rebuild the resolver's image "
                           "(make images)") from exc
        self.before = self._quiet()

    def _quiet(self, timeout: float = 30.0) -> dict[str, dict[str, dict[str, int]]]:
        """Counters of every node (its tables), read when no UDP counter moved for 0.3 s: a
        datagram in flight while they are read would be counted on one side only."""
        nodes = (self.nodes.resolver, self.nodes.client, *self.nodes.auth)
        last: dict[str, tuple[int, dict[str, int]]] | None = None

        def unchanged() -> dict[str, dict[str, dict[str, int]]] | None:
            nonlocal last
            # one read per host: across hosts a node's counters cost a round trip
            tables = self.lab.tables_of(nodes)
            moving = {n: (_arrived(t), t.get("Udp", {})) for n, t in tables.items()}
            quiet, last = moving == last, moving
            return tables if quiet else None

        return wait_until(unchanged, timeout, "the lab to go quiet to read its UDP counters",
                          interval=0.3, hint="is something else sending inside the lab?")

    def _dropped_inside(self, after: dict[str, dict[str, dict[str, int]]]) -> dict[str, int]:
        """Packets dropped on the way inside the lab since the start: on the resolver's
        links (sending), on the receivers' links, and in each kernel before any socket (a
        full input backlog, a next hop not resolved; counted once per kernel, which emulated
        hosts share). These are not the resolver's alone, so they bound what the UDP
        accounting may leave unexplained."""
        def grew(node: str, table: str, key: str) -> int:
            return (after[node].get(table, {}).get(key, 0)
                    - self.before[node].get(table, {}).get(key, 0))

        def kernel(node: str) -> object:
            return after[node].get("Kernel", {}).get("BootId", self.lab.state.nodes[node].host)

        resolver, receivers = self.nodes.resolver, (self.nodes.client, *self.nodes.auth)
        one_per_kernel = {kernel(n): n for n in (resolver, *receivers)}
        return {"resolver_link_tx": grew(resolver, "Links", "TxDrop"),
                "receivers_link_rx": sum(grew(n, "Links", "RxDrop") for n in receivers),
                "kernel_backlog": sum(grew(n, "Kernel", "BacklogDrops")
                                      for n in one_per_kernel.values()),
                "kernel_arp_unresolved": sum(grew(n, "Kernel", "ArpUnresolvedDiscards")
                                             for n in one_per_kernel.values())}

    def finish(self, cell: Cell) -> dict[str, Any]:
        lab, resolver = self.lab, self.nodes.resolver
        after = self._quiet()
        sent = (after[resolver]["Udp"]["OutDatagrams"]
                - self.before[resolver]["Udp"]["OutDatagrams"])
        receivers = (self.nodes.client, *self.nodes.auth)
        by_node = {n: _arrived(after[n]) - _arrived(self.before[n]) for n in receivers}
        read_by_node = {n: _read(after[n]) - _read(self.before[n]) for n in receivers}
        received = sum(by_node.values())
        dropped = self._dropped_inside(after)
        rules = lab.run(resolver, ["iptables", "-w", "-nvxL", "OUTPUT"]).stdout
        match = re.search(r"^\s*(\d+)\s+\d+\s+.*dnslab-leak", rules, re.M)
        routes = lab.run(resolver, ["ip", "-4", "route", "show"]).stdout.strip().splitlines()
        unaccounted = sent - received
        evidence = {"resolver_out_datagrams": sent, "lab_received_datagrams": received,
                    "unaccounted_datagrams": unaccounted, "dropped_inside": dropped,
                    "leak_datagrams": max(0, unaccounted - sum(dropped.values())),
                    "outside_lab_packets": int(match.group(1)) if match else None,
                    "routes": routes, "iptables": rules, "received_by_node": by_node,
                    "read_by_node": read_by_node}
        (cell.path / "leak.json").write_text(json.dumps(evidence, indent=1))
        # what the broken tier was asked: the resolver's tries per failing name (Unbound:
        # 5 an address) over the pass's SERVFAIL answers
        broken = self.nodes.tiers["sld-broken"]
        return {**{k: evidence[k] for k in ("leak_datagrams", "outside_lab_packets", "routes",
                                            "resolver_out_datagrams",
                                            "unaccounted_datagrams")},
                "broken_tier_datagrams": by_node.get(broken)}


# --- the experiment --------------------------------------------------------------------------

def _lab_data(params: dict[str, Any], topo: Topology, nodes: ResolverNodes,
              per_node: dict[str, list[ZoneRef]], cores: int, zone_dir: Path,
              placement: cpus.Placement | None = None) -> LabData:
    wan = {node: spec for node, spec in (params.get("wan") or {}).items() if node in per_node}
    cpu_sets = ({nodes.client: placement.generator,
                 **{n: placement.server for n in (nodes.resolver, *nodes.auth)}}
                if placement else {})
    resolver = driver(topo.node(nodes.resolver).server)
    # authoritative servers answer the resolver at any rate
    options = {n: driver(topo.node(n).server).no_rate_limit_options() for n in nodes.auth}
    broken = nodes.tiers["sld-broken"]
    options[broken]["health_rcodes"] = ["SERVFAIL"]  # works when it fails
    # it serves the broken tier's other addresses too (added once it is up)
    extra = tier_addresses(params, topo, nodes)["sld-broken"][1:]
    if extra:
        options[broken] = merge_options(
            options[broken], driver(topo.node(broken).server).extra_address_options(extra))
    # the seed's Unbound 1.6.6 answered a failing name however long it took; today's drops
    # the reply after discard-timeout (CVE-2024-33655's fix): the parameter says which
    options[nodes.resolver] = merge_options(
        resolver.discard_timeout_options(int(params.get("unbound_discard_timeout_ms", 0))),
        resolver.resolver_options(cores, params.get(f"{resolver.kind}_options", {})))
    return LabData(
        zones=[], health_zone=per_node[nodes.tiers["tld"]][0].name, node_zones=per_node,
        node_options=options, sysctls={}, extra_binds=[zone_dir], wan=wan, cpu_sets=cpu_sets)


def idle_nodes(nodes: ResolverNodes, per_node: dict[str, list[ZoneRef]]) -> list[str]:
    """Authoritative nodes with no zone to serve in this run (no tail) and the resolvers not
    under test: not started."""
    return [*(n for n in nodes.auth if n not in per_node), *nodes.other_resolvers]


def _cpu(cell: Cell, node: str) -> float | None:
    """The resolver's mean CPU while it worked (the samples above 1 %)."""
    series = read_series(cell.path / "monitor" / f"{node}.csv", "cpu_pct")
    return series.mean_above(1) if series else None


def _pass(lab: Lab, cell: Cell, nodes: ResolverNodes, qfile: Path, q: int, name: str,
          params: dict[str, Any], duration_s: float = 0, responder: bool = False
          ) -> dict[str, Any]:
    """One dnsperf pass over the list, or `duration_s` seconds looping over it, against the
    resolver (or, `responder`, against the canned responder at the resolver's address)."""
    histogram = (cell.path / name.replace("dnsperf-", "latency-").replace(".txt", ".csv")
                 if params.get("latency_histogram") else None)
    result = perf.dnsperf(lab, nodes.client, lab.address(nodes.resolver), qfile,
                          cell.path / name,
                          runs=None if duration_s else 1, duration_s=duration_s or None,
                          outstanding=q, timeout_s=params["timeout_s"], latency_csv=histogram)
    if not responder and not lab.alive(nodes.resolver):
        raise LabError("the resolver exited under load",
                       hint=f"its log: {lab.log(nodes.resolver)}")
    row = result.row()
    keep = ("qps", "sent", "completed", "lost", "run_time_s", "avg_latency_ms",
            "max_latency_ms", "rcode_NOERROR", "rcode_SERVFAIL", "rcode_NXDOMAIN",
            "generator_cpu_pct")
    return {**{k: row[k] for k in keep}, **tail_split(result, float(params["timeout_s"]))}


def tail_split(result: perf.DnsperfResult, timeout_s: float) -> dict[str, Any]:
    """Which part of a pass's waiting was its failing tail and which its healthy names (from
    dnsperf -v's answers by response code; {} without them): `healthy_answers` and
    `healthy_mean_ms` (every answer but SERVFAIL), `healthy_slot_s` (their latencies' sum: the
    seconds they held a dnsperf slot), `tail_slot_s` (the SERVFAIL answers' sum plus
    `timeout_s` for each lost query), `servfail_mean_ms`, `servfail_max_ms`."""
    by_rcode = result.latency_by_rcode
    if not by_rcode:
        return {}
    healthy = [v for rcode, v in by_rcode.items() if rcode != "SERVFAIL"]
    answers = sum(v.answers for v in healthy)
    healthy_s = sum(v.sum_s for v in healthy)
    failed = by_rcode.get("SERVFAIL", perf.RcodeLatency())
    return {"healthy_answers": answers,
            "healthy_mean_ms": round(1000 * healthy_s / answers, 3) if answers else None,
            "healthy_slot_s": round(healthy_s, 3),
            "tail_slot_s": round(failed.sum_s + result.lost * timeout_s, 3),
            "servfail_mean_ms": (round(1000 * failed.sum_s / failed.answers, 3)
                                 if failed.answers else None),
            "servfail_max_ms": round(1000 * failed.max_s, 3) if failed.answers else None}


def settle(lab: Lab, node: str, timeout_s: float) -> dict[str, Any]:
    """After the pass that filled the cache: wait until the resolver holds none of that
    pass's failures (Unbound answers a name that failed from its cache for 5 s, then resolves
    it again). The seed's warm run came long after its cold run, so each failing name failed
    afresh, after its round trips, and held a dnsperf slot that long; a measured pass begun
    within those seconds would see some failures at once and some not, depending on timing.
    Returns the evidence: the failures cached and queries in progress when the wait began,
    the seconds waited, and the failures still cached when it ended (> 0 only when failures
    kept coming for `timeout_s`: then the pass starts anyway, and the row says so)."""
    resolver = lab.node(node)
    first = resolver.unsettled()
    if first is None:
        return {}
    started, last = time.monotonic(), first

    def clear() -> bool:
        nonlocal last
        last = resolver.unsettled() or {"failures_cached": 0}
        return last["failures_cached"] == 0

    try:
        if first["failures_cached"]:
            wait_until(clear, timeout_s, "the resolver's cached failures to expire",
                       interval=0.5)
    except WaitTimeout:
        pass
    return {"failures_cached_after_fill": first["failures_cached"],
            "in_progress_after_fill": first["in_progress"],
            "settle_s": round(time.monotonic() - started, 2),
            "failures_cached_at_start": last["failures_cached"]}


def _trial(lab: Lab, cell: Cell, nodes: ResolverNodes, qfile: Path, q: int, state: str,
           trial: int, params: dict[str, Any]) -> dict[str, Any]:
    """One trial: flush; warm: one pass to fill the cache, and the wait until none of its
    failures is cached any more (`settle`); then the measured pass."""
    flush(lab, cell, nodes.resolver)
    row: dict[str, Any] = {"trial": trial}
    if state == "warm":
        warm = _pass(lab, cell, nodes, qfile, q, f"dnsperf-warmup-{trial}.txt", params)
        row.update({"warmup_qps": warm["qps"], "warmup_run_time_s": warm["run_time_s"]})
        row.update(settle(lab, nodes.resolver, float(params["settle_max_s"])))
    measured_s = float(params["warm_s"]) if state == "warm" else 0
    row.update(_pass(lab, cell, nodes, qfile, q, f"dnsperf-{trial}.txt", params, measured_s))
    return row


def run_ceiling(run: Run, nodes: ResolverNodes, data: LabData, qfile: Path,
                placement: cpus.Placement) -> None:
    """dnsperf's own ceiling for the cells' passes (see the module docstring), against
    `dnsload serve` at the resolver's address, every DNS daemon held."""
    params = run.params
    qs = [int(q) for q in params["outstanding"]]
    loop_s = float(params["warm_s"])
    trials = int(params["ceiling_trials"])
    ensure_dnsload()  # built before the lab is up
    ceiling_data = replace(data, extra_binds=[*data.extra_binds, paths.BIN])
    cell_params = {"phase": "ceiling", "responder": "dnsload serve",
                   "responder_node": nodes.resolver, "tool": "dnsperf", "outstanding": qs,
                   "names": params["names"], "placement": placement.as_dict()}
    budget = trials * len(qs) * (loop_s + 2 * params["timeout_s"] + 30) + 120
    with run.cell("phase=ceiling", cell_params) as cell:
        lab = cell.up(ceiling_data, hold=[nodes.resolver, *nodes.auth, *nodes.other_resolvers])
        with serving(lab, nodes.resolver, budget, cell.path / "dnsload"):
            rows: list[dict[str, Any]] = []
            for trial in range(1, trials + 1):
                for q in qs if trial % 2 else list(reversed(qs)):
                    modes = [("pass", 0.0)] + ([("loop", loop_s)] if loop_s else [])
                    for mode, seconds in modes:
                        rows.append({"trial": trial, "outstanding": q, "mode": mode, **_pass(
                            lab, cell, nodes, qfile, q, f"dnsperf-{mode}-q{q}-{trial}.txt",
                            params, seconds, responder=True)})
                perf.write_rows(cell.path / "ceiling.csv", rows)
        cell.figures.update(ceiling_figures(rows))


def ceiling_figures(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """`ceiling_qps_q<q>` (median answered qps of the one-pass runs at -q q),
    `ceiling_qps_trials_q<q>`, and `ceiling_loop_qps_q<q>` for the looping runs."""
    figures: dict[str, Any] = {}
    for q in dict.fromkeys(r["outstanding"] for r in rows):
        one_pass = [r["qps"] for r in rows if r["outstanding"] == q and r["mode"] == "pass"]
        loops = [r["qps"] for r in rows if r["outstanding"] == q and r["mode"] == "loop"]
        figures[f"ceiling_qps_q{q}"] = perf.median(one_pass)
        figures[f"ceiling_qps_trials_q{q}"] = one_pass
        if loops:
            figures[f"ceiling_loop_qps_q{q}"] = perf.median(loops)
    return figures


def check_params(params: dict[str, Any]) -> None:
    """What the rules cannot say, before the run starts: each calibration band a pair, low
    first, and a slowest answer dnsperf can wait for."""
    for key in ("calibration_latency_ms", "calibration_slowest_s"):
        band = list(params.get(key) or [])
        if len(band) != 2 or float(band[0]) > float(band[1]):
            raise LabError(f"{key.upper()}={','.join(map(str, band))} is not a band",
                           hint=f"two numbers, low first: {key.upper()}=230,407")
    if params.get("calibrate") and \
            float(params["calibration_slowest_s"][0]) >= float(params["timeout_s"]):
        raise LabError(f"CALIBRATION_SLOWEST_S starts at {params['calibration_slowest_s'][0]} "
                       f"s, not under dnsperf's timeout ({params['timeout_s']} s)",
                       hint="a slowest answer under TIMEOUT_S (the seed: 4.77-4.96 s of 5 s)")


def calibrate(run: Run, nodes: ResolverNodes, data: LabData, qfile: Path,
              per_node: dict[str, list[ZoneRef]], idle: list[str],
              several: dict[str, list[str]]
              ) -> tuple[dict[str, dict[str, float]], str | None]:
    """`phase=calibration,round=<r>`: one cold pass per round in a fresh lab, the emulated
    internet moved between rounds until the pass meets the seed's (calibration.py); returns
    the link shapes the cells run with and the round they come from (None: calibration off,
    the experiment file's shapes). No round meeting every target: the closest round's shapes,
    and a warning the report shows."""
    params = run.params
    if not params.get("calibrate") or not params.get("wan"):  # WAN={}: nothing to move
        return dict(params.get("wan") or {}), None
    targets = calibration.Targets.of(params)
    search = calibration.WanSearch.start(params.get("wan") or {})
    q = int(params["calibration_outstanding"])
    rounds: list[tuple[dict[str, Any], dict[str, bool]]] = []
    shapes: list[dict[str, dict[str, float]]] = []
    for number in range(1, int(params["calibration_rounds"]) + 1):
        wan = search.wan()
        cell_id = f"phase=calibration,round={number}"
        figures = run.finished(cell_id)
        if figures is None:
            # no `cache` param: the claims' cold cells are the measured ones
            with run.cell(cell_id, {"phase": "calibration", "round": number, "pass": "cold",
                                    "outstanding": q, "names": params["names"],
                                    "wan": wan}) as cell:
                lab = cell.up(replace(data, wan={n: s for n, s in wan.items()
                                                 if n in per_node}), hold=idle)
                add_tier_addresses(lab, nodes, several)
                leak = LeakCheck(lab, nodes)
                flush(lab, cell, nodes.resolver)
                cell.figures.update(_pass(lab, cell, nodes, qfile, q, "dnsperf-1.txt", params))
                cell.figures.update(leak.finish(cell))
                cell.figures.update({"met": calibration.met(cell.figures, targets),
                                     "scale": round(search.scale, 4),
                                     "broken_delay_ms": wan.get(calibration.BROKEN_TIER, {})
                                     .get("delay_ms")})
                figures = dict(cell.figures)
        done = search.step(figures, targets)
        rounds.append((figures, done))
        shapes.append(wan)
        if all(done.values()):
            break
    chosen = calibration.best_round(rounds, targets)
    if not all(rounds[chosen][1].values()):
        figures = rounds[chosen][0]
        run.warn(f"the emulated internet's calibration met no round's every target in "
                 f"{len(rounds)} rounds: the closest (round {chosen + 1}) averaged "
                 f"{float(figures['avg_latency_ms']):,.0f} ms (target "
                 f"{targets.latency_ms[0]:g}-{targets.latency_ms[1]:g}), slowest answer "
                 f"{float(figures.get('max_latency_ms') or 0) / 1000:.2f} s (target "
                 f"{targets.slowest_s[0]:g}-{targets.slowest_s[1]:g}), {figures.get('lost')} "
                 "lost; its shapes are the run's (CALIBRATION_ROUNDS for more rounds)")
    run.writer.record("wan_calibrated", {"round": chosen + 1, "met": rounds[chosen][1],
                                         "wan": shapes[chosen]})
    return shapes[chosen], f"phase=calibration,round={chosen + 1}"


def cache(run: Run) -> None:
    """resolver-cache: the generator's ceiling, cold and warm dnsperf trials at each -q,
    then resperf's ramps."""
    params = run.params
    placement = run.placement()
    cores = int(params.get("cores") or len(cpus.parse(placement.server)))
    nodes = ResolverNodes.of(run.topology, str(params["resolver"]))
    zone_set, per_node = internet(params, run.topology, nodes)
    dnsperf_list, resperf_list = name_lists(run, zone_set)
    data = _lab_data(params, run.topology, nodes, per_node, cores, zone_set.path, placement)
    idle = idle_nodes(nodes, per_node)
    several = {tier: addresses for tier, addresses
               in tier_addresses(params, run.topology, nodes).items()
               if nodes.tiers[tier] in per_node}
    base = {"resolver_node": nodes.resolver, "names": params["names"], "cores": cores,
            "zone_set": zone_set.set_id, "trials": params["trials"],
            **{key: len(several.get(tier, []))
               for tier, (key, _) in MULTI_ADDRESS_TIERS.items()},
            "placement": placement.as_dict()}
    trials = int(params["trials"])
    ceiling = bool(params.get("ceiling"))
    rounds = int(params["calibration_rounds"]) if params.get("calibrate") else 0
    run.plan(rounds + ceiling + 2 * len(params["outstanding"]) + 2 * bool(params["resperf"]),
             per_cell_s=15 + trials * (20 + 2 * params["timeout_s"]))
    wan, calibrated_in = calibrate(run, nodes, data, dnsperf_list, per_node, idle, several)
    data = replace(data, wan={node: shape for node, shape in wan.items() if node in per_node})
    base["wan_from"] = calibrated_in or "the experiment file"
    # .get: a resumed run from before the ceiling cell keeps its own parameters
    if ceiling and run.finished("phase=ceiling") is None:
        run_ceiling(run, nodes, data, dnsperf_list, placement)
    for q in params["outstanding"]:
        for state in ("cold", "warm"):
            cell_id = f"cache={state},outstanding={q}"
            if run.finished(cell_id) is not None:
                continue
            with run.cell(cell_id, {"cache": state, "outstanding": q, "tool": "dnsperf",
                                    **base}) as cell:
                lab = cell.up(data, hold=idle)
                add_tier_addresses(lab, nodes, several)
                leak = LeakCheck(lab, nodes)
                cell.monitor([nodes.resolver])
                rows = []
                for trial in range(1, trials + 1):
                    rows.append(_trial(lab, cell, nodes, dnsperf_list, q, state, trial, params))
                    perf.write_rows(cell.path / "trials.csv", rows)
                assert cell.monitors is not None
                cell.monitors.stop()
                cell.figures.update({k: perf.median([r[k] for r in rows])
                                     for k in rows[0] if k != "trial"})
                cell.figures.update({"qps_trials": [r["qps"] for r in rows],
                                     "resolver_cpu_pct": _cpu(cell, nodes.resolver),
                                     "names": params["names"],
                                     **leak.finish(cell)})
    if not params["resperf"]:
        return
    for state in ("cold", "warm"):
        if run.finished(f"ramp=resperf,cache={state}") is not None:
            continue
        with run.cell(f"ramp=resperf,cache={state}",
                      {"cache": state, "tool": "resperf", **base}) as cell:
            lab = cell.up(data, hold=idle)
            add_tier_addresses(lab, nodes, several)
            leak = LeakCheck(lab, nodes)
            flush(lab, cell, nodes.resolver)
            cell.monitor([nodes.resolver])
            max_qps = int(params["resperf_max_qps"])
            if state == "warm":
                warm = _pass(lab, cell, nodes, resperf_list, max(params["outstanding"]),
                             "dnsperf-warmup.txt", params)
                cell.figures["warmup_qps"] = warm["qps"]
                cell.figures.update(settle(lab, nodes.resolver, float(params["settle_max_s"])))
            else:
                # the ramp sends max_qps * ramp / 2 queries: stay within the list, read once
                lines = sum(1 for _ in open(resperf_list))
                max_qps = min(max_qps, int(1.9 * lines / params["resperf_ramp_s"]))
            summary = perf.resperf(lab, nodes.client, lab.address(nodes.resolver), resperf_list,
                                   cell.path, max_qps=max_qps, ramp_s=params["resperf_ramp_s"],
                                   clients=params["resperf_clients"],
                                   timeout_s=params["timeout_s"], reopen=state == "warm")
            assert cell.monitors is not None
            cell.monitors.stop()
            cell.figures.update({**summary, "resperf_max_qps_used": max_qps,
                                 "resolver_cpu_pct": _cpu(cell, nodes.resolver),
                                 **leak.finish(cell)})
