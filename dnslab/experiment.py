"""The experiment runner: read an experiment file, run its procedure cell by cell, keep everything.

An experiment file (`experiments/<finding>/<name>.yaml`, in its finding's package) is short and
declarative: the story in a top comment, the claims and plots its analysis runs, the
topology, the procedure (a function of a module in the same package), the parameters with
their defaults, and a `ci` scale that finishes in under two minutes. Parameters are
overridden as `KEY=VALUE` (`ZONES=10000`, `SECONDARY=knot`, `PROFILE=default,wide-ports`).

Every run gets a folder `results/<exp>/<run-id>/` that is never reused, written only through
the results contract (`dnslab.results`): `meta.json` (what ran, where, with which versions,
sysctls requested and read back per cell and node) and one folder per cell with its raw data.
A run that is interrupted keeps what it measured and is marked `complete: false`; its lab is
torn down either way (unless KEEP=1). The runner does not analyse: `dnslab experiment run`
hands the finished folder to `python -m analysis run`.

`RESUME=results/<exp>/<run-id>` continues an interrupted run in its own folder with its own
parameters: finished cells are kept as they are (a procedure asks `run.finished(cell_id)`
and skips them), an unfinished cell's folder is set aside as `<cell>.attempt-<n>` (never
deleted) and the cell runs again. Procedures announce their cells with `run.plan(...)`, and
each cell prints its place in the run, the time so far and an ETA.
"""

from __future__ import annotations

import datetime as dt
import importlib
import os
import platform
import secrets
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from dnslab import cpus, paths, servers
from dnslab import lab as lab_engine
from dnslab.errors import LabError
from dnslab.experiment_spec import (
    ExperimentSpec,
    check_params,
    load_spec,
    parse_overrides,
    resolve_params,
    resume_params,
    versioned_topology,
)
from dnslab.hosts import Hosts, Inventory, inventory_from_env, placement, reach
from dnslab.monitor import Monitors
from dnslab.multihost import wanted_data_interfaces
from dnslab.render import LabData
from dnslab.results import CELLS, RunWriter, cell_dirname
from dnslab.sysctl import Profile, load_profile
from dnslab.topology import Topology

# host packages whose versions a run records: every server kind's (its driver's), the tools
PACKAGES = [*(d.package for d in servers.drivers() if d.package), "dnsperf", "iproute2"]


def _versions() -> dict[str, str]:
    proc = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${Version}\\n", *PACKAGES],
                          capture_output=True, text=True)
    return dict(line.split(" ", 1) for line in proc.stdout.splitlines() if " " in line)


def _git_revision() -> dict[str, Any]:
    def git(*args: str) -> str:
        try:
            proc = subprocess.run(["git", *args], cwd=paths.REPO, capture_output=True,
                                  text=True)
        except FileNotFoundError:  # no git: a project unpacked from an archive
            return ""
        return proc.stdout.strip() if proc.returncode == 0 else ""

    return {"commit": git("rev-parse", "HEAD") or None,
            "dirty": bool(git("status", "--porcelain", "--untracked-files=no"))}


def new_run_id() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(2)


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")


CellEstimate = Callable[[str], float]


def time_left(planned_cells: int, per_cell_s: float, done: list[str],
              timed: dict[str, float], estimate: CellEstimate | None = None) -> float:
    """Seconds the run still needs: the plan's estimate of the cells not done yet, scaled by
    the pace of the cells timed so far (their real seconds over their estimates). `estimate`
    gives one cell's estimate by its id when cells differ (a generator's short ceiling cell
    before long stairs: the mean of the cells done so far would say a quarter of the truth);
    without it every cell is `per_cell_s` and this is the mean of the timed cells."""
    def guess(cell_id: str) -> float:
        return estimate(cell_id) if estimate is not None else per_cell_s
    left = max(planned_cells * per_cell_s - sum(guess(c) for c in done), 0.0)
    planned_timed = sum(guess(c) for c in timed)
    if timed and planned_timed > 0:
        left *= sum(timed.values()) / planned_timed
    return left


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"


