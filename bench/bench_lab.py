"""Benchmark: wall time of `lab up` (to all-healthy) and `lab down` on each runtime.

Targets on a 2-core machine: the reference lab up <= 5 s and down <= 2 s; a generated
30-node lab up <= 20 s. Prints a table per runtime (netns, then clab when containerlab,
a Docker engine and the images work here; otherwise it says why clab was left out); it is
a benchmark, not a test.
    python -m bench.bench_lab [--repeat 3] [--runtime netns,clab]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import yaml

from dnslab import lab, paths, topology
from dnslab.runtime import clab_unusable_reason
from dnslab.servers.manifest import manifest

# each kind's image, as images/tags.sh names it
IMAGES = {kind: manifest(kind).image.reference for kind in ("bind", "knot", "nsd", "tools")}


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
        image = IMAGES[server]
        spec["nodes"][node] = {"image": image,
                               "labels": {"dnslab.role": role, "dnslab.server": server}}
        spec["links"].append({"endpoints": [f"{node}:eth1", f"br-{name}:b{i:02d}"]})
    spec["nodes"][f"br-{name}"] = {"kind": "bridge"}
    path = paths.BUILD / "bench" / f"{name}.clab.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({"name": name, "topology": spec}, sort_keys=False))
    return path


def measure(lab_ref: str, repeat: int, runtime: str) -> tuple[list[float], list[float], int]:
    ups, downs = [], []
    nodes = 0
    for _ in range(repeat):
        start = time.monotonic()
        handle = lab.up(lab_ref, runtime=runtime, quiet=True)
        ups.append(time.monotonic() - start)
        nodes = len(handle.state.nodes)
        start = time.monotonic()
        lab.down(handle.name)
        downs.append(time.monotonic() - start)
    return ups, downs, nodes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--runtime", default="netns,clab",
                        help="comma-separated runtimes to measure (default: netns,clab)")
    args = parser.parse_args()
    rows = [("reference", "reference", 5.0, 2.0), ("30 nodes", str(generated_topology(30)),
                                                    20.0, None)]
    print(f"{'runtime':<8} {'lab':<10} {'nodes':>5} {'up median s':>12} {'up max s':>9} "
          f"{'target':>7} {'down median s':>14} {'down max s':>11} {'target':>7}")
    for runtime in args.runtime.split(","):
        if runtime == "clab":
            reasons = {clab_unusable_reason(topology.load(ref)) for _, ref, _, _ in rows}
            reasons.discard(None)
            if reasons:
                print(f"{runtime:<8} not measured: {sorted(reasons)[0]}")
                continue
        for label, ref, up_target, down_target in rows:
            ups, downs, nodes = measure(ref, args.repeat, runtime)
            print(f"{runtime:<8} {label:<10} {nodes:>5} {statistics.median(ups):>12.2f} "
                  f"{max(ups):>9.2f} {up_target:>7.0f} {statistics.median(downs):>14.2f} "
                  f"{max(downs):>11.2f} {(f'{down_target:.0f}' if down_target else '-'):>7}")


if __name__ == "__main__":
    main()
