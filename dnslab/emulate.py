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

With `--docker` each host also gets a Docker engine of its own, as a machine of the clab
runtime has: a dockerd started in the host's network and mount namespaces (its socket, data
and state under DIR/<host>/docker, no default bridge, no iptables; the capability-dropping
runc wrapper when this machine needs it, as scripts/start-dockerd.sh does), named to every
ssh session there by `DOCKER_HOST`, and the images given (default: the lab's images this
machine's engine has) loaded into it with `docker save | docker load`. containerlab run on
the host then creates its bridges, veths and VXLAN devices in that host's namespace. `down`
removes the engine's containers, stops it and deletes its data.

    python -m dnslab.emulate up DIR [--hosts a,b] [--docker [--images IMG,...]]
                                                        writes DIR/hosts.yml, prints its path
    python -m dnslab.emulate down DIR                  removes everything `up` made
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
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
DOCKERD_WAIT_S = 60


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


def docker_dir(work: Path, name: str) -> Path:
    """Where an emulated host's Docker engine keeps its socket, data and state."""
    return work / name / "docker"


def docker_socket(work: Path, name: str) -> Path:
    return docker_dir(work, name) / "docker.sock"


def _sshd_config(work: Path, name: str, index: int, docker: bool = False) -> Path:
    config = work / name / "sshd_config"
    # every command the controller runs there talks to the host's own engine
    engine = [f"SetEnv DOCKER_HOST=unix://{docker_socket(work, name)}"] if docker else []
    config.write_text("\n".join([*engine,
        f"ListenAddress {mgmt_address(index)}",
        f"HostKey {work / name / 'host_key'}",
        f"PidFile {work / name / 'sshd.pid'}",
        f"AuthorizedKeysFile {work / 'authorized_keys'}",
        "PermitRootLogin prohibit-password", "PasswordAuthentication no",
        "KbdInteractiveAuthentication no", "UsePAM no", "StrictModes no",
        # the lab opens a connection per command, many at once while it starts
        "MaxSessions 64", "MaxStartups 64", "UseDNS no", ""]))
    return config


def up(work: Path, names: list[str], private: list[Path] = (), docker: bool = False,
       images: list[str] | dict[str, list[str]] | None = None) -> Path:
    """Create the hosts; returns the inventory file that names them. Each host gets its own
    view of the project's folders and of `private` (a test's results folder); the machine's
    CPUs are dealt out among the hosts (`cpus:` in the inventory), as separate machines have
    their own. With `docker`, each host gets its own Docker engine with `images` loaded
    (a list: into every host; a map: per host; None: every lab image this machine's engine
    has, into every host)."""
    if shutil.which(SSHD) is None and not Path(SSHD).exists():
        raise LabError("openssh-server is not installed (emulated hosts run sshd)",
                       hint="apt-get install -y openssh-server (make test-setup installs it)")
    refuse_if_up()
    per_host: dict[str, list[str]] = {}
    if docker:
        if isinstance(images, dict):
            per_host = {n: _images_to_load(images.get(n, [])) for n in names}
        else:
            loaded = _images_to_load(images)
            per_host = {n: loaded for n in names}
    work = work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    (work / "state.json").write_text(json.dumps({"hosts": names, "docker": docker}))
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
        # a host's engine starts its own containerd, never this machine's (if one runs), and
        # keeps its shims' sockets to itself
        engine = ["mkdir -p /run/containerd", "mount -t tmpfs tmpfs /run/containerd"] \
            if docker else []
        script = " && ".join(["mount -t tmpfs tmpfs /run/netns", *engine, *binds, *quiet,
                              f"exec {SSHD} -D -f {_sshd_config(work, name, index, docker)} "
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
    if docker:
        for name in names:
            _start_dockerd(work, name)
        for name in names:
            _load_images(work, name, per_host[name])
    hosts_file = work / "hosts.yml"
    hosts_file.write_text("# two lab hosts emulated on one machine (dnslab.emulate)\n"
                          + yaml.safe_dump({"hosts": inventory}, sort_keys=False))
    return hosts_file


def _images_to_load(images: list[str] | None) -> list[str]:
    """The images to give each host: those named, else the lab's (dnslab/*) this machine's
    engine has; a LabError before anything is made when one is missing."""
    if shutil.which("dockerd") is None:
        raise LabError("dockerd is not installed (emulated hosts with --docker run one each)",
                       hint="apt-get install -y docker.io (make docker-setup)")
    listed = subprocess.run(["docker", "image", "ls", "--format",
                             "{{.Repository}}:{{.Tag}}"], capture_output=True, text=True)
    if listed.returncode != 0:
        raise LabError("this machine's Docker engine does not answer (the emulated hosts' "
                       "engines get their images from it)", hint="make dockerd")
    have = set(listed.stdout.split())
    wanted = images if images is not None else sorted(
        i for i in have if i.startswith("dnslab/") and not i.startswith("dnslab/base:"))
    missing = [i for i in wanted if i not in have]
    if missing:
        raise LabError(f"image {missing[0]} is not built on this machine",
                       hint="make images")
    return wanted


def _host_sshd_pid(work: Path, name: str) -> int:
    return int((work / name / "sshd.pid").read_text().split()[0])


def _start_dockerd(work: Path, name: str) -> None:
    """The host's own Docker engine: in its network and mount namespaces (so the bind
    mounts of its containers are that host's folders), under DIR/<host>/docker."""
    folder = docker_dir(work, name)
    folder.mkdir(parents=True, exist_ok=True)
    flags = ["--host", f"unix://{docker_socket(work, name)}", "--data-root",
             str(folder / "data"), "--exec-root", str(folder / "exec"), "--pidfile",
             str(folder / "docker.pid"), "--bridge", "none", "--iptables=false"]
    capdrop = paths.REPO / "scripts" / "runc-capdrop"
    dropped = subprocess.run([str(capdrop), "--list"], capture_output=True, text=True)
    if dropped.returncode == 0 and dropped.stdout.strip() not in ("", "(none)"):
        # the host's view of the checkout is its own: the wrapper goes with the engine
        runc = folder / "runc-capdrop"
        shutil.copy(capdrop, runc)
        flags += ["--add-runtime", f"dnslab-runc={runc}", "--default-runtime", "dnslab-runc"]
    wait_until(lambda: (work / name / "sshd.pid").exists(), 10,
               f"the sshd pid file of emulated host {name}", interval=0.05)
    pid = _host_sshd_pid(work, name)
    with open(folder / "dockerd.log", "w") as log:
        subprocess.Popen(["nsenter", f"--target={pid}", "--net", "--mount", "dockerd", *flags],
                         stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                         start_new_session=True)

    def answers() -> bool:
        return subprocess.run(["docker", "-H", f"unix://{docker_socket(work, name)}",
                               "version"], capture_output=True).returncode == 0

    wait_until(answers, DOCKERD_WAIT_S, f"the Docker engine of emulated host {name}",
               interval=0.2, hint=f"see {folder / 'dockerd.log'}")


def _load_images(work: Path, name: str, images: list[str]) -> float:
    """`docker save` here, `docker load` into the host's engine; seconds it took."""
    if not images:
        return 0.0
    started = time.monotonic()
    save = subprocess.Popen(["docker", "save", *images], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    load = subprocess.run(["docker", "-H", f"unix://{docker_socket(work, name)}", "load",
                           "-q"], stdin=save.stdout, capture_output=True, text=True)
    assert save.stdout is not None
    save.stdout.close()
    saved = save.wait()
    if saved != 0 or load.returncode != 0:
        raise LabError(f"loading the images into emulated host {name} failed: "
                       + (load.stderr.strip() or "docker save failed"),
                       hint=f"see {docker_dir(work, name) / 'dockerd.log'}")
    return time.monotonic() - started


def _stop_dockerd(work: Path, name: str) -> list[str]:
    """Remove the host engine's containers (its own: nothing else talks to it), stop it,
    and delete its data."""
    folder = docker_dir(work, name)
    removed: list[str] = []
    socket = docker_socket(work, name)
    if socket.exists():
        engine = ["docker", "-H", f"unix://{socket}"]
        listed = subprocess.run([*engine, "ps", "-aq"], capture_output=True, text=True,
                                timeout=60)
        ids = listed.stdout.split() if listed.returncode == 0 else []
        if ids:
            subprocess.run([*engine, "rm", "-f", *ids], capture_output=True, timeout=120)
            removed += [f"container {i} on host {name}" for i in ids]
    pid_file = folder / "docker.pid"
    try:
        pid = int(pid_file.read_text().strip())
    except (OSError, ValueError):
        pid = 0
    if pid:
        terminate([pid], grace=20)
        removed.append(f"dockerd {pid} on host {name}")
    shutil.rmtree(folder, ignore_errors=True)
    return removed


def refuse_if_up() -> None:
    """One set of emulated hosts at a time (their addresses are fixed)."""
    leftover = [ns for ns in list_namespaces() if ns.startswith(PREFIX)]
    if leftover:
        raise LabError(f"emulated hosts are up already ({', '.join(leftover)})",
                       hint="python -m dnslab.emulate down <their folder>")


def down(work: Path) -> list[str]:
    """Stop every process in the emulated hosts and remove their namespaces and links."""
    removed = []
    try:
        state = json.loads((work / "state.json").read_text())
    except (OSError, ValueError):
        state = {}
    if state.get("docker"):
        for name in state.get("hosts", []):
            removed += _stop_dockerd(work.resolve(), name)
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
                   private: list[Path] = (), docker: bool = False,
                   images: list[str] | dict[str, list[str]] | None = None) -> Iterator[Path]:
    """Emulated hosts for the block; the inventory file's path is yielded. Hosts someone
    else brought up are refused, never torn down."""
    refuse_if_up()
    try:
        yield up(work, list(names), list(private), docker, images)
    finally:
        down(work)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dnslab.emulate", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=["up", "down"])
    parser.add_argument("dir", type=Path)
    parser.add_argument("--hosts", default="a,b", help="host names, comma separated")
    parser.add_argument("--docker", action="store_true",
                        help="a Docker engine per host, for RUNTIME=clab")
    parser.add_argument("--images", default=None,
                        help="images to load into each engine, comma separated "
                             "(default: every dnslab/ image this machine's engine has)")
    args = parser.parse_args(argv)
    try:
        if args.action == "up":
            images = [i for i in args.images.split(",") if i] if args.images else None
            print(up(args.dir, [h for h in args.hosts.split(",") if h], docker=args.docker,
                     images=images))
        else:
            print(f"removed {len(down(args.dir))} item(s)")
    except LabError as exc:
        print(exc.one_line(), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
