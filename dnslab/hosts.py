"""The machines a lab runs on, and how the controller reaches each of them.

Without `HOSTS=` a lab runs on this machine alone, as it always has. With `HOSTS=hosts.yml`
the lab is split across the machines the inventory names, and every node is placed on one of
them: by its `dnslab.host` label in the topology, else the load generator (the client) on
`GENERATOR_HOST` and every server on `SERVER_HOST`. The inventory is data:

```yaml
hosts:
  lab:  {ssh: local, underlay: 192.0.2.10}               # this machine
  gen:  {ssh: root@192.0.2.20, underlay: 192.0.2.20}     # reached with OpenSSH
vxlan: {port: 4789, mtu: 1450}   # optional; mtu default: the underlay's MTU - 50
```

A host may also name `data_interface: <NIC>`, a link that carries the lab's traffic alone;
when every host of a split lab names one, the lab LAN is macvlans of those interfaces
instead of the VXLAN (netns runtime; see dnslab.multihost).

Each host is reached through a transport: `local` runs commands here, anything else is an
OpenSSH target (the user's keys and ssh config; one ControlMaster connection per host, so a
command costs a round trip, not a handshake). There is no agent of our own: the controller
copies the lab's files and the `dnslab` package to the host at the same absolute path it
has here (`push`), runs ordinary commands (`ip`, the daemons, the generators) and the
package's one-shot host commands (`dnslab.hostcmd`: start a daemon, query from a node, read
counters, 1 Hz monitors) with the host's own python3, and reads their output back.
"""

from __future__ import annotations

import ipaddress
import json
import os
import shlex
import subprocess
import tempfile
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from dnslab import paths
from dnslab.errors import LabError

LOCAL = "local"
VXLAN_OVERHEAD = 50  # outer Ethernet 14 + IPv4 20 + UDP 8 + VXLAN 8 bytes
DEFAULT_VXLAN_PORT = 4789
DEFAULT_PYTHON = "/usr/bin/python3"
HOST_FIELDS = {"ssh", "underlay", "data_interface", "python", "identity", "ssh_options", "cpus"}
# the Debian packages a host needs to run the package's host commands (dnslab.hostcmd)
HOST_PYTHON_PACKAGES = ["python3-yaml", "python3-dnspython", "python3-psutil"]
# ssh's ConnectTimeout: a host whose SYNs are dropped is said in seconds, not after the
# kernel's two minutes of retries (an inventory's own ssh_options may set another)
CONNECT_TIMEOUT_S = 5


@dataclass(frozen=True)
class HostSpec:
    """One machine of the inventory."""

    name: str
    ssh: str  # "local", or an OpenSSH target: [user@]host (a Host of ~/.ssh/config works)
    underlay: str | None = None  # the address its VXLAN endpoint uses
    data_interface: str | None = None  # a NIC for the lab LAN instead of VXLAN (macvlan)
    python: str = DEFAULT_PYTHON
    identity: str | None = None  # ssh -i
    ssh_options: tuple[str, ...] = ()  # ssh -o, e.g. "UserKnownHostsFile=..."
    cpus: str | None = None  # the CPUs the lab may use there ("0-3"); default: every one

    @property
    def local(self) -> bool:
        return self.ssh == LOCAL


@dataclass
class Inventory:
    """The hosts of `hosts.yml`, in file order, and the VXLAN settings they share."""

    hosts: dict[str, HostSpec]
    path: Path | None = None
    vxlan_port: int = DEFAULT_VXLAN_PORT
    mtu: int | None = None  # the lab LAN's MTU across hosts (None: measured underlay - 50)

    @property
    def names(self) -> list[str]:
        return list(self.hosts)

    def spec(self, name: str) -> HostSpec:
        if name not in self.hosts:
            raise LabError(f"host {name!r} is not in the inventory"
                           + (f" {self.path}" if self.path else ""),
                           hint="hosts: " + ", ".join(self.hosts))
        return self.hosts[name]

    def as_dict(self) -> dict[str, Any]:
        return {"path": str(self.path) if self.path else None,
                "vxlan": {"port": self.vxlan_port, "mtu": self.mtu},
                "hosts": {n: {k: v for k, v in asdict(s).items() if k != "name"}
                          for n, s in self.hosts.items()}}

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Inventory:
        hosts = {n: HostSpec(name=n, **{**h, "ssh_options": tuple(h.get("ssh_options") or ())})
                 for n, h in raw["hosts"].items()}
        vxlan = raw.get("vxlan") or {}
        return cls(hosts=hosts, path=Path(raw["path"]) if raw.get("path") else None,
                   vxlan_port=int(vxlan.get("port") or DEFAULT_VXLAN_PORT),
                   mtu=vxlan.get("mtu"))