@dataclass
class RunHosts:
    """A run's hosts (`HOSTS=`, `GENERATOR_HOST=`, `SERVER_HOST=`), checked before any work:
    the inventory, the two sides' hosts and the CPUs each offers."""

    inventory: Inventory | None = None
    generator_host: str = ""
    server_host: str = ""
    generator_cpus: list[int] = field(default_factory=list)
    server_cpus: list[int] = field(default_factory=list)

    @property
    def separate(self) -> bool:
        return self.inventory is not None and self.generator_host != self.server_host

    @classmethod
    def from_overrides(cls, overrides: dict[str, str]) -> RunHosts:
        source = overrides.pop("HOSTS", os.environ.get("HOSTS", ""))
        generator = overrides.pop("GENERATOR_HOST", os.environ.get("GENERATOR_HOST", ""))
        server = overrides.pop("SERVER_HOST", os.environ.get("SERVER_HOST", ""))
        inventory = inventory_from_env(source)
        if inventory is None:
            if generator or server:
                raise LabError("GENERATOR_HOST/SERVER_HOST name hosts of an inventory",
                               hint="add HOSTS=hosts.yml (see README, 'Across machines')")
            return cls()
        names = inventory.names
        chosen = cls(inventory, generator or (names[1] if len(names) > 1 else names[0]),
                     server or names[0])
        placement(inventory, {}, chosen.generator_host, chosen.server_host)  # known hosts
        return chosen

    def check(self, spec: ExperimentSpec, topo: Topology, runtime: str) -> None:
        """Refuse what cannot run across hosts yet, and ask each side's host for its CPUs
        (an unreachable host is one line here, before any work)."""
        assert self.inventory is not None
        if not spec.across_hosts:
            raise LabError(f"experiment {spec.name} does not run across hosts yet",
                           hint="run it without HOSTS=; across hosts: "
                                + ", ".join(spec_names_across_hosts()))
        names = sorted({self.generator_host, self.server_host})
        wanted_data_interfaces(self.inventory, names, runtime)  # hosts that mix one with none
        hosts = Hosts(self.inventory)
        inventory = self.inventory

        def cpus_of(name: str) -> list[int]:
            return hosts.get(name).call("affinity-self", allowed=inventory.spec(name).cpus)

        try:
            reach(hosts.get(name) for name in names)  # every host at once, seconds at most
            with ThreadPoolExecutor(max_workers=len(names)) as pool:
                found = dict(zip(names, pool.map(cpus_of, names), strict=True))
        finally:
            hosts.close()
        self.generator_cpus = found[self.generator_host]
        self.server_cpus = found[self.server_host]


def spec_names_across_hosts() -> list[str]:
    from dnslab.experiment_spec import all_specs

    return sorted(s.name for s in all_specs() if s.across_hosts)


@dataclass
class Cell:
    """One cell of an experiment's matrix: its folder, its parameters, what it measured."""

    run: Run
    cell_id: str
    params: dict[str, Any]
    path: Path
    figures: dict[str, Any] = field(default_factory=dict)
    lab: lab_engine.Lab | None = None
    monitors: Monitors | None = None
    status: str = "running"
    # node -> the CPUs it ran on ("any" when not placed), from the lab's state
    placement: dict[str, str] = field(default_factory=dict)

    def up(self, data: LabData, hold: tuple[str, ...] | list[str] = ()) -> lab_engine.Lab:
        # a lab kept from the previous cell (KEEP=1) makes way for this one
        lab_name = self.run.topology.name
        lab_engine.down(lab_name)
        try:
            self.lab = lab_engine.up(self.run.topology, runtime=self.run.runtime,
                                     data=data, hold=hold, quiet=True,
                                     inventory=self.run.inventory,
                                     generator_host=self.run.generator_host,
                                     server_host=self.run.server_host)
        except BaseException:
            # the lab is gone, its logs are not: keep them with the cell
            logs = paths.LABS_STATE / lab_name / "logs"
            if logs.exists():
                shutil.copytree(logs, self.path / "logs", dirs_exist_ok=True)
            raise
        self.run.writer.record("runtime", self.lab.runtime.name)
        if self.lab.state.split:
            self.run.record_hosts(self.cell_id, self.lab.state)
        nodes = self.lab.state.nodes
        self.run.writer.record_sysctls(
            self.cell_id,
            read_back={name: node.sysctls for name, node in nodes.items()},
            requested={name: node.sysctls_requested for name, node in nodes.items()},
            refused={name: node.sysctls_refused for name, node in nodes.items()
                     if node.sysctls_refused})
        self.placement = {name: node.cpu_set or "any" for name, node in nodes.items()}
        # read back from the running daemons, as the sysctls are: the CPUs each may use
        self.run.writer.record_placement(self.cell_id, self.placement, _affinities(self.lab))
        if self.lab.wan:
            self.run.writer.record_cell(self.cell_id, "wan", self.lab.wan)
        # what each server node ran (kind@version, package version, image or root)
        self.run.writer.merge("node_versions", self.lab.software(self.run.topology))
        return self.lab

    def monitor(self, nodes: list[str]) -> Monitors:
        """1 Hz counters of these nodes, and every core's busy share: `monitor/cores.csv` on
        one machine; across hosts `monitor/cores-<host>.csv` for each host of the lab
        (`cores_csv(node)` names the one of a node's host)."""
        assert self.lab is not None
        state = self.lab.state
        self.monitors = Monitors(self.path / "monitor", cores=not state.split,
                                 lab_netns=lambda: [n.netns for n in state.nodes.values()])
        for name in state.host_names() if state.split else []:
            self.monitors.add_cores(state.hosts_handle().get(name), self.cores_csv(host=name))
        for node in nodes:
            info = state.nodes[node]
            self.monitors.add(node, info.netns, lambda info=info: info.pid,
                              host=state.host(node), daemon=servers.driver(info.server).runs_daemon)
        return self.monitors

    def cores_csv(self, node: str | None = None, host: str | None = None) -> Path:
        """The per-core busy file of the host a node (or a host by name) ran on."""
        folder = self.path / "monitor"
        if self.lab is None or not self.lab.state.split:
            return folder / "cores.csv"
        return folder / f"cores-{host if host is not None else self.lab.state.nodes[node].host}.csv"

    def write_json(self) -> None:
        self.run.writer.write_cell(self.cell_id, self.figures, self.status)


