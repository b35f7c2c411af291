"""The MME cache model procedure of F1 (experiment `tcp-fallback-cache`).

`cache_curve`: `experiments/cache_model.py`'s amplification curve over record counts around an
MME cache size, one cell per lookup distribution, written to `cache.csv`; figures
`cache_size`, `records`, `amplification`, `onset_records` (smallest record count whose
amplification exceeds 1 + ONSET_MARGIN), `max_amplification`.
"""

from __future__ import annotations

from typing import Any

from dnslab.experiment import Run
from experiments.common import check_choice, write_rows
from experiments.f1_tcp_fallback import cache_model

CACHE_COLUMNS = ["dist", "records", "cache_size", "state", "lookups", "upstream",
                 "baseline_upstream", "upstream_qps", "baseline_qps", "amplification",
                 "hit_ratio"]


def curve_figures(results: list[cache_model.CacheResult], margin: float) -> dict[str, Any]:
    onset = next((r.records for r in results if r.amplification > 1 + margin), None)
    return {
        "cache_size": results[0].cache_size if results else None,
        "records": [r.records for r in results],
        "amplification": [round(r.amplification, 4) for r in results],
        "states": [r.state for r in results],
        "onset_records": onset,
        "max_amplification": round(max(r.amplification for r in results), 4)
        if results else None,
    }


def cache_curve(run: Run) -> None:
    """tcp-fallback-cache: amplification vs records around the cache size, per distribution."""
    params = run.params
    counts = sorted(int(c) for c in params["record_counts"])
    cache = int(params["cache_size"])
    for dist in params["dists"]:
        check_choice("dists", [dist], ("uniform", "zipf"))
        cell_params = {"dist": dist, "cache_size": cache, "record_counts": counts}
        with run.cell(f"dist={dist}", cell_params) as cell:
            results = cache_model.amplification_curve(
                counts, cache, lookup_rate=float(params["lookup_rate"]),
                duration=float(params["duration_s"]), ttl=float(params["ttl_s"]),
                dist=dist, zipf_s=float(params["zipf_s"]), seed=int(params["seed"]))
            write_rows(cell.path / "cache.csv", CACHE_COLUMNS,
                       [{"dist": dist, **r.__dict__} for r in results])
            cell.figures.update(curve_figures(results, float(params["onset_margin"])))
