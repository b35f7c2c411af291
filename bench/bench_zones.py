"""Benchmark the zone and query generators: wall time, throughput and peak RSS per generator.

Each case runs in a child process (`--case NAME`) so its peak RSS (`ru_maxrss`) is its own.
Output goes to a temporary folder that is removed afterwards (or `--out`, kept).

    python -m bench.bench_zones            # 30k small zones + lists, TLD 1M (unsigned and
                                           # signed as xfr-tld's), 3gpp, queries
    python -m bench.bench_zones --full     # adds the 14 M-record TLDs (~700 MB and ~1.2 GB)
    python -m bench.bench_zones --case tld-14m-signed   # one case, JSON figures
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

CASES = ["small-30k", "tld-1m", "tld-1m-signed", "3gpp-after", "mobile-queries", "internet-10k",
         "water-1m"]
FULL_CASES = ["tld-14m", "tld-14m-signed"]
XFR_TLD = Path(__file__).resolve().parent.parent / "experiments/f3_xfr/xfr-tld.yaml"


def signed_tld_params() -> dict[str, Any]:
    """xfr-tld's zone parameters (its signed .ch mix), records apart."""
    import yaml

    from experiments.f3_xfr.xfr_single import TLD_ZONE_PARAMS

    params = yaml.safe_load(XFR_TLD.read_text())["params"]
    return {key: params[key] for key in TLD_ZONE_PARAMS if key != "records"}


def run_case(case: str, out: Path) -> dict[str, Any]:
    """Run one case in this process and return its figures."""
    import zones
    from dnslab import render, topology
    from zones.queries import mobile_core, water_torture

    started = time.perf_counter()
    figures: dict[str, Any] = {}
    if case == "small-30k":
        zs = zones.ensure("small-zones", {"count": 30_000}, 1, out_root=out)
        gen = time.perf_counter() - started
        # the configs a lab deploys: the xfr lab's BIND primary and BIND, Knot, NSD secondaries
        zone_refs = [render.ZoneRef(z.fqdn, z.path) for z in zs.zones]
        render.render(topology.load("xfr"), render.LabData(zones=zone_refs,
                                                           health_zone=zone_refs[0].name),
                      out / "lab")
        figures = {"items": 30_000, "unit": "zones", "generate_s": gen,
                   "bytes": zs.manifest["totals"]["bytes"]}
    elif case.startswith("tld-"):
        records = {"1m": 1_000_000, "14m": 14_000_000}[case.split("-")[1]]
        signed = signed_tld_params() if case.endswith("-signed") else {}
        zs = zones.ensure("tld", {"records": records, **signed}, 1, out_root=out)
        figures = {"items": records, "unit": "records", "bytes": zs.manifest["totals"]["bytes"]}
    elif case == "3gpp-after":
        zs = zones.ensure("3gpp", {"profile": "after"}, 1, out_root=out)
        figures = {"items": zs.manifest["totals"]["records"], "unit": "records",
                   "bytes": zs.manifest["totals"]["bytes"]}
    elif case == "mobile-queries":
        zs = zones.ensure("3gpp", {"profile": "after"}, 1, out_root=out)
        started = time.perf_counter()  # the query file alone
        qf = mobile_core(zs, count=1_000_000, seed=1)
        figures = {"items": 1_000_000, "unit": "queries",
                   "bytes": qf.manifest["files"]["queries"]["bytes"],
                   "truncated_share": qf.manifest["measured"]["truncated_share"]}
    elif case == "internet-10k":
        zs = zones.ensure("internet", {}, 1, out_root=out)
        figures = {"items": len(zs.zones), "unit": "zones", "bytes": zs.manifest["totals"]["bytes"]}
    elif case == "water-1m":
        qf = water_torture(out / "queries", ["victim.test"], count=1_000_000, seed=1)
        figures = {"items": 1_000_000, "unit": "queries",
                   "bytes": qf.manifest["files"]["queries"]["bytes"]}
    else:
        raise SystemExit(f"unknown case {case}")
    figures["seconds"] = time.perf_counter() - started
    figures["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return figures


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", help="run one case in this process and print JSON")
    ap.add_argument("--out", type=Path, help="output folder (kept); default: temporary")
    ap.add_argument("--full", action="store_true", help="include the 14 M-record TLD")
    args = ap.parse_args()
    if args.case:
        print(json.dumps(run_case(args.case, args.out)))
        return

    console = Console(width=None if sys.stdout.isatty() else 150)
    out = args.out or Path(tempfile.mkdtemp(prefix="zt-bench-"))
    rows = []
    try:
        for case in CASES + (FULL_CASES if args.full else []):
            r = subprocess.run(
                [sys.executable, "-m", "bench.bench_zones", "--case", case, "--out", str(out)],
                capture_output=True, text=True, cwd=Path(__file__).resolve().parent.parent,
            )
            if r.returncode != 0:
                console.print(f"[red]{case} failed[/red]: {r.stderr.strip().splitlines()[-1:]}")
                continue
            rows.append((case, json.loads(r.stdout.strip().splitlines()[-1])))
            if case.startswith("tld-"):
                # keep the disk free for the next case
                for d in out.glob("tld-*"):
                    shutil.rmtree(d)
    finally:
        if args.out is None:
            shutil.rmtree(out, ignore_errors=True)

    table = Table(title="zone generators (2 cores; each case in its own process)")
    for col in ("case", "items", "seconds", "items/s", "MB written", "peak RSS MB", "note"):
        table.add_column(col, justify="right" if col != "case" else "left")
    for case, f in rows:
        note = ""
        if case == "small-30k":
            note = f"generate {f['generate_s']:.2f} s + lab configs (target <= 10 s)"
        elif case.startswith("tld-") and case.endswith("-signed"):
            note = "xfr-tld's signed mix; RSS <= 500 MB"
        elif case.startswith("tld-"):
            note = "target >= 1,000,000 records/s, RSS <= 500 MB"
        elif "truncated_share" in f:
            note = f"truncated share (model) {f['truncated_share']:.2%}"
        table.add_row(case, f"{f['items']:,} {f['unit']}", f"{f['seconds']:.2f}",
                      f"{f['items'] / f['seconds']:,.0f}", f"{f['bytes'] / 1e6:,.1f}",
                      f"{f['peak_rss_mb']:.0f}", note)
    console.print(table)


if __name__ == "__main__":
    main()