class Run:
    """A run of one experiment: owns the results folder and every cell's lab lifecycle."""

    def __init__(self, spec: ExperimentSpec, params: dict[str, Any], runtime: str,
                 keep: bool, command: list[str], scale: str | None,
                 resume: Path | None = None, topology: Topology | None = None,
                 hosts: RunHosts | None = None):
        self.spec = spec
        # a run across machines: the inventory, and where the generator and servers go
        self.hosts = hosts or RunHosts()
        self.inventory = self.hosts.inventory
        self.generator_host = self.hosts.generator_host
        self.server_host = self.hosts.server_host
        # parsed once: every cell, the lab it brings up and the procedure use this one
        self.topology = topology or lab_engine.topology.load(spec.topology)
        self.params = params
        self.runtime = runtime
        self.keep = keep
        self.cells: list[Cell] = []
        self.planned_cells: int | None = None
        self.per_cell_s = 0.0
        self.cell_estimate: CellEstimate | None = None
        self.cell_seconds: dict[str, float] = {}
        self.started_at = dt.datetime.now(dt.UTC)
        if resume is not None:
            self.writer = RunWriter.reopen(resume, {"at": _now(), "command": command,
                                                    "runtime": runtime, "git": _git_revision(),
                                                    "kernel": platform.release()})
            self.run_id = str(self.writer.meta["run_id"])
            self.path = self.writer.dir
            return
        self.run_id = new_run_id()
        self.writer = RunWriter.create(paths.RESULTS, spec.name, self.run_id, {
            "description": spec.description,
            "findings": [spec.finding.id] if spec.finding else [],
            # a file of the user's own: its copy in the run folder says the run's plots
            **({} if spec.finding else {"own_experiment": spec.path.name}),
            "params": params, "scale": scale or "full",
            "runtime": runtime, "topology": _topology_meta(self.topology),
            "kernel": platform.release(), "machine": {
                "cpus": os.cpu_count(), "memory_kb": _meminfo_total(),
                "python": platform.python_version()},
            "versions": _versions(), "git": _git_revision(), "command": command,
            "started": _now(),
        })
        self.path = self.writer.dir
        if self.topology.derived:  # with a node per version the parameters name
            (self.path / self.topology.path.name).write_text(
                f"# {self.topology.path.name} with the nodes this run's versions added\n"
                + yaml.safe_dump(self.topology.raw, sort_keys=False))
        else:
            shutil.copy(self.topology.path, self.path / self.topology.path.name)
        shutil.copy(spec.path, self.path / spec.path.name)

    def prepare_nodes(self, nodes: list[str]) -> None:
        """Check before the first cell that these nodes can start on the run's runtime (an
        image node on netns needs its image); records the image of every image node."""
        topo = self.topology
        if not (self.inventory is not None and self.runtime == "clab"):
            # across hosts on clab each host's images are checked there, at lab up
            lab_engine.get_runtime(self.runtime, topo, quiet=True).prepare_nodes(topo, nodes)
        images = {n: topo.node(n).image for n in nodes if topo.node(n).versioned}
        if images:
            self.writer.merge("images", images)

    def placement(self, generator_cores: int = 1) -> cpus.Placement:
        """Where the load generator and the server under test run, from the parameters
        `share_cores`, `generator_cpus`, `server_cpus` (disjoint by default); recorded in
        meta.json as `placement`. On separate hosts each side gets every CPU of its own
        host unless its parameter says otherwise (they cannot share a core)."""
        generator_cpus = str(self.params.get("generator_cpus") or "")
        server_cpus = str(self.params.get("server_cpus") or "")
        if self.hosts.separate:
            chosen = cpus.place_apart(generator_cpus, server_cpus, self.hosts.generator_cpus,
                                      self.hosts.server_cpus)
        else:
            chosen = cpus.place(generator_cpus, server_cpus,
                                bool(self.params.get("share_cores", False)), generator_cores,
                                allowed=self.hosts.server_cpus or None)
        placed = chosen.as_dict()
        if self.hosts.inventory is not None:
            placed.update({"generator_host": self.hosts.generator_host,
                           "server_host": self.hosts.server_host})
        self.writer.record_run_placement(placed)
        return chosen

    def record_hosts(self, cell_id: str, state: lab_engine.LabState) -> None:
        """What a lab across hosts ran on: per host what it said of itself (kernel, CPUs,
        versions, routes and MTU to its peers, clock offset), the VXLAN, the data path (vxlan,
        or macvlan on a data interface; its MTU), and each node's host (meta.json `hosts`,
        once; the cell's node placement under its `hosts`)."""
        if "hosts" not in self.writer.meta:
            self.writer.record("hosts", {"inventory": state.hosts, "facts": state.host_facts,
                                         "vxlan": state.vxlan,
                                         "data_path": state.data_path})
        self.writer.record_cell(cell_id, "hosts",
                                {name: node.host for name, node in state.nodes.items()})

    def cell_dir(self, cell_id: str) -> Path:
        return self.path / CELLS / cell_dirname(cell_id)

    def plan(self, cells: int, per_cell_s: float,
             cell_estimate: CellEstimate | None = None) -> None:
        """Announce how many cells the procedure will run and about how long that takes
        (`per_cell_s` on average; `cell_estimate`, by cell id, when cells differ a lot)."""
        self.planned_cells = cells
        self.per_cell_s = per_cell_s
        self.cell_estimate = cell_estimate
        self.writer.record("plan", {"cells": cells, "estimated_s": round(cells * per_cell_s)})
        done = self._done()
        print(f"plan: {cells} cells ({done} finished already), about "
              f"{_duration(max(cells - done, 0) * per_cell_s)} to go (estimate, "
              f"{per_cell_s:.0f} s per cell)", file=sys.stderr)

    def warn(self, message: str) -> None:
        """Tell the user now (stderr) and keep it with the run (meta.json `warnings`, which the
        report shows): something that makes the run's result less than it was meant to be."""
        print(message, file=sys.stderr)
        self.writer.append("warnings", message)

    def _done(self) -> int:
        return len(self._done_ids())

    def _done_ids(self) -> list[str]:
        cells = self.writer.meta["cells"]
        return [cell_id for cell_id, c in cells.items() if c.get("status") == "complete"]

    def finished(self, cell_id: str) -> dict[str, Any] | None:
        """The figures of a cell this run already finished (a resumed run), else None."""
        saved = self.writer.finished_cell(cell_id)
        if saved is None:
            return None
        if not any(c.cell_id == cell_id for c in self.cells):
            self.cells.append(Cell(self, cell_id, saved.get("params", {}),
                                   self.cell_dir(cell_id), figures=saved.get("figures", {}),
                                   status="complete"))
            print(f"resume: cell {cell_id} finished before, kept", file=sys.stderr)
        return dict(saved.get("figures", {}))

    def _progress(self, cell_id: str) -> None:
        done = self._done()
        elapsed = (dt.datetime.now(dt.UTC) - self.started_at).total_seconds()
        text = f"cell {done + 1}" + (f"/{self.planned_cells}" if self.planned_cells else "")
        text += f" {cell_id} (elapsed {_duration(elapsed)}"
        if self.planned_cells and self.cell_seconds:
            left = time_left(self.planned_cells, self.per_cell_s, self._done_ids(),
                             self.cell_seconds, self.cell_estimate)
            text += f", ETA {_duration(left)}"
        print(text + ")", file=sys.stderr)

    def profile(self, name: str) -> Profile:
        profile = load_profile(name)
        if name in (self.writer.meta.get("profiles") or {}):
            return profile  # recorded once (with what the experiment set beside it)
        self.writer.merge("profiles", {name: {
            "description": profile.description, "sysctls": profile.sysctls,
            "host_sysctls": profile.host_sysctls,
            "host_sysctls_applied": bool(profile.host_sysctls) and allow_host_sysctls(),
            "dangerous": profile.dangerous}})
        return profile

    def profile_extended(self, name: str, node: str, sysctls: dict[str, str]) -> None:
        """Record in meta.json that the experiment set `sysctls` on `node` beside profile
        `name` (e.g. F3's calibrated port range under `default`): the profile's entry keeps
        them under `set_by_experiment` (node -> key -> values, in the order set) and its
        description says so, so "kernel defaults" is never all a reader sees."""
        if not sysctls:
            return
        if name not in (self.writer.meta.get("profiles") or {}):
            self.profile(name)
        entry = dict(self.writer.meta["profiles"][name])
        entry.setdefault("profile_description", entry["description"])
        added = entry.setdefault("set_by_experiment", {}).setdefault(node, {})
        for key, value in sysctls.items():
            if str(value) not in added.setdefault(key, []):
                added[key].append(str(value))
        also = "; ".join(f"{key} = {' / '.join(values)} on {where}"
                         for where, keys in entry["set_by_experiment"].items()
                         for key, values in keys.items())
        entry["description"] = (f"{entry['profile_description']}, except what the experiment "
                                f"set: {also}")
        self.writer.merge("profiles", {name: entry})

    @contextmanager
    def cell(self, cell_id: str, params: dict[str, Any]) -> Iterator[Cell]:
        """Run one cell: its lab is torn down on the way out, whatever happened inside."""
        cell = Cell(self, cell_id, params, self.writer.start_cell(cell_id, params, _now()))
        self._progress(cell_id)
        started = dt.datetime.now(dt.UTC)
        self.cells.append(cell)
        try:
            yield cell
            cell.status = "complete"
        except BaseException as exc:
            cell.status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
            cell.figures.setdefault("error", str(exc) or type(exc).__name__)
            raise
        finally:
            if cell.monitors is not None:
                cell.monitors.stop()
            if cell.lab is not None:
                _collect_logs(cell)
                _collect_wan_counters(cell)
                if cell.lab.generators:  # the load generators as they ran (their versions)
                    self.writer.merge("generators", cell.lab.generators)
                # KEEP=1 keeps a completed cell's lab; the next cell (if any) replaces it
                if not (self.keep and cell.status == "complete"):
                    lab_engine.down(cell.lab.name)
            cell.write_json()
            self.writer.end_cell(cell_id, _now(), cell.status)
            if cell.status == "complete":
                self.cell_seconds[cell_id] = (dt.datetime.now(dt.UTC) - started).total_seconds()

    def finish(self, complete: bool) -> None:
        self.writer.finish(_now(), complete)


