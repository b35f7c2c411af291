"""Image nodes on the netns runtime: a daemon the host's packages cannot provide, run from its
image's root file system.

A node labelled `dnslab.image: <image kind>` (images/tags.sh, e.g. `bind916`: BIND 9.16 from
Debian 11) must run the server version its image holds, not the host's. The clab runtime runs
the image anyway; the netns runtime exports the image's file system once (`docker export`,
into `build/rootfs/<image>/`, reused while the image ID is unchanged) and starts the node's
`run.sh` chrooted into it, in the node's network namespace and in a private mount namespace
that bind-mounts exactly what the container would get (the node state's `mounts`, which the
rendered clab file binds), plus /dev and a /proc. No container engine runs the process: the
runtime's own supervision, logs, sysctls and teardown apply to it as to every other node.
Docker is needed only to export the image (once); without it an exported tree is still used.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
from pathlib import Path

from dnslab import paths
from dnslab.errors import LabError

STAMP = ".dnslab-image"


def rootfs_dir(image: str) -> Path:
    return paths.BUILD / "rootfs" / image.replace("/", "_").replace(":", "_")


def _docker(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout,
                          check=False)


def _image_id(image: str) -> str | None:
    """The image's ID, or None when Docker is not usable or does not have it."""
    if shutil.which("docker") is None:
        return None
    try:
        res = _docker("image", "inspect", "--format", "{{.Id}}", image, timeout=30)
    except subprocess.TimeoutExpired:
        return None
    return res.stdout.strip() if res.returncode == 0 else None


def ensure_rootfs(image: str, node: str) -> Path:
    """The exported root file system of `image`, exported now if missing or stale."""
    root = rootfs_dir(image)
    stamp = root / STAMP
    have = json.loads(stamp.read_text()).get("id") if stamp.exists() else None
    image_id = _image_id(image)
    if have and (image_id is None or image_id == have):
        return root
    if image_id is None:
        raise LabError(
            f"node {node!r} runs from image {image}, which Docker does not have "
            "(or no Docker engine answers)",
            hint="build it: sudo make images (starts dockerd if needed), then retry; "
            "or use RUNTIME=clab",
        )
    tmp = root.with_name(root.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    created = _docker("create", image, "true")
    if created.returncode != 0:
        raise LabError(f"cannot create a container from {image}: {created.stderr.strip()}",
                       hint="check `docker image ls`; rebuild with sudo make images")
    cid = created.stdout.strip()
    try:
        export = subprocess.Popen(["docker", "export", cid], stdout=subprocess.PIPE)
        untar = subprocess.run(["tar", "-x", "-C", str(tmp), "--numeric-owner"],
                               stdin=export.stdout, capture_output=True, text=True)
        assert export.stdout is not None
        export.stdout.close()
        if export.wait() != 0 or untar.returncode != 0:
            raise LabError(f"exporting {image} failed: {untar.stderr.strip()[-300:]}",
                           hint=f"free disk space under {paths.BUILD}, then retry")
    finally:
        _docker("rm", "-f", cid)
    (tmp / STAMP).write_text(json.dumps({"image": image, "id": image_id}))
    shutil.rmtree(root, ignore_errors=True)
    tmp.rename(root)
    return root


def chroot_argv(root: Path, binds: list[str], run_sh: Path) -> list[str]:
    """The command that runs `run_sh` inside `root` with `binds` mounted at their own paths.

    Run it inside the node's namespace (`ip netns exec`); `unshare --mount` keeps every mount
    private to the daemon, so they vanish with it and the host's mount table never changes."""
    lines = ["set -e", f"R={shlex.quote(str(root))}",
             'mount --bind /dev "$R/dev"', 'mount -t proc proc "$R/proc"']
    for folder in binds:
        quoted = shlex.quote(folder)
        lines += [f'mkdir -p "$R"{quoted}', f'mount --bind {quoted} "$R"{quoted}']
    lines.append(f'exec chroot "$R" sh {shlex.quote(str(run_sh))}')
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", "\n".join(lines)]
