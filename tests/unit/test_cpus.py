"""CPU placement: cpu-set parsing, the generator/server split, the rendered clab file and the
netns runtime's taskset wrapping, and the per-core busy share."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from dnslab import cpus, render, topology
from dnslab.errors import LabError
from dnslab.runtime.base import LabState, NodeState
from dnslab.runtime.netns import NetnsRuntime


@pytest.mark.parametrize(("text", "expected"), [
    ("1", [1]), ("0-2,5", [0, 1, 2, 5]), (3, [3]), ("2,0,1", [0, 1, 2]), (" 0 - 1 ", [0, 1])])
def test_parse_reads_containerlab_cpu_sets(text, expected):
    assert cpus.parse(text) == expected
    assert cpus.parse(cpus.format_set(expected)) == expected


@pytest.mark.parametrize("text", ["", "a", "3-1", "-1", "1-x"])
def test_parse_rejects_what_is_not_a_cpu_list(text):
    with pytest.raises(LabError):
        cpus.parse(text)


def test_format_set_joins_ranges():
    assert cpus.format_set([5, 0, 1, 2]) == "0-2,5"
    assert cpus.format_set([1]) == "1"


def test_place_keeps_generator_and_server_apart_by_default():
    placed = cpus.place(allowed=[0, 1])
    assert (placed.generator, placed.server, placed.shared) == ("1", "0", False)
    four = cpus.place(generator_cores=2, allowed=[0, 1, 2, 3])
    assert (four.generator, four.server) == ("2-3", "0-1")


def test_place_honours_explicit_sets_and_sharing():
    assert cpus.place("0", "1", allowed=[0, 1]).as_dict() == {
        "generator_cpus": "0", "server_cpus": "1", "shared": False, "host_cpus": 2}
    shared = cpus.place(share=True, allowed=[0, 1])
    assert (shared.generator, shared.server, shared.shared) == ("0-1", "0-1", True)


def test_place_refuses_overlap_unknown_cpus_and_one_core():
    with pytest.raises(LabError, match="overlap"):
        cpus.place("0-1", "1", allowed=[0, 1])
    with pytest.raises(LabError, match="CPU 7"):
        cpus.place("7", "0", allowed=[0, 1])
    with pytest.raises(LabError, match="one CPU"):
        cpus.place(allowed=[0])


def test_topology_reads_cpu_set_and_rejects_a_bad_one(tmp_path: Path):
    text = """\
name: mini
topology:
  defaults: {kind: linux}
  nodes:
    p1: {image: x, cpu-set: "0", labels: {dnslab.role: primary, dnslab.server: bind}}
    c1: {image: x, labels: {dnslab.role: client, dnslab.server: tools}}
    lan: {kind: bridge}
  links:
    - endpoints: [p1:eth1, lan:p1]
    - endpoints: [c1:eth1, lan:c1]
"""
    path = tmp_path / "mini.clab.yml"
    path.write_text(text)
    topo = topology.load(path)
    assert topo.node("p1").cpu_set == "0"
    assert topo.node("c1").cpu_set == ""
    path.write_text(text.replace('cpu-set: "0"', 'cpu-set: "1-0"'))
    with pytest.raises(LabError, match="p1"):
        topology.load(path)


def test_experiment_cpu_sets_reach_the_clab_file(tmp_path: Path):
    topo = topology.load("reference")
    data = render.reference_data(topo, tmp_path)
    data.cpu_sets = {"client": "0"}
    lab = render.render(topo, data, tmp_path)
    nodes = yaml.safe_load(lab.clab_file.read_text())["topology"]["nodes"]
    assert nodes["client"]["cpu-set"] == "0"
    assert "cpu-set" not in nodes["primary"]
    assert render.node_cpu_set(lab, topo.node("client")) == "0"


def test_netns_commands_run_under_taskset_when_placed():
    state = LabState(lab="x", runtime="netns", topology="", root="/tmp")
    state.nodes["client"] = NodeState(name="client", role="client", server="tools",
                                      address="198.18.0.11", netns="/run/netns/dnslab-x-client",
                                      log="", cpu_set="1")
    state.nodes["free"] = NodeState(name="free", role="client", server="tools",
                                    address="198.18.0.12", netns="/run/netns/dnslab-x-free", log="")
    runtime = NetnsRuntime()
    assert runtime.exec_argv(state, "client", ["dig"]) == [
        "taskset", "-c", "1", "ip", "netns", "exec", "dnslab-x-client", "dig"]
    assert runtime.exec_argv(state, "free", ["dig"])[:3] == ["ip", "netns", "exec"]


def test_core_sampler_reports_busy_share(tmp_path: Path):
    stat = tmp_path / "stat"
    stat.write_text("cpu  10 0 10 80 0 0 0 0 0 0\ncpu0 5 0 5 40 0 0 0 0 0 0\n"
                    "cpu1 5 0 5 40 0 0 0 0 0 0\n")
    sampler = cpus.CoreSampler(stat)
    # cpu0: 50 busy of 100 jiffies (softirq counts as busy); cpu1: idle
    stat.write_text("cpu  0 0 0 0 0 0 0 0 0 0\ncpu0 25 0 25 90 0 0 10 0 0 0\n"
                    "cpu1 5 0 5 140 0 0 0 0 0 0\n")
    assert sampler.sample() == {0: 50.0, 1: 0.0}


def test_other_load_counts_what_runs_outside_the_lab_and_nothing_inside_it():
    """A busy process outside the lab (not this process's child: its shell has exited) shows
    in `other_pct`; with this machine's own namespace taken as the lab's it does not (other
    labs' namespaces on a shared machine count in both, so the difference is the loop's)."""
    import subprocess
    import time

    from dnslab.cpus import OtherLoadSampler

    subprocess.run(["sh", "-c", "timeout 4 sh -c 'while :; do :; done' > /dev/null 2>&1 &"],
                   check=True)
    outside = OtherLoadSampler(lambda: [])
    inside = OtherLoadSampler(lambda: ["/proc/self/ns/net"])
    time.sleep(1.5)
    assert outside.sample() - inside.sample() >= 50.0