def _topology_meta(topo: Topology) -> dict[str, Any]:
    return {"name": topo.name, "file": topo.path.name,
            "nodes": {n.name: {"role": n.role, "server": n.server, "address": str(n.address)}
                      for n in topo.nodes.values()}}


def _affinities(lab: lab_engine.Lab) -> dict[str, str]:
    """node -> the CPU affinity of its running daemon (read from its host's kernel)."""
    found = {}
    for name in lab.state.nodes:
        cpus_of = lab.affinity(name)
        if cpus_of:
            found[name] = cpus.format_set(cpus_of)
    return found


def allow_host_sysctls() -> bool:
    return os.environ.get("DNSLAB_ALLOW_HOST_SYSCTLS") == "1"


def _meminfo_total() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def _collect_wan_counters(cell: Cell) -> None:
    """What the WAN delayers did over the cell (packets held, dropped), into meta.json."""
    from dnslab import wan

    assert cell.lab is not None
    counters = {node: wan.read_stats(applied, cell.lab.host(node))
                for node, applied in cell.lab.wan.items()}
    counters = {node: value for node, value in counters.items() if value is not None}
    if counters:
        cell.run.writer.record_cell(cell.cell_id, "wan_counters", counters)


def _collect_logs(cell: Cell) -> None:
    assert cell.lab is not None
    logs = cell.path / "logs"
    cell.lab.copy_logs(logs)


