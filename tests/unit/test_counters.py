"""The counters module: parsing of the /proc counters the monitors sample, and the monitor
series read back (window means, growth, peaks)."""

from __future__ import annotations

from dnslab import counters, monitor

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
    tables = counters.parse_snmp(SNMP)
    assert tables["Tcp"]["ActiveOpens"] == 31
    assert tables["Udp"]["RcvbufErrors"] == 4


def test_tcp_states(tmp_path):
    (tmp_path / "tcp").write_text(TCP)
    counts = counters.tcp_states(tmp_path)
    assert counts[counters.TCP_TIME_WAIT] == 2
    assert counts[counters.TCP_ESTABLISHED] == 1
    assert counts["total"] == 4


def test_sockstat_time_wait(tmp_path):
    (tmp_path / "sockstat").write_text("sockets: used 5\nTCP: inuse 1 orphan 0 tw 28231 alloc 3 "
                                       "mem 1\nUDP: inuse 2 mem 1\n")
    assert counters.sockstat_time_wait(tmp_path) == 28231


def test_sample_of_this_namespace_has_every_column():
    sample = counters.sample_counters()
    assert set(sample) | {"t", "cpu_pct", "rss_kb"} == set(monitor.COLUMNS)


NETSTAT = """TcpExt: SyncookiesSent ListenOverflows ListenDrops TCPSynRetrans
TcpExt: 0 12 13 4
"""


def test_tables_of_snmp_and_netstat_together(tmp_path):
    (tmp_path / "snmp").write_text(SNMP)
    (tmp_path / "netstat").write_text(NETSTAT)
    tables = counters.read_tables(tmp_path)
    assert tables["TcpExt"]["ListenOverflows"] == 12 and tables["Udp"]["InErrors"] == 5
    assert counters.deltas({"a": 3}, {"a": 10, "b": 2}, ["a", "b"]) == {"a": 7, "b": 2}


MONITOR = """t,cpu_pct,udp_in_errors,tcp_time_wait
0.5,,0,0
1.5,2.0,0,10
2.5,40.0,3,250
3.5,60.0,7,120
"""


def test_monitor_series_max_window_mean_growth(tmp_path):
    path = tmp_path / "sec.csv"
    path.write_text(MONITOR)
    cpu = counters.read_series(path, "cpu_pct")
    assert cpu is not None and cpu.t == [1.5, 2.5, 3.5]  # the row without a value is skipped
    assert cpu.mean(1.5, 3.5) == 50.0  # window (1.5, 3.5]
    assert cpu.mean_above(5) == 50.0 and cpu.max() == 60.0
    assert counters.read_series(path, "udp_in_errors").growth() == 7
    assert counters.read_series(path, "tcp_time_wait").max() == 250
    assert counters.read_series(tmp_path / "missing.csv", "cpu_pct") is None
    assert counters.read_monitor(path) is not None and len(counters.read_monitor(path).rows) == 4
    assert counters.window_mean(path, "cpu_pct", 10, 20) is None


def test_peak_growth_and_rate_over_a_window():
    t = [0, 1, 2, 3, 4, 5]
    opened = [0, 10, 30, 31, 80, 81]  # cumulative
    assert counters.peak_growth(t, opened, window_s=2) == 50  # 2 -> 4: 30 -> 80
    assert counters.peak_rate(t, opened, window_s=1) == 49  # 3 -> 4
    assert counters.peak_growth(t, opened, window_s=60) == 81  # the whole series
    assert counters.peak_growth([], [], window_s=10) == 0.0


DEV = """Inter-|   Receive  |  Transmit
 face |bytes packets errs drop fifo frame compressed multicast|bytes packets errs drop ...
    lo: 100  2 0 9 0 0 0 0  100  2 0 9 0 0 0 0
  eth1: 5000 40 0 3 0 0 0 0 7000 50 0 1 0 0 0 0
  eth2: 5000 40 0 2 0 0 0 0 7000 50 0 4 0 0 0 0
"""
SOFTNET = """00000010 00000002 00000000
00000020 0000000a 00000000
"""
ARP_CACHE = """entries  allocs destroys unresolved_discards table_fulls
00000003 00000001 00000000 00000004 00000000
00000003 00000001 00000000 00000001 00000000
"""


def test_drops_inside_the_lab_are_read_with_the_tables(tmp_path):
    """Where a datagram sent and never received went: interface drops (loopback's left out),
    the CPUs' full input backlogs and ARP's discards, each summed (hexadecimal per CPU)."""
    (tmp_path / "snmp").write_text(SNMP)
    (tmp_path / "dev").write_text(DEV)
    (tmp_path / "softnet_stat").write_text(SOFTNET)
    (tmp_path / "stat").mkdir()
    (tmp_path / "stat" / "arp_cache").write_text(ARP_CACHE)
    no_boot_id = tmp_path / "absent"
    tables = counters.read_tables(tmp_path, no_boot_id)
    assert tables["Links"] == {"RxDrop": 5, "TxDrop": 5}
    assert tables["Kernel"] == {"BacklogDrops": 12, "ArpUnresolvedDiscards": 5}
    (tmp_path / "dev").unlink()
    assert "Links" not in counters.read_tables(tmp_path, no_boot_id)


def test_the_kernel_drops_name_the_kernel_that_counted_them(tmp_path):
    """Emulated hosts are namespaces of one kernel: its boot id tells the leak check to count
    the host-wide drops once."""
    (tmp_path / "snmp").write_text(SNMP)
    (tmp_path / "softnet_stat").write_text(SOFTNET)
    (tmp_path / "stat").mkdir()
    (tmp_path / "stat" / "arp_cache").write_text(ARP_CACHE)
    (tmp_path / "boot_id").write_text("0c0ffee0-0000-4000-8000-000000000001\n")
    kernel = counters.read_tables(tmp_path, tmp_path / "boot_id")["Kernel"]
    assert kernel["BootId"] == 0x0C0FFEE0000040008000000000000001
    assert kernel["BacklogDrops"] == 12
