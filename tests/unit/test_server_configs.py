"""Benchmark-grade server configs, for every server kind its manifest lists: the rendered
configuration passes the kind's own checker (the manifest's `config_check`) in every role the
kind takes and in every lab of topologies/, with the options experiments pass (the encrypted
listeners its manifest lists included, with the certificate the lab makes); one worker per
core the node is given (its cpu-set, or every CPU), by hand as by experiment; no rate
limiting. Parametrized over `servers.kinds()`: a new kind gets these tests by adding its
manifest, driver and templates."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from dnslab import cpus, render, servers, topology
from dnslab.errors import LabError
from dnslab.servers import driver, merge_options
from dnslab.servers.base import TLS_CERT, TLS_KEY, TRANSPORT_PORTS
from dnslab.servers.manifest import (
    ENCRYPTED_TRANSPORTS,
    encrypted_transports_of,
    kinds_for_role,
    kinds_serving,
)
from tests.conftest import need_binary

KINDS = servers.kinds()
LABS = topology.known_labs()


def run_checker(kind: str, node_dir: Path) -> None:
    argv = driver(kind).config_check_argv(node_dir)
    assert argv is not None, f"dnslab/servers/{kind}.yaml has no config_check"
    need_binary(argv[0])
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, f"{' '.join(argv)}:\n{proc.stdout}{proc.stderr}"


def experiment_options(kind: str, role: str, version: str = "") -> dict[str, Any]:
    """Every option translation an experiment may ask of this kind (of `version`: "" its
    default) in this role, at once."""
    drv = driver(kind)
    encrypted = encrypted_transports_of(f"{kind}@{version}" if version else kind)
    options: dict[str, Any] = {}
    for extra in (drv.payload_options(1232), drv.client_room_options(50),
                  drv.transfer_out_options(10), drv.worker_options(2),
                  drv.transport_options(["udp", "tcp", *encrypted])):
        options = merge_options(options, extra)
    try:  # F4's broken tier serves several addresses
        options = merge_options(options, drv.extra_address_options(["198.18.0.250"]))
    except LabError:
        pass  # a kind that serves only its own address
    if role == "resolver":
        options = merge_options(options, drv.resolver_options(2, {}))
    if role == "frontend":
        options = merge_options(options, {**drv.listener_options([0, 1]), "packet_cache": 1000})
    return options


def write_lab(folder: Path, kind: str, role: str, cpu_set: str = "",
              version: str = "") -> topology.Topology:
    """A lab of its own for one node of `kind` in `role` (`under-test`, of `version`: ""
    the default): a primary to feed, delegate to or stand behind it (the node itself when it
    is the primary), and a client."""
    name = f"one-{kind}-{role}"
    nodes: dict[str, Any] = {}
    if role != "primary":
        feeder = kind if kind in kinds_for_role("primary") else kinds_for_role("primary")[0]
        nodes["pri"] = {"kind": "linux", "labels": {"dnslab.role": "primary",
                                                    "dnslab.server": feeder}}
    nodes["under-test"] = {"kind": "linux", "labels": {"dnslab.role": role,
                                                       "dnslab.server": kind}}
    if cpu_set:
        nodes["under-test"]["cpu-set"] = cpu_set
    if version:
        nodes["under-test"]["labels"]["dnslab.version"] = version
    if role != "client":
        nodes["client"] = {"kind": "linux", "labels": {"dnslab.role": "client",
                                                       "dnslab.server": "tools"}}
    links = [{"endpoints": [f"{n}:eth1", f"br:{n}"]} for n in nodes]
    nodes["br"] = {"kind": "bridge"}
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.clab.yml"
    path.write_text(yaml.safe_dump({"name": name,
                                    "topology": {"nodes": nodes, "links": links}}))
    return topology.load(path)


def render_one(folder: Path, kind: str, role: str, cpu_set: str = "",
               options: dict[str, Any] | None = None, version: str = "") -> render.RenderedLab:
    topo = write_lab(folder, kind, role, cpu_set, version)
    data = render.reference_data(topo, folder / "lab")
    if options is not None:
        data.node_options = {"under-test": options}
    return render.render(topo, data, folder / "lab")


def node_files(rendered: render.RenderedLab, node: str) -> str:
    folder = rendered.node_dir(node)
    return "\n".join((folder / name).read_text()
                     for name in sorted(driver(rendered.topology.nodes[node].server).templates()))


@pytest.fixture(scope="module")
def every_lab(tmp_path_factory) -> dict[str, render.RenderedLab]:
    """Every lab of topologies/ rendered as `make lab up LAB=<lab>` renders it."""
    rendered = {}
    for lab in LABS:
        out = tmp_path_factory.mktemp(lab)
        topo = topology.load(lab)
        rendered[lab] = render.render(topo, render.reference_data(topo, out), out)
    return rendered


@pytest.mark.parametrize("kind", KINDS)
def test_a_kind_with_a_daemon_names_its_own_config_checker(kind):
    drv = driver(kind)
    assert bool(drv.manifest.config_check) == drv.runs_daemon, (
        f"dnslab/servers/{kind}.yaml: a kind that runs a daemon gives `config_check`, the "
        "argv of its own checker with {node_dir}")
    if drv.runs_daemon:
        assert any("{node_dir}" in arg for arg in drv.manifest.config_check)


@pytest.mark.parametrize("kind", KINDS)
def test_the_rendered_config_passes_the_kinds_own_checker_in_every_role(kind, tmp_path):
    drv = driver(kind)
    if not drv.runs_daemon:
        assert not drv.config_files
        return
    for role in sorted(drv.roles):
        for options in (None, experiment_options(kind, role)):
            label = "by hand" if options is None else "experiment options"
            folder = tmp_path / f"{role}-{'hand' if options is None else 'exp'}"
            rendered = render_one(folder, kind, role, options=options)
            try:
                run_checker(kind, rendered.node_dir("under-test"))
            except AssertionError as exc:
                raise AssertionError(f"{kind} as {role} ({label}): {exc}") from None


@pytest.mark.parametrize("kind", KINDS)
def test_every_lab_renders_configs_the_kinds_checker_accepts(kind, every_lab):
    checked = 0
    for lab, rendered in every_lab.items():
        for node in rendered.topology.nodes.values():
            if node.server == kind and driver(kind).runs_daemon:
                try:
                    run_checker(kind, rendered.node_dir(node.name))
                except AssertionError as exc:
                    raise AssertionError(f"lab {lab}, node {node.name}: {exc}") from None
                checked += 1
    in_labs = any(n.server == kind for r in every_lab.values() for n in r.topology.nodes.values())
    assert checked > 0 or not in_labs or not driver(kind).runs_daemon


@pytest.mark.parametrize("kind", KINDS)
def test_workers_follow_the_cores_the_node_is_given(kind, tmp_path, monkeypatch):
    """One worker per core of the node's cpu-set, and every CPU of the host without one:
    the rendered config differs between 1 and 4 cores, both pass the checker."""
    drv = driver(kind)
    if not drv.runs_daemon:
        return
    monkeypatch.setattr(cpus, "available", lambda: [0, 1, 2, 3])
    role = sorted(drv.roles)[0]
    one = render_one(tmp_path / "one", kind, role, cpu_set="2")
    four = render_one(tmp_path / "four", kind, role)
    assert render.node_cores(one, one.topology.nodes["under-test"]) == 1
    assert render.node_cores(four, four.topology.nodes["under-test"]) == 4
    assert drv.worker_options(1) != drv.worker_options(4), (
        f"dnslab/servers/{kind}.py: worker_options(count) sets how many workers it serves with")
    assert node_files(one, "under-test") != node_files(four, "under-test")
    for rendered in (one, four):
        run_checker(kind, rendered.node_dir("under-test"))


# what each kind's files say for its worker count (the generic test above cannot name it)
WORKER_LINES = {
    "bind": lambda n: [f"named -g -n {n} "],
    "knot": lambda n: [f"udp-workers: {n}\n", f"tcp-workers: {n}\n"],
    "nsd": lambda n: [f"server-count: {n}\n"],
    "unbound": lambda n: [f"num-threads: {n}\n"],
    "dnsdist": lambda n: [f"setMaxTCPClientThreads({n})"],
    "pdns": lambda n: [f"receiver-threads={n}\n"],
}


@pytest.mark.parametrize("kind", sorted(WORKER_LINES))
@pytest.mark.parametrize("cpu_set, cores", [("1", 1), ("0-2", 3)])
def test_worker_count_is_the_cpu_sets_size(kind, cpu_set, cores, tmp_path, monkeypatch):
    monkeypatch.setattr(cpus, "available", lambda: [0, 1, 2, 3])
    rendered = render_one(tmp_path, kind, sorted(driver(kind).roles)[0], cpu_set=cpu_set)
    text = node_files(rendered, "under-test")
    for line in WORKER_LINES[kind](cores):
        assert text.count(line) == 1, (line, text)


def test_nsd_rate_limiting_is_off_by_hand(every_lab):
    """Debian's NSD limits each /24 to 200 qps: the lab client's load was dropped."""
    text = (every_lab["reference"].node_dir("sec-nsd") / "nsd.conf").read_text()
    assert "rrl-ratelimit: 0\n" in text and "rrl-whitelist-ratelimit: 0\n" in text


def test_unbounds_per_client_wait_limit_is_off_by_hand(every_lab):
    """Unbound 1.17.1+deb12u3 and 1.26 let 1,000 replies wait for recursion per client
    address (wait-limit, CVE-2024-33655): a rate limit on the lab's one-address generator."""
    text = (every_lab["reference"].node_dir("resolver") / "unbound.conf").read_text()
    for line in ("ratelimit: 0\n", "ip-ratelimit: 0\n", "wait-limit: 0\n"):
        assert f"    {line}" in text, line