def load_inventory(source: str | Path) -> Inventory:
    """Read and check `hosts.yml`; every mistake is one line that says how to fix it."""
    path = Path(source).expanduser()
    if not path.is_file():
        raise LabError(f"HOSTS={source}: no such inventory file",
                       hint="write a hosts.yml (see README, 'Across machines') and pass its path")
    try:
        raw = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise LabError(f"{path}: not YAML ({str(exc).splitlines()[0]})",
                       hint="hosts: {name: {ssh: ..., underlay: ...}}") from None
    hosts_raw = raw.get("hosts") if isinstance(raw, dict) else None
    if not isinstance(hosts_raw, dict) or not hosts_raw:
        raise LabError(f"{path}: no 'hosts:' map", hint="hosts: {name: {ssh: ..., underlay: ...}}")
    hosts: dict[str, HostSpec] = {}
    for name, spec in hosts_raw.items():
        name = str(name)
        if not isinstance(spec, dict):
            raise LabError(f"{path}: host {name!r} is not a map",
                           hint=f"{name}: {{ssh: root@<address>, underlay: <address>}}")
        unknown = set(spec) - HOST_FIELDS
        if unknown:
            raise LabError(f"{path}: host {name!r} has unknown field {sorted(unknown)[0]!r}",
                           hint="fields: " + ", ".join(sorted(HOST_FIELDS)))
        if not spec.get("ssh"):
            raise LabError(f"{path}: host {name!r} has no 'ssh' target",
                           hint="ssh: local (this machine) or ssh: root@<address>")
        underlay = spec.get("underlay")
        if underlay is not None:
            try:
                ipaddress.IPv4Address(str(underlay))
            except ValueError:
                raise LabError(f"{path}: host {name!r}: underlay {underlay!r} is not an IPv4 "
                               "address", hint="the address the other hosts reach it at, "
                               "e.g. underlay: 192.0.2.20") from None
        cpu_list = spec.get("cpus")
        if cpu_list is not None:
            from dnslab.cpus import parse

            parse(str(cpu_list))  # its syntax; the host's own CPUs are checked at lab up
        options = spec.get("ssh_options") or []
        if isinstance(options, str):
            options = [options]
        hosts[name] = HostSpec(name=name, ssh=str(spec["ssh"]),
                               underlay=str(underlay) if underlay else None,
                               data_interface=spec.get("data_interface"),
                               python=str(spec.get("python") or DEFAULT_PYTHON),
                               identity=spec.get("identity"),
                               ssh_options=tuple(str(o) for o in options),
                               cpus=str(cpu_list) if cpu_list is not None else None)
    if len(hosts) > 1:
        lacking = [n for n, s in hosts.items() if not s.underlay and not s.data_interface]
        if lacking:
            raise LabError(f"{path}: host {lacking[0]!r} has no underlay address",
                           hint="the lab LAN spans hosts over VXLAN: give each host "
                                "'underlay: <address the others reach it at>'")
    vxlan = raw.get("vxlan") or {}
    try:
        port = int(vxlan.get("port") or DEFAULT_VXLAN_PORT)
        mtu = int(vxlan["mtu"]) if vxlan.get("mtu") else None
    except (TypeError, ValueError):
        raise LabError(f"{path}: vxlan port and mtu are numbers",
                       hint="vxlan: {port: 4789, mtu: 1450}") from None
    if mtu is not None and not 1280 <= mtu <= 9000:
        raise LabError(f"{path}: vxlan mtu {mtu} is outside 1280-9000",
                       hint="the underlay's MTU minus 50, e.g. 1450 on a 1500-byte network")
    return Inventory(hosts=hosts, path=path.resolve(), vxlan_port=port, mtu=mtu)


def placement(inventory: Inventory, nodes: dict[str, tuple[str, str | None]],
              generator_host: str = "", server_host: str = "") -> dict[str, str]:
    """node -> host: the node's `dnslab.host` label, else the client on the generator's host
    (default: the inventory's second host) and every other node on the server's host
    (default: the first). `nodes` maps a node to (its role, its dnslab.host label)."""
    names = inventory.names
    server = server_host or names[0]
    generator = generator_host or (names[1] if len(names) > 1 else names[0])
    for given, what in ((server, "SERVER_HOST"), (generator, "GENERATOR_HOST")):
        if given not in names:
            _unknown_host(inventory, given, what)
    placed = {}
    for node, (role, label) in nodes.items():
        if label:
            if label not in names:
                _unknown_host(inventory, label, f"node {node!r}'s dnslab.host label")
            placed[node] = label
        else:
            placed[node] = generator if role == "client" else server
    return placed


def _unknown_host(inventory: Inventory, name: str, what: str) -> None:
    raise LabError(f"{what} names host {name!r}, which the inventory does not have",
                   hint="hosts in " + str(inventory.path) + ": " + ", ".join(inventory.names))


# --- transports ------------------------------------------------------------------------------

