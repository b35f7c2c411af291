"""Lab hosts emulated on one machine: what the tests and the overhead benchmark split a lab over.

Each emulated host is a network namespace (`emuhost-<name>`) with what a second machine
would give the controller: a management link to this machine (198.19.<i>.2, where its sshd
listens), an underlay shared by all the hosts (198.19.0.<i>/24 on a bridge in a namespace of
its own), an OpenSSH server with keys made here, and a file system view of its own for the
project: sshd runs in a private mount namespace where the project's folders (the checkout,
build/, results/) are a folder of that host's and /run/netns is empty. What the controller
does not copy to a host, that host does not have; the namespaces a host creates are its own.
So the real ssh transport, the real VXLAN and the real split are exercised; only the kernel,
the CPUs and the installed packages are shared. All addresses are in the benchmarking range
198.18.0.0/15 and live in namespaces made here.

    python -m dnslab.emulate up DIR [--hosts a,b]     writes DIR/hosts.yml, prints its path
    python -m dnslab.emulate down DIR                  removes everything `up` made
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import yaml

from dnslab import paths
from dnslab.cpus import available, format_set
from dnslab.errors import LabError
from dnslab.nsenter import ip, list_namespaces, namespace_pids
from dnslab.processes import terminate
from dnslab.wait import wait_until

PREFIX = "emuhost-"
UNDERLAY_NS = PREFIX + "underlay"
UNDERLAY_NET = "198.19.0"
SSHD = "/usr/sbin/sshd"


def host_namespace(name: str) -> str:
    return PREFIX + name


def mgmt_address(index: int) -> str:
    return f"198.19.{index}.2"


def project_folders(private: list[Path] = ()) -> list[Path]:
    """The folders the controller keeps the lab's files in (each host gets its own)."""
    folders: list[Path] = []
    for folder in (paths.REPO.resolve(), paths.BUILD, paths.RESULTS,
                   *(Path(p).resolve() for p in private)):
        if not any(folder.is_relative_to(f) for f in folders):
            folders.append(folder)
    return folders


def _run(argv: list[str]) -> None:
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        raise LabError(f"{' '.join(argv[:3])} failed: {proc.stderr.strip()}",
                       hint="the emulated hosts need root, iproute2 and openssh-server")


def _sshd_config(work: Path, name: str, index: int) -> Path:
    config = work / name / "sshd_config"
    config.write_text("\n".join([
        f"ListenAddress {mgmt_address(index)}",
        f"HostKey {work / name / 'host_key'}",
        f"PidFile {work / name / 'sshd.pid'}",
        f"AuthorizedKeysFile {work / 'authorized_keys'}",
        "PermitRootLogin prohibit-password", "PasswordAuthentication no",
        "KbdInteractiveAuthentication no", "UsePAM no", "StrictModes no",
        # the lab opens a connection per command, many at once while it starts
        "MaxSessions 64", "MaxStartups 64", "UseDNS no", ""]))
    return config


