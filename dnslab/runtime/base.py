"""What every runtime provides, and the lab state file both runtimes keep.

A runtime turns a rendered lab into running nodes: it creates the network, starts and stops
each node's daemon, gives the network namespace a probe can join, and destroys everything.
The state file (`build/labs/<lab>/state.json`) records what was created, so `lab down`,
`lab status` and `lab exec` work from a fresh process.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from dnslab import paths
from dnslab.hosts import Host, Hosts, Inventory
from dnslab.render import RenderedLab
from dnslab.topology import Topology


@dataclass
class NodeState:
    name: str
    role: str
    server: str
    address: str
    netns: str
    log: str
    pid: int | None = None
    health: str = ""  # the zone whose SOA answer proves the node works
    sysctls: dict[str, str] = field(default_factory=dict)  # read back from the kernel
    sysctls_requested: dict[str, str] = field(default_factory=dict)  # what the lab asked for
    # host-wide keys the node asked for but did not get (ALLOW_HOST_SYSCTLS not set)
    sysctls_refused: dict[str, str] = field(default_factory=dict)
    cpu_set: str = ""  # the CPUs the node runs on ("" = any), containerlab's cpu-set
    image: str = ""  # the node's image reference (what the clab runtime runs)
    # labelled with a version (dnslab.version), so its image is that version's
    from_image: bool = False
    mounts: list[str] = field(default_factory=list)  # host folders seen at their own path
    # netns: the root file system the node's daemon and commands run chrooted in, with
    # `mounts` bound in ("": the host's), the kind it is made for and why (rootfs.py)
    rootfs: str = ""
    rootfs_kind: str = ""
    rootfs_why: str = ""
    # the inventory host it runs on ("": this machine, a lab on one host)
    host: str = ""


@dataclass
class LabState:
    lab: str
    runtime: str
    topology: str
    root: str
    nodes: dict[str, NodeState] = field(default_factory=dict)
    created: str = ""
    owner_pid: int = 0  # the process that brought the lab up (0: a state file older than it)
    # a lab across machines: the inventory it was brought up with (dnslab.hosts), the VXLAN
    # that joins its LAN (vni, port, mtu, per host the underlay address) and what each host
    # said of itself (kernel, cores, versions, clock offset); empty on one machine
    hosts: dict = field(default_factory=dict)
    vxlan: dict = field(default_factory=dict)
    # how its LAN crosses hosts: {kind: vxlan|macvlan, description, mtu, ...}; empty on one
    data_path: dict = field(default_factory=dict)
    host_facts: dict = field(default_factory=dict)
    # the hosts something of the lab was put on: teardown has work there, and only there
    hosts_touched: list[str] = field(default_factory=list)

    @property
    def split(self) -> bool:
        return bool(self.hosts)

    def hosts_handle(self) -> Hosts:
        """The lab's hosts (this machine alone when it is not split), kept with this state
        object so their ssh connections are reused."""
        cached = self.__dict__.get("_hosts")
        if cached is None:
            cached = Hosts(Inventory.from_dict(self.hosts) if self.hosts else None)
            self.__dict__["_hosts"] = cached
        return cached

    def host(self, node: str) -> Host:
        """The host a node runs on."""
        return self.hosts_handle().get(self.nodes[node].host)

    def host_names(self) -> list[str]:
        """The hosts the lab's nodes run on ("" for this machine), in inventory order."""
        used = {node.host for node in self.nodes.values()}
        order = list((self.hosts.get("hosts") or {}).keys())
        return [h for h in order if h in used] + sorted(used - set(order))

    @property
    def file(self) -> Path:
        return state_file(self.lab)

    def save(self) -> None:
        self.file.parent.mkdir(parents=True, exist_ok=True)
        data = asdict(self)
        tmp = self.file.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1))
        tmp.replace(self.file)

    @classmethod
    def load(cls, lab: str) -> LabState | None:
        path = state_file(lab)
        if not path.exists():
            return None
        raw = json.loads(path.read_text())
        nodes = {k: NodeState(**v) for k, v in raw.pop("nodes").items()}
        return cls(nodes=nodes, **raw)


def state_file(lab: str) -> Path:
    return paths.LABS_STATE / lab / "state.json"


def host_sysctl_file(lab: str) -> Path:
    return paths.LABS_STATE / lab / "host-sysctls.saved.json"


def labs_with_state() -> list[str]:
    return sorted(p.parent.name for p in paths.LABS_STATE.glob("*/state.json"))


def hosts_of(lab: str | None) -> list[Host]:
    """This machine, and the other hosts a lab's state names as holding something of it
    (every state's, for None)."""
    from dnslab.hosts import LOCAL_HOST

    seen: dict[str, Host] = {LOCAL_HOST.name: LOCAL_HOST}
    for name in [lab] if lab else labs_with_state():
        state = LabState.load(name)
        if state is None or not state.split:
            continue
        for host in state.hosts_handle().all():
            if host.local or host.name in state.hosts_touched:
                seen.setdefault(LOCAL_HOST.name if host.local else host.name, host)
    return list(seen.values())


class Runtime(ABC):
    """One way of running a lab: containerlab or network namespaces."""

    name: str
    # whether a signal to the local command that runs a tool in a node reaches the tool
    # (`ip netns exec` execs it; `docker exec` does not pass signals on)
    exec_passes_signals = True

    @abstractmethod
    def preflight(self, rendered: RenderedLab) -> None:
        """Raise LabError with the exact fix when this host cannot run the lab."""

    @abstractmethod
    def prepare_nodes(self, topology: Topology, nodes: Iterable[str]) -> None:
        """Make sure these nodes can start (what they run exists); raise LabError if not."""

    @abstractmethod
    def create(self, rendered: RenderedLab, state: LabState, hold: set[str],
               later: set[str] = frozenset()) -> None:
        """Create the network and nodes; start every daemon except those in `hold` (not
        needed yet, maybe never) and `later` (prepared, started by the caller soon)."""

    @abstractmethod
    def start_node(self, state: LabState, node: str) -> None:
        """Start a held node's daemon."""

    @abstractmethod
    def stop_node(self, state: LabState, node: str) -> None:
        """Stop a node's daemon (SIGTERM, then SIGKILL after 2 s)."""

    @abstractmethod
    def node_alive(self, state: LabState, node: str) -> bool:
        """Whether the node's daemon still runs."""

    @abstractmethod
    def exec_argv(self, state: LabState, node: str, argv: list[str]) -> list[str]:
        """The command line that runs `argv` inside the node."""

    def node_argv(self, state: LabState, node: str, argv: list[str]) -> list[str]:
        """The same, as it runs on the node's own host (without the host's transport)."""
        return self.exec_argv(state, node, argv)

    def node_cpu_seconds(self, state: LabState, node: str) -> float | None:
        """CPU seconds used so far by everything in the node, when the runtime can tell
        (a container's cgroup); None when a command's own rusage is the measure (netns)."""
        return None

    def wrap_timeout(self, argv: list[str], timeout: float) -> list[str]:
        """`argv` made to die after `timeout` s inside the node, where killing the local
        process would not reach it (docker exec)."""
        return argv

    @abstractmethod
    def destroy(self, lab: str) -> list[str]:
        """Remove everything of the lab (idempotent); return what was removed."""

    @abstractmethod
    def leftovers(self, lab: str | None) -> list[str]:
        """What of a lab (or of every lab) still exists on this host."""

    @abstractmethod
    def running(self, lab: str) -> list[str]:
        """What of the lab still runs (processes in its namespaces, running containers):
        empty for what an interrupted run left behind (a reboot, a killed dockerd)."""
