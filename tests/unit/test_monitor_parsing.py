"""Parsing of the /proc counters the monitors sample."""

from __future__ import annotations

from dnslab import monitor

SNMP = """Tcp: RtoAlgorithm RtoMin ActiveOpens PassiveOpens RetransSegs
Tcp: 1 200 31 7 3
Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors
Udp: 100 2 5 90 4
"""

TCP = """  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid
   0: 0B0012C6:0035 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1
   1: 0C0012C6:9C40 0B0012C6:0035 06 00000000:00000000 03:00001770 00000000     0        0 0
   2: 0C0012C6:9C41 0B0012C6:0035 06 00000000:00000000 03:00001770 00000000     0        0 0
   3: 0C0012C6:9C42 0B0012C6:0035 01 00000000:00000000 00:00000000 00000000     0        0 2
"""


def test_snmp_tables():
    tables = monitor._snmp_table(SNMP)
    assert tables["Tcp"]["ActiveOpens"] == 31
    assert tables["Udp"]["RcvbufErrors"] == 4


def test_tcp_states(tmp_path):
    (tmp_path / "tcp").write_text(TCP)
    counts = monitor._tcp_states(tmp_path)
    assert counts[monitor.TCP_TIME_WAIT] == 2
    assert counts[monitor.TCP_ESTABLISHED] == 1
    assert counts["total"] == 4


def test_sockstat_time_wait(tmp_path):
    (tmp_path / "sockstat").write_text("sockets: used 5\nTCP: inuse 1 orphan 0 tw 28231 alloc 3 "
                                       "mem 1\nUDP: inuse 2 mem 1\n")
    assert monitor._sockstat_tw(tmp_path) == 28231


def test_sample_of_this_namespace_has_every_column():
    sample = monitor.sample_counters()
    assert set(sample) | {"t", "cpu_pct", "rss_kb"} == set(monitor.COLUMNS)
