"""Image nodes on the netns runtime (dnslab/runtime/rootfs.py): which nodes run from their
image's file system, and that the chroot gets exactly the folders the container would."""

from __future__ import annotations

from pathlib import Path

import pytest

from dnslab import paths, render, topology
from dnslab.errors import LabError
from dnslab.render import LabData, ZoneRef
from dnslab.runtime import rootfs


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


def test_only_the_labelled_node_runs_from_its_image(mobile):
    image_nodes = [n for n in mobile.topology.nodes
                   if rootfs.image_node(mobile.clab_file, n)]
    assert image_nodes == ["sec-bind916"]
    node = mobile.topology.node("sec-bind916")
    assert node.server == "bind" and node.image.startswith("dnslab/bind9-bullseye:9.16.")


def test_the_chroot_gets_the_containers_binds(mobile):
    found = rootfs.image_node(mobile.clab_file, "sec-bind916")
    assert found is not None
    image, binds = found
    assert image == mobile.topology.node("sec-bind916").image
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
