"""Benchmark: what the path between two lab hosts (VXLAN over an underlay) costs a load test.

Two lab hosts are emulated on this machine (`dnslab.emulate`: host a gets the first CPU,
host b the second). The same pair is measured two ways, alternately in one run, on the same
cores: dnsperf in the client node on CPU 1 and the servers on CPU 0, first with the whole
lab on this machine (one bridge, no encapsulation), then split (the client on host b, the
servers on host a, the lab LAN over VXLAN). Each time: the generator's ceiling (dnsperf
against `dnsload serve` in a held node) and Knot's capacity (the same dnsperf command
against the Knot secondary), closed loop over UDP. Prints every figure, the ratio across /
one host pair by pair with their median, and the LAN MTU the split lab used. With
`--macvlan` a third series splits the lab over the hosts' underlay veth as their data
interface (each node's eth1 a macvlan of it, no VXLAN), so VXLAN's own cost shows apart.

    python -m bench.bench_hosts [--repeat 3] [--seconds 5] [--work DIR] [--macvlan]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

import yaml

from dnslab import lab, paths, render, topology
from dnslab.emulate import emulated_hosts
from dnslab.hosts import Inventory, load_inventory
from experiments.generators import perf
from experiments.generators.dnsload import ensure_dnsload, serving

SERVER_CPU, GENERATOR_CPU = "0", "1"
RESPONDER, SERVER, CLIENT = "sec-nsd", "sec-knot", "client"


def query_file() -> Path:
    path = paths.BUILD / "bench" / "hosts-queries.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("www.example.test. A\nexample.test. SOA\nexample.test. NS\n" * 100)
    return path


def measure(inventory: Inventory | None, seconds: float, out: Path) -> dict[str, float]:
    """The ceiling and Knot's capacity, with the lab on one host (None) or split."""
    topo = topology.load("reference")
    data = render.reference_data(topo, render.lab_dir(topo.name))
    data.cpu_sets = {name: (GENERATOR_CPU if name == CLIENT else SERVER_CPU)
                     for name in topo.nodes}
    handle = lab.up(topo, runtime="netns", data=data, hold=[RESPONDER], quiet=True,
                    inventory=inventory)
    queries = query_file()
    try:
        figures: dict[str, float] = {"mtu": handle.state.data_path.get("mtu") or 1500}
        with serving(handle, RESPONDER, seconds * 4 + 30, out / "serve"):
            ceiling = perf.dnsperf(handle, CLIENT, handle.address(RESPONDER), queries,
                                   out / "ceiling.txt", duration_s=seconds, clients=4,
                                   outstanding=200)
        knot = perf.dnsperf(handle, CLIENT, handle.address(SERVER), queries,
                            out / "knot.txt", duration_s=seconds, clients=4, outstanding=200)
        figures.update(ceiling_qps=ceiling.qps, knot_qps=knot.qps,
                       generator_cpu_pct=knot.row()["generator_cpu_pct"] or 0.0)
        return figures
    finally:
        lab.down(topo.name)


def with_data_interface(inventory: Inventory, work: Path) -> Inventory:
    """The same hosts, their underlay veth named as their data interface (macvlan LAN)."""
    raw = yaml.safe_load(Path(str(inventory.path)).read_text())
    for spec in raw["hosts"].values():
        spec["data_interface"] = "ul0"
    path = work / "hosts-macvlan.yml"
    path.write_text(yaml.safe_dump(raw))
    return load_inventory(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--macvlan", action="store_true",
                        help="a third series: split over macvlans of the underlay veth")
    args = parser.parse_args(argv)
    ensure_dnsload()
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-hosts-"))
    rows: list[tuple[str, int, dict[str, float]]] = []
    with emulated_hosts(work / "hosts") as hosts_file:
        inventory = load_inventory(hosts_file)
        series: list[tuple[str, Inventory | None]] = [("one host", None), ("across", inventory)]
        if args.macvlan:
            series.append(("macvlan", with_data_interface(inventory, work)))
        for rep in range(1, args.repeat + 1):
            for where, inv in series:
                out = work / f"{where.replace(' ', '-')}-{rep}"
                rows.append((where, rep, measure(inv, args.seconds, out)))
                print(f"{where:9} rep {rep}: ceiling {rows[-1][2]['ceiling_qps']:9,.0f} qps, "
                      f"knot {rows[-1][2]['knot_qps']:9,.0f} qps, MTU {rows[-1][2]['mtu']:.0f}",
                      flush=True)
    print(f"\nreference lab, dnsperf -c 4 -q 200 for {args.seconds:g} s over UDP; generator on "
          f"CPU {GENERATOR_CPU}, servers on CPU {SERVER_CPU}; {args.repeat} alternating "
          f"{'triples' if args.macvlan else 'pairs'} (across: VXLAN)")
    for where, _ in series[1:]:
        print(f"{'figure':22} {'one host (median)':>18} {where + ' (median)':>16} "
              f"{'ratio ' + where + '/one (min-median-max)':>34}")
        for key, label in (("ceiling_qps", "generator ceiling qps"),
                           ("knot_qps", "Knot capacity qps"),
                           ("generator_cpu_pct", "dnsperf CPU %")):
            one = [r[2][key] for r in rows if r[0] == "one host"]
            split = [r[2][key] for r in rows if r[0] == where]
            ratios = [a / o for a, o in zip(split, one, strict=True) if o]
            print(f"{label:22} {statistics.median(one):18,.1f} {statistics.median(split):16,.1f}"
                  f" {min(ratios):12.3f} {statistics.median(ratios):8.3f} {max(ratios):8.3f}")
        mtus = sorted({r[2]["mtu"] for r in rows if r[0] == where})
        print(f"LAN MTU {where}: {', '.join(f'{m:.0f}' for m in mtus)} (one host: 1500)\n")
    print(f"raw output: {work}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
