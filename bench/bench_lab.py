"""Benchmark: wall time of `lab up` (to all-healthy) and `lab down` on the netns runtime.

Targets on a 2-core machine: the reference lab up <= 5 s and down <= 2 s; a generated
30-node lab up <= 20 s. Prints a table; it is a benchmark, not a test.
    python -m bench.bench_lab [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import yaml

from dnslab import lab, paths

SERVERS = {"bind": "dnslab/bind9:9.18.49-1-deb12u3", "knot": "dnslab/knot:3.2.6-1",
           "nsd": "dnslab/nsd:4.6.1-1"}


def generated_topology(nodes: int) -> Path:
    """A lab of `nodes` nodes: one BIND primary, secondaries cycling BIND/Knot/NSD, a client."""
    name = f"bench{nodes}"
    spec: dict = {"defaults": {"kind": "linux"}, "nodes": {}, "links": []}
    kinds = ["bind", "knot", "nsd"]
    for i in range(nodes):
        if i == 0:
            node, role, server = "primary", "primary", "bind"
        elif i == nodes - 1:
            node, role, server = "client", "client", "tools"
        else:
            server = kinds[(i - 1) % 3]
            node, role = f"sec{i:02d}-{server}", "secondary"
        image = SERVERS.get(server, "dnslab/tools:2.10.0-2")
        spec["nodes"][node] = {"image": image,
                               "labels": {"dnslab.role": role, "dnslab.server": server}}
        spec["links"].append({"endpoints": [f"{node}:eth1", f"br-{name}:b{i:02d}"]})
    spec["nodes"][f"br-{name}"] = {"kind": "bridge"}
    path = paths.BUILD / "bench" / f"{name}.clab.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({"name": name, "topology": spec}, sort_keys=False))
    return path


def measure(lab_ref: str, repeat: int) -> tuple[list[float], list[float], int]:
    ups, downs = [], []
    nodes = 0
    for _ in range(repeat):
        start = time.monotonic()
        handle = lab.up(lab_ref, runtime="netns", quiet=True)
        ups.append(time.monotonic() - start)
        nodes = len(handle.state.nodes)
        start = time.monotonic()
        lab.down(handle.name)
        downs.append(time.monotonic() - start)
    return ups, downs, nodes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rows = [("reference", "reference", 5.0, 2.0), ("30 nodes", str(generated_topology(30)),
                                                    20.0, None)]
    print(f"{'lab':<10} {'nodes':>5} {'up median s':>12} {'up max s':>9} {'target':>7} "
          f"{'down median s':>14} {'down max s':>11} {'target':>7}")
    for label, ref, up_target, down_target in rows:
        ups, downs, nodes = measure(ref, args.repeat)
        print(f"{label:<10} {nodes:>5} {statistics.median(ups):>12.2f} {max(ups):>9.2f} "
              f"{up_target:>7.0f} {statistics.median(downs):>14.2f} {max(downs):>11.2f} "
              f"{(f'{down_target:.0f}' if down_target else '-'):>7}")


if __name__ == "__main__":
    main()
