"""Why F4's broken tier has three name servers and its Unbound no discard-timeout
(bench/servfail_timing.py, a stand-alone Unbound in a throwaway
namespace): a failing name costs 5 serial tries per name server for the name and again for
each server's own address, and today's Unbound drops the reply of a resolution past 1.9 s
(CVE-2024-33655's discard-timeout), which the seed's 1.6.6 did not."""

from __future__ import annotations

import pytest

from bench.servfail_timing import time_servfails
from tests.conftest import need_binary

pytestmark = pytest.mark.integration


def test_a_broken_names_servfail_takes_its_serial_tries_and_passes_1_9_s_only_without_discard():
    need_binary("unbound")
    one = time_servfails(1, 80, names=1, discard_timeout_ms=0, wait_limit=0)[0]
    three = time_servfails(3, 80, names=1, discard_timeout_ms=0, wait_limit=0)[0]
    assert one["rcode"] == three["rcode"] == "SERVFAIL"
    assert (one["datagrams"], three["datagrams"]) == (10, 60)
    # one round trip a try: 60 x 80 ms, the seed's ~4.9 s
    assert 0.7 <= one["seconds"] <= 1.2 and 4.6 <= three["seconds"] <= 5.5, (one, three)
    # today's default drops it: the client gets nothing, though Unbound tried as often
    dropped = time_servfails(3, 80, names=1, timeout_s=7)[0]
    assert dropped["rcode"] is None and dropped["datagrams"] == 60, dropped