def test_an_experiments_options_win_over_the_defaults(tmp_path, monkeypatch):
    monkeypatch.setattr(cpus, "available", lambda: [0, 1])
    rendered = render_one(tmp_path / "nsd", "nsd", "primary", options={"server-count": 3})
    assert "server-count: 3\n" in node_files(rendered, "under-test")
    # a tuned `server:` block setting what the defaults set at top level: one line, its value
    knot = render_one(tmp_path / "knot", "knot", "secondary",
                      options={"server": {"tcp-workers": 4}})
    text = node_files(knot, "under-test")
    assert text.count("tcp-workers:") == 1 and "tcp-workers: 4\n" in text
    assert "udp-workers: 2\n" in text
    run_checker("knot", knot.node_dir("under-test"))


def test_query_logging_is_off_where_a_kind_can_log_queries(every_lab):
    reference = every_lab["reference"]
    assert "querylog no;" in (reference.node_dir("primary") / "named.conf").read_text()
    unbound = (reference.node_dir("resolver") / "unbound.conf").read_text()
    assert "log-queries: no" in unbound and "log-replies: no" in unbound
    pdns = (every_lab["xfr"].node_dir("sec-pdns") / "pdns.conf").read_text()
    assert "log-dns-queries=no" in pdns


@pytest.mark.parametrize("kind", KINDS)
def test_encrypted_listeners_are_the_manifests(kind, tmp_path):
    """A kind serves the encrypted transports its manifest lists, on their ports, with a
    certificate the lab made for the node; one it does not list is refused in one line that
    names the kinds that serve it. By hand (no transport asked) no certificate is made."""
    drv = driver(kind)
    if not drv.runs_daemon:
        return
    role = sorted(drv.roles)[0]
    for transport in ENCRYPTED_TRANSPORTS:
        if transport in drv.encrypted_transports:
            continue
        with pytest.raises(LabError) as refused:
            drv.transport_options([transport])
        assert ", ".join(kinds_serving(transport)) in (refused.value.hint or "")
    if not drv.encrypted_transports:
        return
    by_hand = render_one(tmp_path / "hand", kind, role)
    assert not (by_hand.node_dir("under-test") / TLS_CERT).exists()
    rendered = render_one(tmp_path / "tls", kind, role,
                          options=drv.transport_options(list(drv.encrypted_transports)))
    folder = rendered.node_dir("under-test")
    cert, key = folder / TLS_CERT, folder / TLS_KEY
    assert "BEGIN CERTIFICATE" in cert.read_text() and key.stat().st_mode & 0o077 == 0
    text = node_files(rendered, "under-test")
    assert str(cert) in text and str(key) in text
    for transport in drv.encrypted_transports:
        assert str(TRANSPORT_PORTS[transport]) in text, (kind, transport)
    run_checker(kind, folder)


@pytest.mark.parametrize("kind", [k for k in KINDS if driver(k).socket_buffer_options(1)])
def test_a_kinds_own_socket_buffer_option_passes_its_checker(kind, tmp_path):
    """F6's 512 KiB buffers (the seed's netsetup.sh) through each kind's own option."""
    drv = driver(kind)
    role = sorted(drv.roles)[0]
    rendered = render_one(tmp_path / kind, kind, role,
                          options=drv.socket_buffer_options(524288))
    assert "524288" in node_files(rendered, "under-test")
    run_checker(kind, rendered.node_dir("under-test"))


def test_a_secondary_kind_run_as_a_stub_resolver_passes_its_checker(tmp_path):
    """F6's BIND as its seed ran it: recursion through a static-stub root to the primary, no
    zone of its own."""
    drv = driver("bind")
    rendered = render_one(tmp_path / "stub", "bind", "secondary",
                          options=drv.stub_resolver_options(["."]))
    text = node_files(rendered, "under-test")
    assert "recursion yes;" in text and "type static-stub;" in text
    assert "type secondary;" not in text
    run_checker("bind", rendered.node_dir("under-test"))
    with pytest.raises(LabError, match="no stub resolver settings for nsd"):
        driver("nsd").stub_resolver_options(["."])
