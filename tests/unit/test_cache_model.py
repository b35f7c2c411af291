"""Unit tests of the MME cache model (F1 cache states 1/2/3)."""

from __future__ import annotations

import time

import numpy as np
import pytest

from experiments.f1_tcp_fallback import cache_model as cm


def _brute_force(stream: np.ndarray, ttl_n: int, cache_size: int | None) -> int:
    """Straight transcription of the rule: evict the smallest remaining TTL when full."""
    cache: dict[int, int] = {}
    misses = 0
    for i, r in enumerate(stream.tolist()):
        if r in cache and cache[r] > i:
            continue
        misses += 1
        cache[r] = i + ttl_n
        if cache_size is not None and len(cache) > cache_size:
            victim = min(cache, key=lambda k: cache[k] - i)
            del cache[victim]
    return misses


@pytest.mark.parametrize("records,cache_size", [(30, 50), (50, 50), (80, 50), (200, 50)])
def test_eviction_matches_brute_force(records: int, cache_size: int) -> None:
    stream = cm.query_stream(records, 5000, "zipf", seed=3)
    assert cm.upstream_with_eviction(stream, 400, cache_size) == _brute_force(
        stream, 400, cache_size)


@pytest.mark.parametrize("dist", ["uniform", "zipf"])
def test_vectorised_baseline_matches_unbounded_cache(dist: str) -> None:
    stream = cm.query_stream(300, 20_000, dist, seed=7)
    for warm_n in (0, 1234):
        assert cm.upstream_no_eviction(stream, 997, warm_n) == cm.upstream_with_eviction(
            stream, 997, 10**9, warm_n)
        assert cm.upstream_no_eviction(stream, 997, 0) == _brute_force(stream, 997, None)


@pytest.mark.parametrize("dist", ["uniform", "zipf"])
def test_amplification_one_below_cache_size_rising_above(dist: str) -> None:
    curve = cm.amplification_curve([200, 500, 1000, 1200, 2000], cache_size=1000,
                                   lookup_rate=200, duration=1800, dist=dist, seed=1)
    amp = {r.records: r.amplification for r in curve}
    assert [r.state for r in curve] == [1, 1, 2, 3, 3]
    # state 1 and the exact fit: nothing is evicted, so the same upstream count
    assert amp[200] == pytest.approx(1.0)
    assert amp[500] == pytest.approx(1.0)
    assert amp[1000] == pytest.approx(1.0)
    # state 3: evicted before the TTL ends, so more upstream queries than records/TTL
    assert amp[1200] > 1.5
    assert amp[2000] > amp[1200]


def test_state_one_rate_is_records_over_ttl() -> None:
    # every record is looked up far more often than once per TTL: one fetch per TTL each
    qps = cm.upstream_qps(records=100, cache_size=1000, lookup_rate=500, ttl=300)
    assert qps == pytest.approx(100 / 300, rel=0.05)
    # same stream, cache a tenth of the records: far more upstream queries
    assert cm.upstream_qps(records=100, cache_size=10, lookup_rate=500, ttl=300) > 20 * qps


def test_seeded_and_fast() -> None:
    a = cm.simulate(5000, 4000, lookup_rate=1000, duration=3600, dist="zipf", seed=5)
    b = cm.simulate(5000, 4000, lookup_rate=1000, duration=3600, dist="zipf", seed=5)
    assert a == b
    t0 = time.perf_counter()
    cm.simulate(20_000, 10_000, lookup_rate=1000, duration=3600, dist="uniform", seed=0)
    assert time.perf_counter() - t0 < 5.0


def test_cache_state_bounds_and_errors() -> None:
    assert cm.cache_state(900, 1000) == 1
    assert cm.cache_state(1030, 1000) == 2
    assert cm.cache_state(1100, 1000) == 3
    with pytest.raises(cm.LabError):
        cm.query_stream(10, 10, "pareto")  # type: ignore[arg-type]
    with pytest.raises(cm.LabError):
        cm.simulate(10, 10, duration=100, ttl=300)
