"""Both runtimes end to end with real daemons: up, one real query per server kind, no route
off any node, per-node sysctls read back, down leaving nothing (tests taking `runtime` run
once on netns and once on clab).

Also the teardown rules on the netns runtime: nothing is left after a failed `lab up`, after
the runner is killed, and after Ctrl-C.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from dnslab import lab as lab_engine
from dnslab import nsenter, topology
from dnslab.errors import LabError
from dnslab.render import reference_data
from dnslab.results import read_meta
from dnslab.runtime.clab import MGMT_NETWORK

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
DNSLAB = [sys.executable, "-m", "dnslab.cli"]


def nothing_left(lab: str) -> None:
    """No namespace, container, veth, bridge, state or process of the lab, and no
    containerlab management network once no containerlab container is left."""
    assert lab_engine.leftovers(lab) == []
    assert not [ns for ns in nsenter.list_namespaces() if ns.startswith(f"dnslab-{lab}-")]
    assert not (REPO / "build" / "labs" / lab / "state.json").exists()
    node_dirs = str(REPO / "build" / "labs" / lab / "nodes")
    running = [p.info["pid"] for p in psutil.process_iter(["pid", "cmdline"])
               if any(node_dirs in arg for arg in p.info["cmdline"] or [])]
    assert running == []
    if subprocess.run(["docker", "info"], capture_output=True).returncode == 0:
        containers = subprocess.run(["docker", "ps", "-aq", "--filter", "label=containerlab"],
                                    capture_output=True, text=True).stdout.split()
        network = subprocess.run(["docker", "network", "inspect", MGMT_NETWORK],
                                 capture_output=True)
        assert containers or network.returncode != 0


# a per-node sysctl (only sec-bind's port range differs) to read back from inside the nodes
SEC_BIND_PORTS = "2048 65500"


@pytest.fixture
def reference(runtime, tmp_path):
    lab_engine.down("reference")
    data = reference_data(topology.load("reference"), tmp_path)
    data.sysctls = {"sec-bind": {"net.ipv4.ip_local_port_range": SEC_BIND_PORTS}}
    handle = lab_engine.up("reference", runtime=runtime, data=data, quiet=True)
    try:
        yield handle
    finally:
        lab_engine.down("reference")
        nothing_left("reference")


def test_the_lab_runs_on_the_runtime_asked_for(reference, runtime):
    assert reference.state.runtime == runtime
    if runtime == "clab":
        # containerlab resolves each node's image from its group as dnslab.topology does
        for name, node in reference.state.nodes.items():
            image = subprocess.run(["docker", "inspect", "-f", "{{.Config.Image}}",
                                    f"clab-reference-{name}"], capture_output=True, text=True,
                                   check=True).stdout.strip()
            assert node.image and image == node.image, name


def test_each_server_kind_answers_a_real_query(reference):
    lab = reference
    for node in ("primary", "sec-bind", "sec-knot", "sec-nsd"):
        answer = lab.query("client", node, "example.test.", "SOA")
        assert (answer.rcode, answer.authoritative, answer.answers) == ("NOERROR", True, 1), node
    forwarded = lab.query("client", "frontend", "www.example.test.", "A")
    assert (forwarded.rcode, forwarded.answers) == ("NOERROR", 1)
    resolved = lab.query("client", "resolver", "www.example.test.", "A")
    assert (resolved.rcode, resolved.authoritative, resolved.answers) == ("NOERROR", False, 1)
    over_tcp = lab.query("client", "sec-knot", "www.example.test.", "AAAA", tcp=True)
    assert over_tcp.answers == 1


def test_secondaries_hold_the_primarys_serial(reference):
    serial = reference.query("client", "primary", "example.test.", "SOA").serial
    for node in ("sec-bind", "sec-knot", "sec-nsd"):
        assert reference.query("client", node, "example.test.", "SOA").serial == serial


def test_no_route_leaves_any_node(reference):
    for node in reference.state.nodes:
        routes = reference.run(node, ["ip", "-4", "route", "show"]).stdout.strip().splitlines()
        assert routes == ["198.18.0.0/24 dev eth1 proto kernel scope link src "
                          f"{reference.address(node)}"], node
        probe = reference.run(node, ["ip", "route", "get", "192.0.2.1"], check=False)
        assert probe.returncode != 0 and "unreachable" in probe.stderr


def test_resolver_root_hints_point_only_into_the_lab(reference):
    hints = (reference.node_dir("resolver") / "root.hints").read_text()
    lab_addresses = {reference.address(n) for n in reference.state.nodes}
    for line in hints.splitlines():
        if line.strip() and not line.startswith(";") and line.split()[2] == "A":
            assert line.split()[3] in lab_addresses


def test_per_node_sysctls_are_applied_and_read_back(reference):
    for node in reference.state.nodes.values():
        assert node.sysctls["net.ipv6.conf.all.disable_ipv6"] == "1"
        inside = reference.run(node.name, ["cat", "/proc/sys/net/ipv4/ip_local_port_range"])
        assert " ".join(inside.stdout.split()) == node.sysctls["net.ipv4.ip_local_port_range"]
    assert reference.state.nodes["sec-bind"].sysctls["net.ipv4.ip_local_port_range"] == \
        SEC_BIND_PORTS
    assert reference.state.nodes["primary"].sysctls["net.ipv4.ip_local_port_range"] != \
        SEC_BIND_PORTS


def test_lab_exec_runs_in_the_node(reference):
    proc = subprocess.run([*DNSLAB, "lab", "exec", "client", "--", "dig", "+short",
                           "@198.18.0.16", "www.example.test", "A"],
                          capture_output=True, text=True, cwd=REPO)
    assert proc.stdout.strip() == "192.0.2.1"


def test_second_up_is_refused_with_a_hint(reference, runtime):
    proc = subprocess.run([*DNSLAB, "lab", "up", "--runtime", runtime],
                          capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 2
    assert "already up" in proc.stderr and "Traceback" not in proc.stderr


def test_failed_daemon_names_the_node_and_leaves_nothing(tmp_path):
    lab_engine.down("reference")
    topo = topology.load("reference")
    data = reference_data(topo, tmp_path)
    # knotd refuses a config whose template option is out of range: a real start failure
    data.node_options = {"sec-knot": {"udp-workers": 99999}}
    with pytest.raises(LabError) as exc:
        lab_engine.up("reference", runtime="netns", data=data, quiet=True)
    assert "sec-knot" in exc.value.message
    assert exc.value.detail and "udp-workers" in exc.value.detail
    nothing_left("reference")


def _wait_for_namespaces(lab: str, count: int, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if len([n for n in nsenter.list_namespaces() if n.startswith(f"dnslab-{lab}-")]) >= count:
            return
        time.sleep(0.01)
    raise AssertionError("lab up did not get as far as creating namespaces")


# A runner that brings the reference lab up but waits on a zone nobody serves, so it is
# still inside `up` when the signal arrives.
SLOW_UP = """
import sys
# the CLI's own handlers: SIGINT back for a background job (a non-interactive shell leaves
# it ignored), SIGTERM as Ctrl-C
from dnslab.cli import interrupt_on_signals
interrupt_on_signals()
from dnslab import lab, topology
from dnslab.render import lab_dir, reference_data
topo = topology.load("reference")
data = reference_data(topo, lab_dir("reference"))
data.health_zone = "not-served.test."
try:
    lab.up("reference", runtime="netns", data=data, quiet=True)
