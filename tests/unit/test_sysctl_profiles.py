"""Sysctl profiles: every profile file loads, and values the seeds published are in them."""

from __future__ import annotations

import pytest

from dnslab import sysctl
from dnslab.errors import LabError

HOST_WIDE = {"net.core.netdev_max_backlog", "net.core.netdev_budget", "net.core.default_qdisc",
             "net.ipv4.tcp_mem", "net.ipv4.udp_mem"}


def test_every_profile_loads_and_keeps_host_wide_keys_apart():
    names = sysctl.known_profiles()
    for required in ("default", "mobile-core", "dnsdist", "ldplayer", "esnet-10g",
                     "auth-operator", "diiner", "tso-win-divisor-1", "wide-ports",
                     "tw-buckets-1000"):
        assert required in names
    for name in names:
        profile = sysctl.load_profile(name)
        assert profile.description
        assert not set(profile.sysctls) & HOST_WIDE, f"{name}: host-wide key in sysctls"
        assert set(profile.host_sysctls) <= HOST_WIDE


def test_published_values():
    assert sysctl.load_profile("wide-ports").sysctls == {
        "net.ipv4.ip_local_port_range": "2048 65500"}
    assert sysctl.load_profile("tw-buckets-1000").dangerous
    assert sysctl.load_profile("diiner").sysctls == {"net.ipv4.tcp_abort_on_overflow": "1"}
    assert sysctl.load_profile("esnet-10g").sysctls["net.ipv4.tcp_rmem"] == "4096 87380 33554432"


def test_host_keys_only_with_permission():
    profile = sysctl.load_profile("dnsdist")
    assert "net.core.netdev_max_backlog" not in sysctl.node_sysctls(profile, allow_host=False)
    assert sysctl.node_sysctls(profile, allow_host=True)["net.core.netdev_max_backlog"] == "16384"


def test_unknown_profile_lists_known():
    with pytest.raises(LabError) as exc:
        sysctl.load_profile("fast")
    assert "wide-ports" in (exc.value.hint or "")
