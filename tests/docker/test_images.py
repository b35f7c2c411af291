"""Smoke tests of the lab's container images on a real Docker engine.

The reference lab is rendered by the lab's own renderer (the same templates and files the
netns runtime uses), and each image runs its node folder the way containerlab does: the
folder is bind-mounted at its host path, the container starts with only a management
network, and the lab LAN arrives afterwards as eth1; the image's entrypoint waits for
eth1, puts the node's lab address on it and execs run.sh. A tools container then queries
every server over that LAN.

Both networks are `--internal` (the lab LAN 198.18.0.0/24, management 198.18.201.0/24),
so nothing can leave the host. Docker is started with scripts/start-dockerd.sh if needed
and images are built with scripts/build-images.sh if missing or out of date. Every
container and network is removed at the end, also when a test fails.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from dnslab import render, topology
from dnslab.servers import manifest
from dnslab.topology import KindMap

pytestmark = pytest.mark.docker

REPO = Path(__file__).resolve().parents[2]
LABEL = "org.dnslab.smoke"
# Docker's IPAM hands out the upper half; the lab rule puts nodes at .11 and up.
LAN_SUBNET, LAN_RANGE = str(topology.LAN), "198.18.0.128/25"
MGMT_SUBNET = "198.18.201.0/24"
REFERENCE = topology.load("reference")
# the versions the lab builds by default (scripts/manifest.py lab-images)
LAB_IMAGES = subprocess.run([sys.executable, str(REPO / "scripts" / "manifest.py"), "lab-images"],
                            capture_output=True, text=True, check=True).stdout.split()
ZONE, WWW_ADDR = "example.test", "192.0.2.1"
STOP_LIMIT_S = 2.0


def ip_of(node: str) -> str:
    return str(REFERENCE.node(node).address)


def docker(*args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess:
    res = subprocess.run(
        ["docker", *args], capture_output=True, text=True, timeout=timeout, check=False
    )
    if check and res.returncode != 0:
        raise AssertionError(f"docker {' '.join(args)} failed:\n{res.stderr}{res.stdout}")
    return res


def remove_stale_objects() -> None:
    """Remove smoke-test containers and networks left by runs whose process is gone."""
    for ls, rm in ((["ps", "-a"], ["rm", "-f"]), (["network", "ls"], ["network", "rm"])):
        out = docker(
            *ls,
            "--filter",
            f"label={LABEL}",
            "--format",
            f'{{{{.ID}}}} {{{{.Label "{LABEL}"}}}}',
            check=False,
        ).stdout
        for line in out.splitlines():
            oid, _, pid = line.partition(" ")
            if not (pid.isdigit() and Path(f"/proc/{pid}").exists()):
                docker(*rm, oid, check=False)


@pytest.fixture(scope="session")
def engine() -> None:
    if shutil.which("docker") is None:
        pytest.skip("docker is not installed (apt-get install docker.io)")
    res = subprocess.run(
        [str(REPO / "scripts" / "start-dockerd.sh")], capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0, f"no Docker engine: {res.stderr}{res.stdout}"
    remove_stale_objects()


@pytest.fixture(scope="session")
def images(engine: None) -> dict[str, str]:
    """Server kind -> image reference, after building what is missing or stale."""
    res = subprocess.run(
        [str(REPO / "scripts" / "build-images.sh")], capture_output=True, text=True, timeout=3600
    )
    assert res.returncode == 0, f"image build failed:\n{res.stdout}{res.stderr}"
    refs = json.loads((REPO / "build" / "images.json").read_text())
    tags = json.loads(
        subprocess.run(
            [str(REPO / "images" / "tags.sh"), "--json"], capture_output=True, text=True, check=True
        ).stdout
    )
    # every version the lab runs unless told otherwise was built, under the tag rule's name
    assert {k: refs.get(k) for k in LAB_IMAGES} == {k: tags[k] for k in LAB_IMAGES}, (
        "build/images.json disagrees with the tag rule in images/tags.sh")
    assert set(refs) <= set(tags)
    return KindMap(refs)  # images["bind"] is the default version's


@dataclass
class Lab:
    """Containers on an internal LAN, each bringing a rendered node folder."""

    images: dict[str, str]
    rendered: render.RenderedLab
    suffix: str = field(default_factory=lambda: str(os.getpid()))
    containers: list[str] = field(default_factory=list)
    networks: list[str] = field(default_factory=list)

    @property
    def lan(self) -> str:
        return f"dnslab-smoke-lan-{self.suffix}"

    @property
    def mgmt(self) -> str:
        return f"dnslab-smoke-mgmt-{self.suffix}"

    def create_networks(self) -> None:
        for name, subnet, ip_range in (
            (self.mgmt, MGMT_SUBNET, None),
            (self.lan, LAN_SUBNET, LAN_RANGE),
        ):
            args = [
                "network",
                "create",
                "--internal",
                "--subnet",
                subnet,
                "--label",
                f"{LABEL}={os.getpid()}",
            ]
            if ip_range:
                args += ["--ip-range", ip_range]
            docker(*args, name)
            self.networks.append(name)

    def start(
        self,
        node: str,
        *,
        connect: bool = True,
        env: dict[str, str] | None = None,
        tag: str = "",
    ) -> str:
        """Start one rendered node; connect it to the LAN (its eth1) after it started."""
        folder = self.rendered.node_dir(node)
        zones = self.rendered.root / "zones"
        server = REFERENCE.node(node).server
        name = f"dnslab-smoke-{node}{tag}-{self.suffix}"
        args = [
            "run",
            "-d",
            "--name",
            name,
            "--hostname",
            node,
            "--label",
            f"{LABEL}={os.getpid()}",
            "--cap-add",
            "NET_ADMIN",
            "--network",
            self.mgmt,
            "-v",
            f"{folder}:{folder}",
            "-v",
            f"{zones}:{zones}",
            "-e",
            f"DNSLAB_NODE_DIR={folder}",
        ]
        for key, value in (env or {}).items():
            args += ["-e", f"{key}={value}"]
        self.containers.append(name)
        docker(*args, self.images[server])
        if connect:
            time.sleep(0.3)  # let the entrypoint start waiting, as under containerlab
            docker("network", "connect", self.lan, name)
        return name

    def exec(self, container: str, *cmd: str, timeout: float = 60) -> subprocess.CompletedProcess:
        return docker("exec", container, *cmd, check=False, timeout=timeout)

    def logs(self, container: str) -> str:
        res = docker("logs", container, check=False)
        return res.stdout + res.stderr

    def cleanup(self) -> None:
        for name in reversed(self.containers):
            docker("rm", "-f", name, check=False)
        for name in reversed(self.networks):
            docker("network", "rm", name, check=False)


@pytest.fixture(scope="module")
def lab(images: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    root = tmp_path_factory.mktemp("smoke-lab").resolve()
    rendered = render.render(REFERENCE, render.reference_data(REFERENCE, root), root)
    lab = Lab(images=images, rendered=rendered)
    try:
        lab.create_networks()
        yield lab
    finally:
        lab.cleanup()


@pytest.fixture(scope="module")
def tools(lab: Lab) -> str:
    name = lab.start("client")
    wait_for(lambda: "no run.sh (client node)" in lab.logs(name), 30, "tools did not start")
    return name


@pytest.fixture(scope="module")
def primary(lab: Lab, tools: str) -> str:
    """The bind9 container: the primary of example.test and of the lab-local root zone."""
    name = lab.start("primary")
    answer(lab, tools, ip_of("primary"), rd=False, container=name)
    return name


def wait_for(pred: Callable[[], bool], timeout: float, message: str) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(message)
        time.sleep(0.3)


def answer(
    lab: Lab,
    tools: str,
    server_ip: str,
    *,
    rd: bool,
    tool: str = "dig",
    timeout: float = 30,
    container: str | None = None,
) -> str:
    """Query www.smoke.test A from the tools container until the expected answer comes."""
    rec = "+rec" if rd else "+norec"
    limits = ["+timeout=1", "+retry=0"] if tool == "kdig" else ["+time=1", "+tries=1"]
    cmd = [tool, f"@{server_ip}", f"www.{ZONE}", "A", rec, *limits]
    deadline = time.monotonic() + timeout
    while True:
        out = lab.exec(tools, *cmd, timeout=10).stdout
        if re.search(rf"www\.{re.escape(ZONE)}\.\s+\d+\s+IN\s+A\s+{re.escape(WWW_ADDR)}", out):
            return out
        if time.monotonic() > deadline:
            logs = lab.logs(container)[-3000:] if container else ""
            raise AssertionError(
                f"no answer from {server_ip} within {timeout} s; last:\n{out}\nlogs:\n{logs}"
            )
        time.sleep(0.5)


def flags(dig_output: str) -> set[str]:
    m = re.search(r";; flags: ([a-z ]+);", dig_output, re.IGNORECASE)
    assert m, dig_output
    return set(m.group(1).split())


def assert_stops_quickly(lab: Lab, container: str) -> None:
    """SIGTERM (docker stop) ends the container within STOP_LIMIT_S, with a clean exit."""
    start = time.monotonic()
    docker("stop", "--time", "10", container)
    elapsed = time.monotonic() - start
    state = json.loads(docker("inspect", "--format", "{{json .State}}", container).stdout)
    assert elapsed < STOP_LIMIT_S, f"{container} took {elapsed:.1f} s to stop on SIGTERM"
    assert state["ExitCode"] in (0, 143), f"{container} exit code {state['ExitCode']}"


def assert_entrypoint_logged(lab: Lab, container: str, node: str) -> None:
    logs = lab.logs(container)
    assert f"added {REFERENCE.node(node).cidr} to eth1" in logs, logs
    assert "dnslab-node: start sh" in logs, logs


@pytest.fixture(scope="module")
def secondaries(lab: Lab, primary: str) -> dict[str, str]:
    """BIND, Knot and NSD secondaries: they transfer example.test from the primary."""
    return {node: lab.start(node) for node in ("sec-bind", "sec-knot", "sec-nsd")}


@pytest.mark.parametrize("node", ["primary", "sec-bind", "sec-knot", "sec-nsd"])
def test_auth_server_answers(lab: Lab, tools: str, primary: str, secondaries: dict[str, str],
                             node: str) -> None:
    name = primary if node == "primary" else secondaries[node]
    out = answer(lab, tools, ip_of(node), rd=False, container=name,
                 tool="kdig" if node == "sec-knot" else "dig")
    assert "aa" in flags(out), out
    assert_entrypoint_logged(lab, name, node)


def test_dnsdist_forwards_to_the_secondaries(lab: Lab, tools: str,
                                             secondaries: dict[str, str]) -> None:
    name = lab.start("frontend")
    out = answer(lab, tools, ip_of("frontend"), rd=False, container=name)
    assert "aa" in flags(out), "the backend's authoritative answer passes through dnsdist"
    assert_entrypoint_logged(lab, name, "frontend")
    assert_stops_quickly(lab, name)


def test_unbound_resolves_through_lab_root(lab: Lab, tools: str,
                                           secondaries: dict[str, str]) -> None:
    name = lab.start("resolver")
    out = answer(lab, tools, ip_of("resolver"), rd=True, container=name)
    f = flags(out)
    assert "ra" in f and "aa" not in f, out
    # resolver-cache counts packets to non-lab addresses with an iptables rule in this node
    rule = lab.exec(name, "iptables", "-w", "-I", "OUTPUT", "1", "!", "-o", "lo", "-j", "ACCEPT")
    assert rule.returncode == 0, rule.stderr
    assert "ACCEPT" in lab.exec(name, "iptables", "-w", "-nvxL", "OUTPUT").stdout
    assert_entrypoint_logged(lab, name, "resolver")
    assert_stops_quickly(lab, name)


def test_secondaries_stop_quickly(lab: Lab, secondaries: dict[str, str]) -> None:
    for name in secondaries.values():
        assert_stops_quickly(lab, name)


def test_dnsperf_runs_against_server(lab: Lab, tools: str, primary: str) -> None:
    lab.exec(tools, "sh", "-c", f"printf 'www.{ZONE} A\\n' > /tmp/q.txt")
    res = lab.exec(
        tools,
        "dnsperf",
        "-s",
        ip_of("primary"),
        "-d",
        "/tmp/q.txt",
        "-l",
        "2",
        "-Q",
        "200",
        "-t",
        "1",
        timeout=30,
    )
    assert res.returncode == 0, res.stderr + res.stdout
    completed = int(re.search(r"Queries completed:\s+(\d+)", res.stdout).group(1))
    assert completed >= 300, res.stdout  # 200 qps for 2 s, allowing for a slow start


def test_primary_and_tools_stop_quickly(lab: Lab, tools: str, primary: str) -> None:
    assert_stops_quickly(lab, primary)
    assert_stops_quickly(lab, tools)


def test_entrypoint_gives_up_without_interface(lab: Lab) -> None:
    name = lab.start("sec-nsd", connect=False, env={"DNSLAB_IFACE_WAIT": "1"}, tag="-orphan")
    wait_for(
        lambda: docker("inspect", "--format", "{{.State.Running}}", name).stdout.strip() == "false",
        15,
        "the entrypoint kept waiting for eth1",
    )
    code = docker("inspect", "--format", "{{.State.ExitCode}}", name).stdout.strip()
    assert code != "0"
    assert "interface eth1 did not appear within 1 s" in lab.logs(name)


@pytest.mark.parametrize("server", LAB_IMAGES)
def test_image_runs_standalone_and_records_versions(images: dict[str, str], server: str) -> None:
    """Without DNSLAB_NODE_DIR each of the lab's images (one per version: bind@9.16,
    bind@9.18, bind@9.20, ...) runs the given command (the version command of the kind's
    manifest); labels name the version."""
    ref = images[server]
    pinned = docker(
        "inspect", "--format", '{{index .Config.Labels "org.dnslab.package.version"}}', ref
    ).stdout.strip()
    upstream = pinned.split(":", 1)[-1].split("-")[0]  # 1:9.18.49-1~deb12u3 -> 9.18.49
    assert ref.split(":")[1].startswith(upstream)
    res = docker("run", "--rm", "--network", "none", ref,
                 *manifest.manifest(server.split("@")[0]).version_command, check=False)
    out = res.stdout + res.stderr
    assert upstream in out, out