except KeyboardInterrupt:
    print("interrupted", file=sys.stderr)
    sys.exit(130)
"""


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT, signal.SIGTERM])
def test_interrupted_runner_leaves_nothing_after_down(sig):
    lab_engine.down("reference")
    runner = subprocess.Popen([sys.executable, "-c", SLOW_UP], cwd=REPO, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _wait_for_namespaces("reference", 8)
    runner.send_signal(sig)
    try:
        _out, err = runner.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        runner.kill()
        lab_engine.down("reference")
        raise
    if sig in (signal.SIGINT, signal.SIGTERM):
        # Ctrl-C or kill: the runner tears the lab down itself, before `lab down` is called
        assert runner.returncode == 130 and "interrupted" in err, err
        nothing_left("reference")
    else:
        assert lab_engine.leftovers("reference"), "SIGKILL should leave the lab for lab down"
    subprocess.run([*DNSLAB, "lab", "down", "--lab", "reference"], cwd=REPO, check=True,
                   capture_output=True)
    nothing_left("reference")


def lab_processes(lab: str) -> list[int]:
    node_dirs = str(REPO / "build" / "labs" / lab / "nodes")
    return [p.info["pid"] for p in psutil.process_iter(["pid", "cmdline"])
            if any(node_dirs in arg for arg in p.info["cmdline"] or [])]


@pytest.mark.parametrize("to", ["make", "make and its process group"])
def test_make_experiment_stopped_by_sigterm_leaves_nothing(tmp_path, to):
    """SIGTERM to `make experiment` (a scheduler's kill, or `timeout`, which sends it to make
    and to make's process group, so the runner gets make's and its own) tears the lab down
    as Ctrl-C does: nothing of it is left, the run is kept as interrupted."""
    lab_engine.down("xfr")
    env = {**os.environ, "DNSLAB_RESULTS": str(tmp_path)}
    make = subprocess.Popen(["make", "-C", str(REPO), "experiment", "EXP=xfr-smallest",
                             "SCALE=ci", "RUNTIME=netns"], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not lab_processes("xfr") and make.poll() is None:  # the lab's daemons run
            assert time.monotonic() < deadline, "the experiment's lab did not come up"
            time.sleep(0.05)
        runner = psutil.Process(make.pid).children(recursive=True)
        assert runner and make.poll() is None, "the run ended before its lab was stopped"
        make.send_signal(signal.SIGTERM)
        if to == "make and its process group":
            os.killpg(make.pid, signal.SIGTERM)
        _out, err = make.communicate(timeout=30)
    finally:
        if make.poll() is None:
            os.killpg(make.pid, signal.SIGKILL)
            make.wait()
            lab_engine.down("xfr")
    assert "interrupted: the lab was torn down" in err and "Traceback" not in err, err
    assert not [p for p in runner if p.is_running() and p.status() != psutil.STATUS_ZOMBIE], err
    nothing_left("xfr")
    runs = list((tmp_path / "xfr-smallest").iterdir())
    assert len(runs) == 1 and read_meta(runs[0])["complete"] is False


def test_lab_down_stops_a_process_of_the_lab_its_namespaces_no_longer_hold():
    """A daemon that was being started as an interrupt came (`ip netns exec` had opened its
    namespace, not yet entered it) runs on in a namespace whose name is gone: teardown finds
    it by the lab folder its command line names, and stops it."""
    lab_engine.down("reference")
    handle = lab_engine.up("reference", runtime="netns", quiet=True)
    config = str(handle.rendered.node_dir("primary") / "named.conf")
    stray = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", config],
                             start_new_session=True)
    try:
        removed = lab_engine.down("reference")
        assert f"process {stray.pid}" in removed
        assert stray.poll() is not None or stray.wait(timeout=5) is not None
    finally:
        if stray.poll() is None:
            stray.kill()
    nothing_left("reference")


def test_not_root_is_told_to_use_sudo():
    proc = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                           *DNSLAB, "lab", "up", "--runtime", "netns"],
                          capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 2, proc.stderr
    assert "sudo" in proc.stderr and "Traceback" not in proc.stderr


def test_host_wide_sysctls_are_refused_and_recorded(tmp_path):
    lab_engine.down("reference")
    topo = topology.load("reference")
    data = reference_data(topo, tmp_path)
    with open("/proc/sys/net/core/netdev_max_backlog") as handle:
        host_before = handle.read()
    data.sysctls = {"sec-bind": {"net.core.netdev_max_backlog": "12345",
                                 "net.ipv4.ip_local_port_range": "2048 65500"}}
    handle = lab_engine.up("reference", runtime="netns", data=data, quiet=True)
    try:
        node = handle.state.nodes["sec-bind"]
        assert node.sysctls_refused == {"net.core.netdev_max_backlog": "12345"}
        assert node.sysctls["net.ipv4.ip_local_port_range"] == "2048 65500"
        assert "net.ipv4.ip_local_port_range" in handle.state.nodes["primary"].sysctls
        assert handle.state.nodes["primary"].sysctls["net.ipv4.ip_local_port_range"] != \
            "2048 65500"
    finally:
        lab_engine.down("reference")
    with open("/proc/sys/net/core/netdev_max_backlog") as handle_after:
        assert handle_after.read() == host_before
    nothing_left("reference")


def test_allowed_host_sysctls_are_restored_at_down(tmp_path, monkeypatch):
    lab_engine.down("reference")
    topo = topology.load("reference")
    data = reference_data(topo, tmp_path)
    path = "/proc/sys/net/core/netdev_max_backlog"
    with open(path) as handle:
        before = handle.read().strip()
    wanted = str(int(before) + 7)
    data.sysctls = {"sec-bind": {"net.core.netdev_max_backlog": wanted}}
    monkeypatch.setenv("DNSLAB_ALLOW_HOST_SYSCTLS", "1")
    lab = lab_engine.up("reference", runtime="netns", data=data, quiet=True)
    try:
        assert lab.state.nodes["sec-bind"].sysctls["net.core.netdev_max_backlog"] == wanted
        with open(path) as handle:
            assert handle.read().strip() == wanted
    finally:
        lab_engine.down("reference")
    with open(path) as handle:
        assert handle.read().strip() == before
    nothing_left("reference")
