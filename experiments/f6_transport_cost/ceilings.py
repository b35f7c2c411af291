"""F6's rows for `make bench-ceilings`: per server and transport, the server's median qps
beside the generator's own ceiling for that transport, measured in the same run
(transport-cost's `phase=ceiling` cell: the same command against `dnsload serve`), read as
the claims read them (`derived.measured`).

A finding package that measures its generator's ceiling its own way says so here:
`EXPERIMENTS` (the experiments whose runs it reads) and `rows(run)` (bench.bench_ceilings'
row shape), so the benchmark needs no code of its own for it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from analysis.rundata import load_run
from experiments.f6_transport_cost import derived

EXPERIMENTS = ("transport-cost",)


def rows(path: Path) -> list[dict[str, Any]]:
    """One row per server and transport it was measured over: `cell` ("server=<kind> <t>
    (<generator>)"), `rate` (median answered qps), `ceiling` (the generator's best round for
    the same load, None when the run skipped its ceiling), `share`, `lower_bound` (False:
    the ceiling ran closed loop, as fast as the responder answered) and the `placement`."""
    run = load_run(path)
    found = []
    for server in derived.server_cells(run):
        for transport in derived.TRANSPORTS:
            figure = derived.measured(run, server, transport)
            if figure is None:
                continue
            found.append({"experiment": run.experiment, "run": run.run_id,
                          "cell": f"server={server} {transport} ({figure.generator})",
                          "rate": figure.qps, "ceiling": figure.ceiling,
                          "share": figure.share_of_ceiling, "lower_bound": False,
                          "placement": run.meta.get("placement")})
    return found