def up(work: Path, names: list[str], private: list[Path] = ()) -> Path:
    """Create the hosts; returns the inventory file that names them. Each host gets its own
    view of the project's folders and of `private` (a test's results folder); the machine's
    CPUs are dealt out among the hosts (`cpus:` in the inventory), as separate machines have
    their own."""
    if shutil.which(SSHD) is None and not Path(SSHD).exists():
        raise LabError("openssh-server is not installed (emulated hosts run sshd)",
                       hint="apt-get install -y openssh-server (make test-setup installs it)")
    refuse_if_up()
    work = work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    (work / "state.json").write_text(json.dumps({"hosts": names}))
    key = work / "id_ed25519"
    if not key.exists():
        _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "dnslab-emulated",
              "-f", str(key)])
    shutil.copy(key.with_suffix(".pub"), work / "authorized_keys")
    Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege separation folder
    ip("netns", "add", UNDERLAY_NS)
    ip("-n", UNDERLAY_NS, "link", "add", "ul", "type", "bridge")
    ip("-n", UNDERLAY_NS, "link", "set", "ul", "up")
    known = []
    inventory: dict[str, dict] = {}
    machine = available()
    dealt = [machine[i::len(names)] or machine for i in range(len(names))]
    for index, name in enumerate(names, start=1):
        ns = host_namespace(name)
        (work / name / "root").mkdir(parents=True, exist_ok=True)
        host_key = work / name / "host_key"
        if not host_key.exists():
            _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(host_key)])
        known.append(f"{mgmt_address(index)} {host_key.with_suffix('.pub').read_text().strip()}")
        ip("netns", "add", ns)
        ip("-n", ns, "link", "set", "lo", "up")
        mgmt = f"emu-{name}"[:15]
        ip("link", "add", mgmt, "type", "veth", "peer", "name", "mgmt0", "netns", ns)
        ip("addr", "add", f"198.19.{index}.1/30", "dev", mgmt)
        ip("link", "set", mgmt, "up")
        ip("-n", ns, "addr", "add", f"{mgmt_address(index)}/30", "dev", "mgmt0")
        ip("-n", ns, "link", "set", "mgmt0", "up")
        port = f"ul-{name}"[:15]
        ip("-n", ns, "link", "add", "ul0", "type", "veth", "peer", "name", port, "netns",
           UNDERLAY_NS)
        ip("-n", UNDERLAY_NS, "link", "set", port, "master", "ul", "up")
        ip("-n", ns, "addr", "add", f"{UNDERLAY_NET}.{index}/24", "dev", "ul0")
        ip("-n", ns, "link", "set", "ul0", "up")
        binds = []
        for folder in project_folders(private):
            own = work / name / "root" / folder.as_posix().lstrip("/")
            own.mkdir(parents=True, exist_ok=True)
            folder.mkdir(parents=True, exist_ok=True)
            binds.append(f"mount --bind {own} {folder}")
        # a fresh machine's root has no shell start-up files: this one's may set up a
        # toolchain (pyenv) that costs every ssh command 0.4 s
        quiet = [f"mount --bind /dev/null {rc}" for rc in ("/root/.bashrc", "/root/.profile")
                 if Path(rc).is_file()]
        script = " && ".join(["mount -t tmpfs tmpfs /run/netns", *binds, *quiet,
                              f"exec {SSHD} -D -f {_sshd_config(work, name, index)} "
                              f"-E {work / name / 'sshd.log'}"])
        Path("/run/netns").mkdir(exist_ok=True)
        with open(work / name / "sshd.out", "w") as out:
            subprocess.Popen(["nsenter", f"--net=/run/netns/{ns}", "unshare", "--mount",
                              "--propagation", "private", "sh", "-c", script],
                             stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                             start_new_session=True)
        inventory[name] = {
            "ssh": f"root@{mgmt_address(index)}", "underlay": f"{UNDERLAY_NET}.{index}",
            "cpus": format_set(dealt[index - 1]),
            "identity": str(key),
            "ssh_options": [f"UserKnownHostsFile={work / 'known_hosts'}",
                            "StrictHostKeyChecking=yes"]}
    (work / "known_hosts").write_text("\n".join(known) + "\n")
    for name in names:
        log = work / name / "sshd.log"
        wait_until(lambda log=log: log.exists() and "Server listening" in log.read_text(),
                   10, f"the sshd of emulated host {name}", interval=0.05,
                   hint=f"see {log} and {work / name / 'sshd.out'}")
    hosts_file = work / "hosts.yml"
    hosts_file.write_text("# two lab hosts emulated on one machine (dnslab.emulate)\n"
                          + yaml.safe_dump({"hosts": inventory}, sort_keys=False))
    return hosts_file


def refuse_if_up() -> None:
    """One set of emulated hosts at a time (their addresses are fixed)."""
    leftover = [ns for ns in list_namespaces() if ns.startswith(PREFIX)]
    if leftover:
        raise LabError(f"emulated hosts are up already ({', '.join(leftover)})",
                       hint="python -m dnslab.emulate down <their folder>")


def down(work: Path) -> list[str]:
    """Stop every process in the emulated hosts and remove their namespaces and links."""
    removed = []
    namespaces = [ns for ns in list_namespaces() if ns.startswith(PREFIX)]
    pids = [pid for ns in namespaces for pid in namespace_pids(ns)]
    # and whatever runs in a host's own mount namespace elsewhere (a lab left up on it)
    mounts = {_mount_ns(pid) for pid in pids} - {None, _mount_ns(1)}
    pids += [int(p.name) for p in Path("/proc").iterdir()
             if p.name.isdigit() and int(p.name) not in pids and _mount_ns(int(p.name)) in mounts]
    terminate(pids)
    for ns in namespaces:
        ip("netns", "delete", ns, check=False)
        removed.append(f"netns {ns}")
    for link in Path("/sys/class/net").iterdir():
        if link.name.startswith("emu-"):
            ip("link", "delete", link.name, check=False)
            removed.append(f"link {link.name}")
    return removed


def _mount_ns(pid: int) -> str | None:
    try:
        return str(Path(f"/proc/{pid}/ns/mnt").readlink())
    except OSError:
        return None


@contextmanager
def emulated_hosts(work: Path, names: tuple[str, ...] = ("a", "b"),
                   private: list[Path] = ()) -> Iterator[Path]:
    """Emulated hosts for the block; the inventory file's path is yielded. Hosts someone
    else brought up are refused, never torn down."""
    refuse_if_up()
    try:
        yield up(work, list(names), list(private))
    finally:
        down(work)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dnslab.emulate", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=["up", "down"])
    parser.add_argument("dir", type=Path)
    parser.add_argument("--hosts", default="a,b", help="host names, comma separated")
    args = parser.parse_args(argv)
    try:
        if args.action == "up":
            print(up(args.dir, [h for h in args.hosts.split(",") if h]))
        else:
            print(f"removed {len(down(args.dir))} item(s)")
    except LabError as exc:
        print(exc.one_line(), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
