"""The one owner of a lab's lifecycle: render, create, wait for evidence, use, destroy.

`up()` returns a `Lab` only when every started server answers for its zones (an SOA answer
from inside the lab), or tears everything down and raises a LabError that names the node
and shows its log tail. `down()` removes every namespace, container, process and host
sysctl change of a lab, and works from a fresh process, after a crash or twice in a row.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from dnslab import multihost, paths, probe, render, servers, topology, wan
from dnslab.errors import LabError
from dnslab.hosts import Host, Inventory
from dnslab.node import LabNode
from dnslab.processes import pid_alive
from dnslab.render import LabData, RenderedLab
from dnslab.runtime import get_runtime, runtime_for_state
from dnslab.runtime.base import LabState, NodeState, Runtime, hosts_of, labs_with_state
from dnslab.topology import Node, Topology
from dnslab.wait import WaitTimeout, wait_until

HEALTH_TIMEOUT_S = float(os.environ.get("DNSLAB_HEALTH_TIMEOUT", "30"))
DOWN_ATTEMPTS = 3  # teardowns of a lab before what is still there is said to be left


def log_tail(path: str | Path, lines: int = 12) -> str:
    try:
        text = Path(path).read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return "(no log)"
    return "\n".join("    " + line for line in text[-lines:]) or "    (log is empty)"


@dataclass
class HealthCheck:
    """The zone whose answer to the node's health query (its manifest's `health_query`)
    proves the node works; its driver judges the answer's rcode with the node's options."""

    node: str
    name: str
    rdtype: str
    kind: str
    options: dict = field(default_factory=dict)

    def passed(self, rcode: str) -> bool:
        return servers.driver(self.kind).answer_healthy(rcode, self.options)


def health_check(rendered: RenderedLab, node: Node) -> HealthCheck | None:
    rdtype = servers.driver(node.server).health_query
    zone = _health_zone(rendered, node)
    if rdtype is None or zone is None:
        return None
    return HealthCheck(node.name, zone, rdtype, node.server,
                       rendered.data.node_options.get(node.name, {}))


def _health_zone(rendered: RenderedLab, node: Node) -> str | None:
    data = rendered.data
    if node.role in ("primary", "secondary"):
        names = [z.name for z in rendered.zones_for(node)]
        if not names:
            return None
        return data.health_zone if data.health_zone in names else names[0]
    if node.role in ("frontend", "resolver"):
        return data.health_zone
    return None


@dataclass
class Measured:
    """How a command run in a node ended, and what it cost (`Lab.run_measured`)."""

    returncode: int
    cpu_s: float | None
    wall_s: float


class Lab:
    """A running lab: its rendered files, its state and the runtime that runs it."""

    def __init__(self, rendered: RenderedLab | None, state: LabState, runtime: Runtime):
        self.rendered = rendered
        self.state = state
        self.runtime = runtime
        # node -> WAN emulation applied and read back (dnslab.wan)
        self.wan: dict[str, dict] = {}
        # node -> seconds from its start to its first health answer (lab.up)
        self.healthy_s: dict[str, float] = {}
        # tool -> the version it printed, the node it ran in and what that ran from
        self.generators: dict[str, dict[str, str]] = {}

    @property
    def name(self) -> str:
        return self.state.lab

    def software(self, topo: Topology) -> dict[str, dict[str, str | None]]:
        """What each server node runs: its `kind@version`, its main package's Debian version
        where the lab can read it (a root file system's record, the host's dpkg) and where it
        comes from (an image, a suite's root file system, the host). meta.json keeps it: the
        host's own package versions (`versions`) are not what a versioned node ran."""
        from dnslab.runtime import rootfs
        from dnslab.runtime.netns import installed_versions
        from dnslab.servers.manifest import kind_version

        found: dict[str, dict[str, str | None]] = {}
        for name, info in self.state.nodes.items():
            if name not in topo.nodes or not servers.driver(info.server).runs_daemon:
                continue
            wanted = kind_version(topo.node(name).image_key)
            package = wanted.image.package
            entry: dict[str, str | None] = {"runs": wanted.key, "package": package}
            if self.runtime.name == "clab":
                entry["from"] = f"image {info.image}"
                entry["version"] = wanted.image.version  # the image pins it
            elif info.rootfs:
                stamp = rootfs.read_stamp(Path(info.rootfs))
                entry["from"] = rootfs.describe(Path(info.rootfs)) if stamp else \
                    f"{wanted.image.suite} root file system"
                entry["version"] = (stamp.get("versions") or {}).get(package)
            else:
                entry["from"] = "host"
                entry["version"] = installed_versions(self.state.host(name), [package])[package]
            found[name] = entry
        return found

    def node(self, name: str) -> LabNode:
        """A handle on one node: its server's control commands, health, version and waits
        (`dnslab.node.LabNode`), from its server kind's driver."""
        if name not in self.state.nodes:
            raise LabError(f"lab {self.name!r} has no node {name!r}",
                           hint="known nodes: " + ", ".join(self.state.nodes))
        return LabNode(self, name, servers.driver(self.state.nodes[name].server))

    def node_dir(self, node: str) -> Path:
        return Path(self.state.root) / "nodes" / node

    def netns(self, node: str) -> str:
        return self.state.nodes[node].netns

    def host(self, node: str) -> Host:
        """The machine a node runs on (this one, unless the lab is split across hosts)."""
        return self.state.host(node)

    def ask(self, from_node: str, server: str, name: str, rdtype: str = "SOA",
            timeout: float = 1.0, tcp: bool = False, **options: object) -> probe.Answer | None:
        """A query sent from inside `from_node` to a lab address, on whichever host the node
        runs; None when nothing answered."""
        host = self.host(from_node)
        if host.local:
            return probe.try_query_in(self.netns(from_node), server, name, rdtype, timeout,
                                      tcp=tcp, **options)
        probe.check_lab_address(server)
        found = host.call("query", netns=self.netns(from_node), server=server, name=name,
                          rdtype=rdtype, timeout=timeout, tcp=tcp, options=options)
        return probe.answer_from_dict(found) if found else None

    def ask_many(self, from_node: str, queries: list[probe.Query]) -> list[probe.Answer | None]:
        """Queries sent one after the other from inside `from_node` (`probe.Query` each; None
        where nothing answered): on another host one host command carries them all."""
        host = self.host(from_node)
        if host.local:
            return probe.try_queries_in(self.netns(from_node), queries)
        for one in queries:
            probe.check_lab_address(one.server)
        found = host.call("queries", netns=self.netns(from_node),
                          asked=[dataclasses.asdict(one) for one in queries])
        return [probe.answer_from_dict(a) if a else None for a in found]

    def address(self, node: str) -> str:
        return self.state.nodes[node].address

    def runs_from(self, node: str) -> str:
        """What a node's software comes from: its image (clab), a root file system of its
        suite (netns, rootfs.py) or the host's packages."""
        info = self.state.nodes[node]
        if self.runtime.name == "clab":
            return f"image {info.image}"
        if info.rootfs:
            from dnslab.runtime.rootfs import describe

            return describe(Path(info.rootfs))
        return "host package"

    def note_generator(self, tool: str, node: str, version: str | None) -> None:
        """Keep what a load generator said it is, where it ran (a run records it in meta.json
        `generators`): the version read from where it actually ran, not the host's package."""
        self.generators[tool] = {"version": version or "unknown", "node": node,
                                 "runs_from": self.runs_from(node)}

    def exec_argv(self, node: str, argv: list[str]) -> list[str]:
        if node not in self.state.nodes:
            raise LabError(f"lab {self.name!r} has no node {node!r}",
                           hint="known nodes: " + ", ".join(self.state.nodes))
        return self.runtime.exec_argv(self.state, node, argv)

    def run(self, node: str, argv: list[str], timeout: float | None = None,
            check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run a command inside a node and capture its output."""
        proc = subprocess.run(self.exec_argv(node, argv), capture_output=True, text=True,
                              timeout=timeout)
        if check and proc.returncode != 0:
            raise LabError(f"{' '.join(argv)} in node {node!r} failed ({proc.returncode}): "
                           + (proc.stderr.strip().splitlines() or [""])[-1],
                           hint="see the command's output above")
        return proc

    def popen(self, node: str, argv: list[str], **kwargs) -> subprocess.Popen:
        """Start a command in a node. On another host the local process is ssh, whose stdin
        is kept open (a pipe nobody writes): a host command watching it (`measured`) stops
        what it runs when the controller goes away."""
        if not self.host(node).local:
            kwargs.setdefault("stdin", subprocess.PIPE)
        return subprocess.Popen(self.exec_argv(node, argv), **kwargs)

    def run_measured(self, node: str, argv: list[str], *, timeout: float, stdout: object,
                     stderr: object, stop_gently: bool = False) -> Measured:
        """Run a command in a node to its end (killed after `timeout` s, inside the node) and
        return its exit code, wall time and CPU time: from wait4's rusage on this machine
        (`ip netns exec` execs the tool in place), from the container's cgroup on clab (the
        local child is `docker exec`), from the host's own wait4 on another host (the
        package's `measured` host command, which reports to a file read back after)."""
        host = self.host(node)
        started = time.monotonic()
        if not host.local:
            report = f"/tmp/dnslab-measured-{os.getpid()}-{time.monotonic_ns()}.json"
            node_cpu_before = self.runtime.node_cpu_seconds(self.state, node)
            wrapped = host.python_argv(
                "measured", "--timeout", f"{timeout:g}", "--report", report,
                *(["--term"] if stop_gently else []),
                *self.term_cmdline(argv if stop_gently else None), "--",
                *self.runtime.node_argv(self.state, node, self.runtime.wrap_timeout(argv,
                                                                                    timeout)))
            proc = subprocess.Popen(host.argv(wrapped), stdin=subprocess.PIPE, stdout=stdout,
                                    stderr=stderr)
            try:
                proc.wait(timeout=timeout + 60)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
            found = host.run(["sh", "-c", f"cat {report}; rm -f {report}"], check=False)
            try:
                measured = json.loads(found.stdout)
            except json.JSONDecodeError:
                measured = {"rc": proc.returncode, "cpu_s": None}
            cpu = measured["cpu_s"]
            if node_cpu_before is not None:  # the container's cgroup, not docker exec's
                node_cpu_after = self.runtime.node_cpu_seconds(self.state, node)
                cpu = node_cpu_after - node_cpu_before if node_cpu_after is not None else None
            return Measured(int(measured["rc"]), cpu, time.monotonic() - started)
        node_cpu_before = self.runtime.node_cpu_seconds(self.state, node)
        proc = self.popen(node, self.runtime.wrap_timeout(argv, timeout), stdout=stdout,
                          stderr=stderr, stdin=subprocess.DEVNULL)
        killer = threading.Timer(timeout, proc.kill)
        killer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            killer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        cpu: float | None = usage.ru_utime + usage.ru_stime
        node_cpu_after = self.runtime.node_cpu_seconds(self.state, node)
        if node_cpu_before is not None and node_cpu_after is not None:
            cpu = node_cpu_after - node_cpu_before
        return Measured(proc.returncode, cpu, time.monotonic() - started)

    def term_cmdline(self, argv: list[str] | None) -> list[str]:
        """The `measured` host command's option that stops a tool by its command line, when
        a signal to the local command would not reach it (`docker exec`)."""
        if argv is None or self.runtime.exec_passes_signals:
            return []
        return ["--term-cmdline", json.dumps(argv)]

    def push(self, node: str, files: Iterable[Path]) -> None:
        """Make files written here (a query file, an edited zone) visible to a node on
        another host, at the same path there; nothing to do for a node on this machine."""
        host = self.host(node)
        if not host.local:
            host.push(files)

    def fetch(self, node: str, path: Path) -> None:
        """Bring back a file a tool in the node wrote (same path here); nothing to do for a
        node on this machine."""
        host = self.host(node)
        if not host.local:
            path.write_bytes(host.read_bytes(path))

    def sample(self, node: str) -> dict[str, int]:
        """The monitor's counter columns (`counters.sample_counters`) as the node's
        namespace sees them, read on its host."""
        return self.host(node).call("sample", netns=self.netns(node))

    def tables(self, node: str) -> dict[str, dict[str, int]]:
        """The node's /proc/net/snmp and netstat tables, read in its namespace on its host."""
        return self.host(node).call("tables", netns=self.netns(node))

    def tables_of(self, nodes: Iterable[str]) -> dict[str, dict[str, dict[str, int]]]:
        """`tables` of many nodes, read in one host command per host (node -> tables)."""
        by_host: dict[str, list[str]] = {}
        for node in nodes:
            by_host.setdefault(self.state.nodes[node].host, []).append(node)
        found: dict[str, dict[str, dict[str, int]]] = {}
        for mine in by_host.values():
            read = self.host(mine[0]).call("tables-of", netns=[self.netns(n) for n in mine])
            found.update({n: read[self.netns(n)] for n in mine})
        return found

    def affinity(self, node: str) -> list[int] | None:
        """The CPUs the node's running daemon may use, read from the kernel of its host."""
        pid = self.state.nodes[node].pid
        if not pid:
            return None
        return self.host(node).call("affinity", pids=[pid]).get(str(pid))

    def copy_logs(self, out: Path) -> None:
        """Every node's log into `out` (`<node>.log`), from whichever host it is on."""
        out.mkdir(parents=True, exist_ok=True)
        for name, node in self.state.nodes.items():
            data = self.host(name).read_bytes(Path(node.log))
            if data or Path(node.log).exists():
                (out / f"{name}.log").write_bytes(data)

    def start(self, node: str) -> None:
        self.runtime.start_node(self.state, node)

    def stop(self, node: str) -> None:
        self.runtime.stop_node(self.state, node)

    def alive(self, node: str) -> bool:
        return self.runtime.node_alive(self.state, node)

    def log(self, node: str) -> Path:
        return Path(self.state.nodes[node].log)

    def query(self, from_node: str, to_node: str, name: str, rdtype: str = "SOA",
              tcp: bool = False, timeout: float = 2.0) -> probe.Answer:
        """A query from one node to another; a LabError when nothing answers."""
        answer = self.ask(from_node, self.address(to_node), name, rdtype, timeout, tcp=tcp)
        if answer is None:
            raise LabError(f"{to_node} did not answer {name} {rdtype} from {from_node} within "
                           f"{timeout:g} s", hint=f"its log: {self.log(to_node)}")
        return answer

    def wait_healthy(self, nodes: Iterable[str] | None = None,
                     timeout: float = HEALTH_TIMEOUT_S) -> dict[str, float]:
        """Wait until each node answers its health query; return seconds to healthy per node."""
        assert self.rendered is not None
        topo = self.rendered.topology
        wanted = list(nodes) if nodes is not None else [
            n for n in topo.nodes if self.state.nodes[n].pid is not None or
            self.runtime.name == "clab"]
        checks = {n: health_check(self.rendered, topo.nodes[n]) for n in wanted}
        checks = {n: c for n, c in checks.items() if c is not None}
        start = time.monotonic()
        healthy: dict[str, float] = {}

        def all_healthy() -> bool:
            for name, check in checks.items():
                if name in healthy:
                    continue
                if self.runtime.name == "netns" and not self.alive(name):
                    raise LabError(f"node {name!r} ({topo.nodes[name].server}) exited while "
                                   "starting", hint=f"its log: {self.log(name)}",
                                   detail=log_tail(self.log(name)))
                answer = self.node(name).ask_health(check.name, timeout=0.3)
                if answer and check.passed(answer.rcode):
                    healthy[name] = time.monotonic() - start
            return len(healthy) == len(checks)

        try:
            wait_until(all_healthy, timeout, "every node's health answer", interval=0.05)
        except WaitTimeout:
            late = [n for n in checks if n not in healthy]
            name = late[0]
            raise LabError(
                f"node {name!r} did not answer {checks[name].name} {checks[name].rdtype} "
                f"within {timeout:.0f} s" + (f" (also late: {', '.join(late[1:])})"
                                              if late[1:] else ""),
                hint=f"its log: {self.log(name)}", detail=log_tail(self.log(name))) from None
        return healthy

def _new_state(rendered: RenderedLab, runtime: Runtime) -> LabState:
    topo = rendered.topology
    state = LabState(lab=topo.name, runtime=runtime.name, topology=str(topo.path),
                     root=str(rendered.root), owner_pid=os.getpid(),
                     created=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"))
    logs = rendered.root / "logs"
    if logs.exists():
        shutil.rmtree(logs)
    logs.mkdir(parents=True)
    for node in topo.nodes.values():
        check = health_check(rendered, node)
        state.nodes[node.name] = NodeState(
            name=node.name, role=node.role, server=node.server, address=str(node.address),
            netns="", log=str(render.log_file(rendered.root, node.name)),
            health=check.name if check else "",
            # across hosts a set is checked against its own host's CPUs (multihost)
            cpu_set=render.node_cpu_set(rendered, node),
            image=node.image, from_image=node.versioned,
            mounts=render.node_mounts(rendered, node))
    return state


def up(lab: str | Topology, runtime: str = "auto", data: LabData | None = None,
       hold: Iterable[str] = (), wait: bool = True, quiet: bool = False,
       inventory: Inventory | None = None, generator_host: str = "",
       server_host: str = "") -> Lab:
    """Render and start a lab (a lab name or file, or a topology parsed already, as a run
    passes its own); on any failure or Ctrl-C, tear it down before raising. With an
    `inventory` the lab is split across its hosts (`dnslab.multihost`): the client on
    `generator_host`, the servers on `server_host`, unless a node's `dnslab.host` label says."""
    topo = lab if isinstance(lab, Topology) else topology.load(lab)
    if inventory is not None and runtime == "auto":
        runtime = "netns"
    chosen = get_runtime(runtime, topo, quiet=quiet)
    clear_stale(topo.name, quiet=quiet)
    existing = LabState.load(topo.name)
    if existing is not None or chosen.leftovers(topo.name):
        raise LabError(f"lab {topo.name!r} is already up",
                       hint=f"make lab down LAB={topo.name}, then try again")
    if chosen.name == "netns" and os.geteuid() != 0:
        raise LabError("the netns runtime needs root to create network namespaces",
                       hint="run it with sudo, e.g. sudo make lab up")
    out = render.lab_dir(topo.name)
    out.mkdir(parents=True, exist_ok=True)
    data = data or render.reference_data(topo, out)
    if inventory is not None:
        # a node's workers follow the cores it is given: on a host that lends the lab some
        # CPUs only, those (rendered before the host is asked anything)
        multihost.host_cpu_sets(topo, data, inventory, generator_host, server_host)
    rendered = render.render(topo, data, out)
    state = _new_state(rendered, chosen)
    if inventory is None:
        chosen.preflight(rendered)
        state.save()
    else:
        state.save()  # first, so what a failed preparation created is torn down from it
        try:
            multihost.prepare(rendered, state, inventory, generator_host, server_host)
        except BaseException:
            _destroy(topo.name, chosen)
            raise
    handle = Lab(rendered, state, chosen)
    held = set(hold)
    primaries = [n for n, node in topo.nodes.items() if node.role == "primary" and n not in held]
    # Everything else starts once the primaries answer: a secondary whose first SOA query
    # meets a primary still loading backs off (BIND's retry timer), and a lab up then stalls
    # until NOTIFY rescues it, which it did not always do within the health timeout.
    after_primaries = {n for n in topo.nodes if n not in held and n not in primaries}
    timeout = data.health_timeout_s or HEALTH_TIMEOUT_S
    try:
        chosen.create(rendered, state, held, later=after_primaries)
        if state.vxlan:  # the LAN spans hosts: does a full-size packet cross?
            state.vxlan["mtu_crossed"] = multihost.check_lan_mtu(state)
            state.save()
        if primaries and after_primaries:
            handle.healthy_s.update(handle.wait_healthy(primaries, timeout))
        for name in topo.nodes:
            if name in after_primaries and servers.driver(topo.nodes[name].server).runs_daemon:
                handle.start(name)
        if wait:
            waited = [n for n in topo.nodes if n not in held and n not in handle.healthy_s]
            handle.healthy_s.update(handle.wait_healthy(waited, timeout))
        # after the health checks: a node whose link loses everything still answered them
        unknown = sorted(set(data.wan) - set(state.nodes))
        if unknown:
            raise LabError(f"wan names node {unknown[0]!r}, which lab {topo.name!r} does not "
                           "have", hint="nodes: " + ", ".join(state.nodes))
        for host in {state.host(name).name: state.host(name) for name in data.wan}.values():
            wan.ship_delayer(host)
        for index, (name, spec) in enumerate(sorted(data.wan.items())):
            handle.wan[name] = wan.apply_on(state.host(name), rendered.root, name,
                                            state.nodes[name].netns, wan.parse(name, spec),
                                            seed=index)
    except BaseException:
        _destroy(topo.name, chosen)
        raise
    return handle


def attach(lab: str) -> Lab:
    """A handle on a lab that is up, from its state file."""
    state = LabState.load(lab)
    if state is None:
        raise LabError(f"lab {lab!r} is not up", hint=f"make lab up LAB={lab}")
    rendered = None
    try:
        topo = topology.load(state.topology)
        rendered = RenderedLab(topo, render.LabData(zones=[], health_zone="."), Path(state.root))
    except LabError:
        pass
    return Lab(rendered, state, runtime_for_state(state.runtime))


def _destroy(lab: str, runtime: Runtime) -> list[str]:
    # WAN delayers are host processes in a node's namespace: a container's removal would
    # not stop them
    removed = wan.stop_all(render.lab_dir(lab))
    removed += runtime.destroy(lab)
    state = LabState.load(lab)
    if state is not None:
        # asked while the state still names every host the lab used. Something may appear
        # after a teardown that interrupted a start (a container the engine went on creating
        # once containerlab was stopped): torn down again. What is left then keeps the
        # state, so `lab down` says so and the next one tries there again.
        attempts = 1
        while (left := runtime.leftovers(lab) or lab_processes(lab)) and attempts < DOWN_ATTEMPTS:
            removed += runtime.destroy(lab)
            attempts += 1
        if left:
            return removed
        state.hosts_handle().close()  # the ssh connections of a lab across hosts
        state.file.unlink()
    return removed


def lab_processes(lab: str | None = None) -> list[str]:
    """The processes of a lab (every lab, for None) still running on any of its hosts,
    found by the lab folder their command line names (a daemon's configuration): a daemon
    outlives its namespace's removal until it ends."""
    found = []
    for host in hosts_of(lab):
        where = "" if host.local else f" on host {host.name}"
        try:
            listed = host.call("lab-processes", labs_folder=str(paths.LABS_STATE), lab=lab)
        except LabError:
            continue  # an unreachable host is said by the runtime's leftovers
        found += [f"process {pid} of lab {name}{where}" for pid, name in listed]
    return found


def down(lab: str | None = None) -> list[str]:
    """Tear down one lab, or every lab when `lab` is None; returns what was removed."""
    from dnslab.runtime import all_runtimes

    labs = [lab] if lab else sorted(set(labs_with_state()) | _labs_from_leftovers())
    removed: list[str] = []
    for name in labs:
        state = LabState.load(name)
        runtimes = [runtime_for_state(state.runtime)] if state else all_runtimes()
        for runtime in runtimes:
            removed += _destroy(name, runtime)
    return removed


def _labs_from_leftovers() -> set[str]:
    from dnslab.runtime import all_runtimes

    found: set[str] = {item.split(" of lab ", 1)[1].split(" ", 1)[0]
                       for item in lab_processes(None)}
    known = set(topology.known_labs()) | set(labs_with_state())
    for runtime in all_runtimes():
        for item in runtime.leftovers(None):
            if item.startswith("unreachable host"):
                continue  # it names a host, not a lab
            ident = item.split(" ", 1)[1]
            for name in known:
                if ident.startswith((f"dnslab-{name}-", f"clab-{name}-")):
                    found.add(name)
            if not any(ident.startswith((f"dnslab-{n}-", f"clab-{n}-")) for n in known):
                found.add(ident.removeprefix("dnslab-").rsplit("-", 1)[0])
    return found


def clear_stale(lab: str, quiet: bool = False) -> list[str]:
    """Tear down what an interrupted run left of `lab` (a reboot, a killed process or
    dockerd: namespaces, stopped containers, dangling links, a state folder) when nothing
    runs in it any more and the process that brought it up is gone; a lab that is alive is
    left alone for the caller to refuse. Returns what was removed."""
    from dnslab.runtime import all_runtimes

    state = LabState.load(lab)
    found = leftovers(lab)
    if state is None and not found:
        return []
    if state is not None and state.owner_pid and pid_alive(state.owner_pid):
        return []
    if any(runtime.running(lab) for runtime in all_runtimes()):
        return []
    removed = down(lab)
    if removed and not quiet:
        shown = ", ".join(removed[:3]) + (", ..." if len(removed) > 3 else "")
        print(f"removed what an interrupted run left of lab {lab!r} (nothing ran in it): "
              f"{shown}", file=sys.stderr)
    return removed


def leftovers(lab: str | None = None) -> list[str]:
    """What of a lab (every lab, for None) is still there, on every host it used: its
    namespaces, containers, links, and processes."""
    from dnslab.runtime import all_runtimes

    items = [item for runtime in all_runtimes() for item in runtime.leftovers(lab)]
    return items + lab_processes(lab)


def status(lab: str | None = None) -> list[dict]:
    """One row per node of each lab that is up: address, state, health."""
    rows = []
    for name in [lab] if lab else labs_with_state():
        state = LabState.load(name)
        if state is None:
            continue
        handle = attach(name)
        for node in state.nodes.values():
            alive = handle.alive(node.name) if servers.driver(node.server).runs_daemon else None
            answer = None
            if alive and node.health:
                answer = handle.node(node.name).ask_health(node.health, timeout=0.5)
            rows.append({
                "lab": name, "node": node.name, "role": node.role, "server": node.server,
                "address": node.address, "runtime": state.runtime, "host": node.host,
                "state": "-" if alive is None else ("running" if alive else "stopped"),
                "health": "-" if alive is None else (answer.rcode if answer else "no answer"),
            })
    return rows
