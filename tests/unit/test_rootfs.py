"""Image nodes on the netns runtime (dnslab/runtime/rootfs.py): which nodes run from their
image's file system, and that the chroot gets exactly the folders the container would."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from dnslab import lab, paths, render, topology
from dnslab.errors import LabError
from dnslab.render import LabData, ZoneRef
from dnslab.runtime import rootfs
from dnslab.runtime.base import LabState
from dnslab.runtime.netns import NetnsRuntime


@pytest.fixture(scope="module")
def mobile(tmp_path_factory) -> render.RenderedLab:
    out = tmp_path_factory.mktemp("mobile")
    zone = out / "zones" / "epc.test.zone"
    zone.parent.mkdir()
    zone.write_text("@ 300 IN SOA ns. host. 1 60 60 600 60\n@ 300 IN NS ns.\n"
                    "ns 300 IN A 192.0.2.1\n")
    topo = topology.load("mobile")
    data = LabData(zones=[ZoneRef("epc.test.", zone)], health_zone="epc.test.",
                   extra_binds=[paths.BIN])
    return render.render(topo, data, out)


@pytest.fixture(scope="module")
def mobile_state(mobile) -> LabState:
    return lab._new_state(mobile, NetnsRuntime())


def test_only_the_labelled_node_runs_from_its_image(mobile, mobile_state):
    image_nodes = [n for n, info in mobile_state.nodes.items() if info.from_image]
    assert image_nodes == ["sec-bind916"]
    node = mobile_state.nodes["sec-bind916"]
    assert node.server == "bind" and node.image.startswith("dnslab/bind9-bullseye:9.16.")
    assert mobile_state.nodes["sec-bind"].image.startswith("dnslab/bind9:9.18.")


def test_the_chroot_gets_the_containers_binds(mobile, mobile_state):
    info = mobile_state.nodes["sec-bind916"]
    image, binds = info.image, info.mounts
    # the container gets the same folders (the rendered clab file's binds)
    clab = yaml.safe_load(mobile.clab_file.read_text())
    assert clab["topology"]["nodes"]["sec-bind916"]["binds"] == [f"{b}:{b}" for b in binds]
    # the node folder, its zones and the tools (build/bin) are each inside a bound folder
    for needed in (mobile.node_dir("sec-bind916"), mobile.root / "zones", paths.BIN):
        assert any(Path(needed).resolve().is_relative_to(b) for b in binds), needed
    argv = rootfs.chroot_argv(rootfs.rootfs_dir(image), binds, mobile.node_dir("sec-bind916")
                              / "run.sh")
    assert argv[:4] == ["unshare", "--mount", "--propagation", "private"]
    script = argv[-1]
    for folder in binds:
        assert f'mount --bind {folder} "$R"{folder}' in script
    assert script.splitlines()[-1].startswith('exec chroot "$R" sh ')


def test_a_missing_image_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setattr(paths, "BUILD", tmp_path)
    monkeypatch.setattr(rootfs, "_image_id", lambda image: None)
    with pytest.raises(LabError) as err:
        rootfs.ensure_rootfs("dnslab/bind9-bullseye:none", "sec-bind916")
    assert "sudo make images" in err.value.hint