def procedure(spec: ExperimentSpec) -> Callable[[Run], None]:
    func = spec.procedure.rpartition(".")[2]
    try:
        module = importlib.import_module(spec.procedure_module)
        return getattr(module, func)
    except (ImportError, AttributeError):
        raise LabError(f"{spec.path}: procedure {spec.procedure!r} not found",
                       hint=f"a procedure is <module>.<function> of {spec.procedure_folder}/"
                       "<module>.py") from None


def check_procedure_params(spec: ExperimentSpec, params: dict[str, Any]) -> None:
    """What the rules cannot say: the procedure module's own `check_params(params)`, when it
    has one (a LabError), before the run folder exists."""
    check = getattr(importlib.import_module(spec.procedure_module), "check_params", None)
    if callable(check):
        check(params)


def run_experiment(name: str, args: list[str], command: list[str] | None = None) -> Run:
    """Run an experiment end to end (no analysis: see `dnslab.commands.experiment`)."""
    overrides = parse_overrides(args)
    runtime = overrides.pop("RUNTIME", os.environ.get("RUNTIME", "auto")) or "auto"
    keep = overrides.pop("KEEP", os.environ.get("KEEP", "")) in ("1", "yes", "true")
    scale = overrides.pop("SCALE", os.environ.get("SCALE", "")) or None
    if overrides.pop("ALLOW_HOST_SYSCTLS", "") == "1":
        os.environ["DNSLAB_ALLOW_HOST_SYSCTLS"] = "1"
    overrides.pop("LAB", None)
    hosts = RunHosts.from_overrides(overrides)
    resume = overrides.pop("RESUME", "") or None
    spec = load_spec(name)
    if resume:
        resume_path, params, scale = resume_params(spec, Path(resume), overrides, scale)
    else:
        resume_path, params = None, resolve_params(spec, overrides, scale)
    topo = lab_engine.topology.load(spec.topology)
    check_params(spec, params, topo)  # every value, before any work and any run folder
    topo = versioned_topology(spec, params, topo)  # a node per version the values name
    run_fn = procedure(spec)
    check_procedure_params(spec, params)
    if hosts.inventory is not None and runtime == "auto":
        runtime = "netns"  # the one runtime a lab across hosts has for now
    # chosen (auto: said why) and checked once for the whole run, before the first cell
    runtime = lab_engine.get_runtime(runtime, topo).name
    lab_name = topo.name
    lab_engine.clear_stale(lab_name)
    found = lab_engine.leftovers(lab_name)
    if lab_engine.LabState.load(lab_name):
        found.append(f"state folder {paths.LABS_STATE / lab_name}")
    if found:
        # Namespace names are host-wide: a lab of the same name from another checkout or a run
        # still going counts too, and the message says what was seen so that can be told apart.
        raise LabError(f"lab {lab_name!r} is already up; the experiment needs it to itself "
                       f"(found: {', '.join(found[:3])}{', ...' if len(found) > 3 else ''})",
                       hint=f"make lab down LAB={lab_name}, once no other run uses it")
    if hosts.inventory is not None:
        hosts.check(spec, topo, runtime)
    run = Run(spec, params, runtime, keep, command or sys.argv, scale, resume=resume_path,
              topology=topo, hosts=hosts)
    print(f"run {spec.name}/{run.run_id}: results in {run.path}"
          + (" (resumed)" if resume_path else ""), file=sys.stderr)
    complete = False
    try:
        run_fn(run)
        complete = True
    except LabError:
        if resume_path is None and not run.writer.meta.get("cells"):
            # refused before its first cell (a check only the procedure can make): nothing
            # was measured, so no folder is left to look like a run
            shutil.rmtree(run.path, ignore_errors=True)
            with suppress(OSError):
                run.path.parent.rmdir()  # the experiment's folder, when this was its only run
            print(f"run refused before its first cell: {run.path} removed", file=sys.stderr)
        raise
    finally:
        if run.path.exists():
            run.finish(complete)
    return run
