"""Model of the MME's DNS cache overflow in finding F1 (seed 000, cache states 1/2/3).

A client (the MME) caches records for their TTL (300 s). Its cache holds at most C records;
when a new record must go in and the cache is full, the record with the smallest remaining TTL
is evicted. With R records in use:
- state 1, R < C: records live until their TTL expires (one upstream query per record per TTL);
- state 2, R ~ C: almost so;
- state 3, R > C: records are evicted before their TTL ends, so the client asks again sooner.

`simulate` feeds a seeded lookup stream (uniform or Zipf over the R records) through such a
cache and counts upstream queries; `amplification` is that count relative to the same stream
through a cache that never evicts. `upstream_qps` gives the rate the authoritative server sees,
for the load experiment.

Because every record gets the same TTL, "smallest remaining TTL" is the record inserted
longest ago: the cache is an insertion-ordered dict (evict the oldest), and a re-fetched
expired record moves to the end. The no-eviction baseline is computed vectorised.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from dnslab.errors import LabError

Distribution = Literal["uniform", "zipf"]


@dataclass(frozen=True)
class CacheResult:
    """One simulated (records, cache size) point; counts cover the window after warm-up."""

    records: int
    cache_size: int
    lookups: int
    upstream: int
    baseline_upstream: int  # same stream, cache without eviction
    upstream_qps: float
    baseline_qps: float
    amplification: float
    hit_ratio: float
    state: int  # 1: records < cache, 2: records ~ cache, 3: records > cache


def cache_state(records: int, cache_size: int, tolerance: float = 0.05) -> int:
    """The seed's cache state: 1 below the cache size, 2 within `tolerance` of it, 3 above."""
    ratio = records / cache_size
    if ratio < 1 - tolerance:
        return 1
    if ratio <= 1 + tolerance:
        return 2
    return 3


def query_stream(records: int, lookups: int, dist: Distribution = "uniform",
                 zipf_s: float = 1.0, seed: int = 0) -> np.ndarray:
    """Record ids (0..records-1) of `lookups` client lookups, seeded."""
    if records < 1 or lookups < 1:
        raise LabError("records and lookups must be >= 1")
    rng = np.random.default_rng(seed)
    if dist == "uniform":
        return rng.integers(0, records, size=lookups, dtype=np.int64)
    if dist == "zipf":
        weights = 1.0 / np.arange(1, records + 1, dtype=float) ** zipf_s
        cdf = np.cumsum(weights)
        cdf /= cdf[-1]
        ids = np.searchsorted(cdf, rng.random(lookups), side="right")
        # the rank order is a random permutation, so record id carries no popularity
        return rng.permutation(records)[np.minimum(ids, records - 1)]
    raise LabError(f"unknown distribution {dist!r}", hint="use 'uniform' or 'zipf'")


def upstream_no_eviction(stream: np.ndarray, ttl_n: int, warm_n: int = 0) -> int:
    """Upstream queries (lookups at index >= warm_n) of a cache that never evicts.

    A record is fetched at its first lookup and again at the first lookup at least ttl_n
    lookups after its last fetch; all records are followed at once with searchsorted, one
    round per TTL period.
    """
    n = len(stream)
    order = np.argsort(stream, kind="stable")
    keys = stream[order].astype(np.int64)
    idx = order.astype(np.int64)
    span = n + ttl_n + 1
    # strictly increasing: record first, then lookup index
    v = keys * span + idx
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    cur = starts
    count = int(np.count_nonzero(idx[cur] >= warm_n))
    while cur.size:
        nxt = np.searchsorted(v, v[cur] + ttl_n, side="left")
        ok = nxt < n
        nxt, cur = nxt[ok], cur[ok]
        same = keys[nxt] == keys[cur]
        cur = nxt[same]
        count += int(np.count_nonzero(idx[cur] >= warm_n))
    return count


def upstream_with_eviction(stream: np.ndarray, ttl_n: int, cache_size: int,
                           warm_n: int = 0) -> int:
    """Upstream queries (lookups at index >= warm_n) of a cache of cache_size records that
    evicts the smallest remaining TTL first."""
    if cache_size < 1:
        raise LabError("cache size must be >= 1")
    cache: OrderedDict[int, int] = OrderedDict()
    get = cache.get
    move = cache.move_to_end
    pop = cache.popitem
    misses = 0
    for i, r in enumerate(stream.tolist()):
        expiry = get(r)
        if expiry is not None:
            if expiry > i:
                continue
            move(r)
        cache[r] = i + ttl_n
        if i >= warm_n:
            misses += 1
        if len(cache) > cache_size:
            pop(last=False)
    return misses


def simulate(records: int, cache_size: int, lookup_rate: float = 1000.0,
             duration: float = 3600.0, ttl: float = 300.0, dist: Distribution = "uniform",
             zipf_s: float = 1.0, seed: int = 0, warmup: float | None = None) -> CacheResult:
    """Simulate `duration` s of lookups at `lookup_rate`/s; counts exclude the first `warmup`
    s (default: one TTL, so the cold-cache fill is not counted)."""
    if lookup_rate <= 0 or duration <= 0 or ttl <= 0:
        raise LabError("lookup_rate, duration and ttl must be > 0")
    warm = ttl if warmup is None else warmup
    if warm >= duration:
        raise LabError("warm-up must be shorter than the duration",
                       hint="simulate at least two TTLs")
    n = int(round(lookup_rate * duration))
    ttl_n = max(1, int(round(ttl * lookup_rate)))
    warm_n = int(round(warm * lookup_rate))
    stream = query_stream(records, n, dist, zipf_s, seed)
    base = upstream_no_eviction(stream, ttl_n, warm_n)
    up = upstream_with_eviction(stream, ttl_n, cache_size, warm_n)
    measured_s = duration - warm
    counted = n - warm_n
    return CacheResult(
        records=records, cache_size=cache_size, lookups=counted, upstream=up,
        baseline_upstream=base, upstream_qps=up / measured_s, baseline_qps=base / measured_s,
        amplification=up / base if base else float("nan"), hit_ratio=1 - up / counted,
        state=cache_state(records, cache_size),
    )


def amplification_curve(record_counts: Sequence[int], cache_size: int,
                        **kwargs: object) -> list[CacheResult]:
    """simulate() for each record count with one cache size (same seed for every point)."""
    return [simulate(int(r), cache_size, **kwargs) for r in record_counts]  # type: ignore[arg-type]


def upstream_qps(records: int, cache_size: int, lookup_rate: float, ttl: float = 300.0,
                 dist: Distribution = "uniform", zipf_s: float = 1.0, seed: int = 0,
                 duration: float | None = None) -> float:
    """Steady-state rate of upstream queries (qps at the authoritative server) from one
    client cache, for sizing the load experiment."""
    dur = duration if duration is not None else 4 * ttl
    return simulate(records, cache_size, lookup_rate, dur, ttl, dist, zipf_s, seed).upstream_qps


if __name__ == "__main__":
    # a quick look: records around a cache of 1,000, 1 h at 1,000 lookups/s
    print("dist     records state upstream_qps baseline_qps amplification")
    for d in ("uniform", "zipf"):
        for res in amplification_curve([250, 500, 900, 1000, 1050, 1200, 1500, 2000, 4000],
                                        1000, dist=d, seed=0):
            print(f"{d:8} {res.records:7d} {res.state:5d} {res.upstream_qps:12.1f} "
                  f"{res.baseline_qps:12.1f} {res.amplification:13.2f}")