def _control_path() -> str:
    # short: a unix socket path has ~100 bytes; %C is a hash of the connection's parameters
    return str(Path(tempfile.gettempdir()) / "dnslab-ssh-%C")


class Host:
    """One machine of a lab, reached locally or over OpenSSH."""

    def __init__(self, spec: HostSpec):
        self.spec = spec
        self._package_pushed = False

    def __repr__(self) -> str:
        return f"Host({self.name!r}, {self.spec.ssh!r})"

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def local(self) -> bool:
        return self.spec.local

    # --- commands --------------------------------------------------------------------------

    def ssh_base(self, tty: bool = False) -> list[str]:
        spec = self.spec
        argv = ["ssh", "-o", "BatchMode=yes", "-o", "ControlMaster=auto",
                "-o", f"ControlPath={_control_path()}", "-o", "ControlPersist=120",
                "-o", "ServerAliveInterval=10", "-o", "LogLevel=ERROR"]
        if tty:
            argv.append("-t")
        if spec.identity:
            argv += ["-i", str(Path(spec.identity).expanduser())]
        for option in spec.ssh_options:
            argv += ["-o", option]
        # after the inventory's options: ssh takes the first value given
        argv += ["-o", f"ConnectTimeout={CONNECT_TIMEOUT_S}"]
        return [*argv, spec.ssh]

    def argv(self, argv: list[str], tty: bool = False) -> list[str]:
        """The command line that runs `argv` on this host (as it is, when local)."""
        if self.local:
            return list(argv)
        return [*self.ssh_base(tty), "--", shlex.join(argv)]

    def run(self, argv: list[str], *, input: str | bytes | None = None,
            timeout: float | None = None, check: bool = True,
            text: bool = True) -> subprocess.CompletedProcess:
        proc = subprocess.run(self.argv(argv), input=input, capture_output=True, text=text,
                              timeout=timeout)
        if check and proc.returncode != 0:
            err = proc.stderr if isinstance(proc.stderr, str) else proc.stderr.decode()
            raise self._failed(argv, proc.returncode, err)
        return proc

    def ip(self, *args: str, check: bool = True) -> None:
        """`ip ARGS` on this host; a failure raises LabError with ip's own message."""
        proc = self.run(["ip", *args], check=False)
        if check and proc.returncode != 0:
            where = "" if self.local else f" on host {self.name!r}"
            raise LabError(f"ip {' '.join(args)}{where} failed: {proc.stderr.strip()}",
                           hint="is iproute2 installed and are you root?")

    def popen(self, argv: list[str], **kwargs: Any) -> subprocess.Popen:
        return subprocess.Popen(self.argv(argv), **kwargs)

    def _failed(self, argv: list[str], code: int, stderr: str) -> LabError:
        last = (stderr.strip().splitlines() or [f"exit status {code}"])[-1]
        if not self.local and code == 255:
            return LabError(f"host {self.name!r} ({self.spec.ssh}) cannot be reached over ssh: "
                            f"{last}", hint=f"check that `ssh {self.spec.ssh} true` works "
                            "without a password (BatchMode), as root")
        where = "" if self.local else f" on host {self.name!r}"
        return LabError(f"{shlex.join(argv)[:120]}{where} failed ({code}): {last}",
                        hint="see the command's output above" if self.local else
                        f"run it by hand: ssh {self.spec.ssh} {shlex.join(argv)[:80]}")

    # --- the package's host commands -------------------------------------------------------

    def call(self, verb: str, call_timeout: float | None = None, **args: Any) -> Any:
        """Run one of `dnslab.hostcmd`'s verbs on this host and return its result: in this
        process when local, else `python3 -m dnslab.hostcmd VERB` over ssh (arguments and
        result as JSON)."""
        from dnslab import hostcmd

        if self.local:
            return hostcmd.call(verb, args)
        proc = subprocess.run(self.argv(self.python_argv("call", verb)),
                              input=json.dumps(args), capture_output=True, text=True,
                              timeout=call_timeout)
        return hostcmd.decode_reply(proc.returncode, proc.stdout, proc.stderr, self)

    def push_package(self) -> None:
        """The controller's `dnslab` package to the host (once per handle), so the host
        commands it runs are the controller's own."""
        if not self._package_pushed and not self.local:
            self.push([paths.REPO / "dnslab"])
            self._package_pushed = True

    def python_argv(self, *args: str) -> list[str]:
        """`python3 -m dnslab.hostcmd ARGS` as it runs on this host (its own python3, the
        package at the controller's path, copied there first)."""
        self.push_package()
        env = [f"PYTHONPATH={paths.REPO}", f"DNSLAB_BUILD={paths.BUILD}",
               f"DNSLAB_RESULTS={paths.RESULTS}", "PYTHONDONTWRITEBYTECODE=1"]
        return ["env", *env, self.spec.python, "-m", "dnslab.hostcmd", *args]

    # --- files -------------------------------------------------------------------------------

    def push(self, sources: Iterable[Path]) -> None:
        """Copy files and folders to the same absolute path on this host (tar over ssh; a
        no-op when local). What is there already is overwritten, nothing else removed."""
        if self.local:
            return
        wanted = sorted({str(Path(s).resolve()).lstrip("/") for s in sources
                         if Path(s).exists()})
        if not wanted:
            return
        tar = subprocess.Popen(["tar", "-C", "/", "--exclude=__pycache__", "-cf", "-", *wanted],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        remote = subprocess.run(self.argv(["tar", "-C", "/", "-xf", "-"]), stdin=tar.stdout,
                                capture_output=True, text=True)
        assert tar.stdout is not None
        tar.stdout.close()
        tar_err = tar.stderr.read().decode() if tar.stderr else ""
        if remote.returncode != 0:  # first: a host that cannot be reached stops tar too
            tar.wait()
            raise self._failed(["tar", "-xf", "-"], remote.returncode, remote.stderr)
        if tar.wait() != 0:
            raise LabError(f"packing /{wanted[0]} for host {self.name!r} failed: {tar_err}",
                           hint="check the files exist and are readable")

    def pull(self, source: Path, target: Path) -> bool:
        """Copy a file or folder from this host to `target` here; False when it is missing."""
        if self.local:
            raise LabError("pull from the local host", hint="read the file directly")
        proc = subprocess.run(self.argv(["tar", "-C", str(source.parent), "-cf", "-",
                                         source.name]), capture_output=True)
        if proc.returncode != 0:
            return False
        target.mkdir(parents=True, exist_ok=True)
        unpack = subprocess.run(["tar", "-C", str(target), "-xf", "-"], input=proc.stdout,
                                capture_output=True)
        return unpack.returncode == 0

    def read_bytes(self, path: Path, offset: int = 0) -> bytes:
        """A file's bytes from `offset` on (b"" when it does not exist)."""
        if self.local:
            try:
                with open(path, "rb") as handle:
                    handle.seek(offset)
                    return handle.read()
            except FileNotFoundError:
                return b""
        proc = subprocess.run(self.argv(["tail", "-c", f"+{offset + 1}", str(path)]),
                              capture_output=True)
        return proc.stdout if proc.returncode == 0 else b""

    def close(self) -> None:
        """End the ssh ControlMaster connection (nothing of it is left running)."""
        if self.local:
            return
        subprocess.run([*self.ssh_base()[:-1], "-O", "exit", self.spec.ssh],
                       capture_output=True, timeout=10)


LOCAL_HOST = Host(HostSpec(name=LOCAL, ssh=LOCAL))


@dataclass
class Hosts:
    """The hosts one lab uses (from its state or an inventory), by name; `""` and "local"
    are this machine."""

    inventory: Inventory | None = None
    _hosts: dict[str, Host] = field(default_factory=dict)

    def get(self, name: str | None) -> Host:
        if not name or name == LOCAL or self.inventory is None:
            return LOCAL_HOST
        if name not in self._hosts:
            self._hosts[name] = Host(self.inventory.spec(name))
        return self._hosts[name]

    def all(self) -> list[Host]:
        if self.inventory is None:
            return [LOCAL_HOST]
        return [self.get(n) for n in self.inventory.names]

    def close(self) -> None:
        """End every host's ssh connection (those opened by another process too)."""
        for host in self.all():
            host.close()


def reach(hosts: Iterable[Host]) -> None:
    """Ask every host of another machine at once whether it answers over ssh (`true`); a
    host that does not, within ssh's connect timeout, is one LabError line naming it (every
    one that does not, when several), before anything is done on any of them."""
    remote = [h for h in hosts if not h.local]
    if not remote:
        return

    def silent(host: Host) -> str | None:
        try:
            host.run(["true"], timeout=2 * CONNECT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return f"host {host.name!r} ({host.spec.ssh}) did not answer within " \
                   f"{2 * CONNECT_TIMEOUT_S} s"
        except LabError as exc:
            return exc.message
        return None

    with ThreadPoolExecutor(max_workers=len(remote)) as pool:
        failed = [said for said in pool.map(silent, remote) if said]
    if failed:
        first = next(h for h in remote if f"host {h.name!r}" in failed[0])
        raise LabError("; ".join(failed),
                       hint=f"check that `ssh {first.spec.ssh} true` works from here without "
                            f"a password (BatchMode), as root, within {CONNECT_TIMEOUT_S} s")


def inventory_from_env(value: str | None = None) -> Inventory | None:
    """The inventory `HOSTS=` names (an argument, else the environment), or None."""
    source = value if value is not None else os.environ.get("HOSTS", "")
    return load_inventory(source) if source else None
