"""A lab split across machines: placing its nodes, checking its hosts, shipping its files.

`lab.up(..., inventory=...)` calls `prepare` after rendering and before any host is touched
by the runtime. It places every node on a host (`hosts.placement`), asks each host what it
is (kernel, cores, python, the Debian packages its nodes need, the route and MTU to the
other hosts, its clock; on the clab runtime its Docker engine, containerlab and the images
of its nodes) and refuses, in one line each and before anything is created, an unreachable
host, a host without the packages, python, engine or images its nodes need, hosts that
disagree on the version of a package (or containerlab) they both run, and an underlay MTU
too small for the lab LAN.
It then chooses the lab LAN's data path: when every host the lab uses names a
`data_interface`, a macvlan (mode bridge) of that interface per node, so no encapsulation is
in the measurement (MTU = the smallest of those interfaces'; each must exist, be up and be
no bridge's port: one line each otherwise, as for hosts that mix the two); else the VXLAN
(VNI from the lab's name, the inventory's UDP port, MTU = the smallest underlay MTU - 50
unless the inventory says). It copies the lab's files to every other host at the same
absolute path, and records it all in the lab state (and so in every run's meta.json).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from dnslab import cpus, paths
from dnslab.errors import LabError
from dnslab.hosts import (
    HOST_PYTHON_PACKAGES,
    VXLAN_OVERHEAD,
    Host,
    Inventory,
    placement,
    reach,
)
from dnslab.render import LabData, RenderedLab
from dnslab.runtime.base import LabState
from dnslab.servers import driver
from dnslab.topology import Topology

MIN_PYTHON = (3, 11)
MIN_LAN_MTU = 1280


def kind_packages(kind: str) -> set[str]:
    """The Debian packages a node of this kind needs on its host (netns runtime)."""
    d = driver(kind)
    return {p for p in (d.package, *d.commands.values(), *d.files.values()) if p}


def host_cpu_sets(topo: Topology, data: LabData, inventory: Inventory,
                  generator_host: str = "", server_host: str = "") -> None:
    """Give a node without a cpu-set (the experiment's or the topology's) its host's
    inventory `cpus`, so its rendered worker count is its host's; every set is then checked
    against its own host's CPUs, not this controller's (`data.cpus_per_host`)."""
    data.cpus_per_host = True
    nodes = {name: (node.role, node.label("host")) for name, node in topo.nodes.items()}
    for name, host in placement(inventory, nodes, generator_host, server_host).items():
        wanted = inventory.spec(host).cpus
        if wanted and not data.cpu_sets.get(name) and not topo.nodes[name].cpu_set:
            data.cpu_sets[name] = wanted


def place(state: LabState, rendered: RenderedLab, inventory: Inventory,
          generator_host: str = "", server_host: str = "") -> None:
    nodes = {name: (node.role, node.label("host"))
             for name, node in rendered.topology.nodes.items()}
    for name, host in placement(inventory, nodes, generator_host, server_host).items():
        state.nodes[name].host = host
        # a host that gives the lab some of its CPUs only: its nodes run there
        if not state.nodes[name].cpu_set and inventory.spec(host).cpus:
            state.nodes[name].cpu_set = cpus.format_set(cpus.parse(inventory.spec(host).cpus))
    state.hosts = inventory.as_dict()


def check_cpu_sets(state: LabState, facts: dict[str, dict[str, Any]]) -> None:
    for name, node in state.nodes.items():
        if node.cpu_set:
            cpus.check(node.cpu_set, name, facts[node.host]["cpus"])


def clock_offset(host: Host, samples: int = 3) -> dict[str, float]:
    """The host's clock minus this one's, from `date` over the transport: the sample with the
    shortest round trip, +- half that round trip."""
    best: tuple[float, float] | None = None
    for _ in range(samples):
        before = time.time()
        out = host.run(["date", "+%s.%N"]).stdout.strip()
        after = time.time()
        offset = float(out) - (before + after) / 2
        if best is None or after - before < best[1]:
            best = (offset, after - before)
    assert best is not None
    return {"offset_s": round(best[0], 4), "error_s": round(best[1] / 2, 4)}


def check_hosts(state: LabState, inventory: Inventory) -> dict[str, dict[str, Any]]:
    """What each host the lab uses said of itself; LabError on the first host that cannot
    run its part."""
    used = state.host_names()
    wanted: dict[str, set[str]] = {h: {"iproute2", *HOST_PYTHON_PACKAGES} for h in used}
    for node in state.nodes.values():
        if state.runtime != "clab":  # on clab a node's software is in its image
            wanted[node.host] |= kind_packages(node.server)
    facts: dict[str, dict[str, Any]] = {}
    for name in used:
        host = state.hosts_handle().get(name)
        peers = [inventory.spec(p).underlay for p in used
                 if p != name and inventory.spec(p).underlay]
        found = host.call("facts", packages=sorted(wanted[name]), peers=peers, call_timeout=60)
        python = tuple(int(x) for x in found["python"].split(".")[:2])
        if python < MIN_PYTHON:
            raise LabError(f"host {name!r} has python {found['python']}; the lab's host "
                           f"commands need {'.'.join(map(str, MIN_PYTHON))} or later",
                           hint="Debian 12 or Ubuntu 24.04 on every host")
        missing = sorted(p for p in wanted[name] if not found["versions"].get(p))
        if missing:
            raise LabError(f"host {name!r} lacks packages its nodes need: {' '.join(missing)}",
                           hint=f"on {name}: apt-get install -y --no-install-recommends "
                                + " ".join(missing))
        for peer, route in (found.get("routes") or {}).items():
            if route is None:
                raise LabError(f"host {name!r} has no route to underlay address {peer}",
                               hint="check the inventory's underlay addresses: each host must "
                                    "reach the others' (ip route get <address> on the host)")
        if not host.local:
            found["clock"] = clock_offset(host)
        if state.runtime == "clab":
            found["clab"] = check_clab_host(state, host)
            found["versions"]["containerlab"] = found["clab"]["containerlab_version"]
            wanted[name].add("containerlab")
        facts[name] = found
    shared: dict[str, dict[str, str]] = {}
    for name, found in facts.items():
        for package in wanted[name]:
            shared.setdefault(package, {})[name] = found["versions"][package]
    for package, by_host in sorted(shared.items()):
        if len(set(by_host.values())) > 1:
            listed = ", ".join(f"{h} {v}" for h, v in by_host.items())
            raise LabError(f"hosts disagree on the version of {package}: {listed}",
                           hint="install the same version on every host, so a difference in "
                                "the results is the placement's, not the software's")
    return facts


def check_clab_host(state: LabState, host: Host) -> dict[str, Any]:
    """A host's Docker engine, containerlab and the images of its nodes (clab runtime); a
    LabError that says what to run there when one is missing. The project's containerlab
    build goes with the lab's tools (`files_to_push`) when the host has none of its own."""
    images = sorted({node.image for node in state.nodes.values() if node.host == host.name})
    found = host.call("clab-facts", images=images, call_timeout=120)
    if found["docker"] is None:
        raise LabError(f"host {host.name!r} has no Docker engine that answers (the clab "
                       "runtime runs its nodes in containers there)",
                       hint=f"on {host.name}: apt-get install -y docker.io and start dockerd "
                            "(or RUNTIME=netns)")
    missing = [image for image, ident in found["images"].items() if ident is None]
    if missing:
        raise LabError(f"host {host.name!r} lacks image {missing[0]}"
                       + (f" and {len(missing) - 1} more" if len(missing) > 1 else "")
                       + " (its nodes run them)",
                       hint="make images" if host.local else
                       f"docker save {' '.join(missing)} | ssh {host.spec.ssh} docker load "
                       "(or make images in a checkout there)")
    if found["containerlab"] is None and not (paths.BIN / "containerlab").exists():
        raise LabError(f"host {host.name!r} has no containerlab, and this machine has no build "
                       "of it to copy there", hint="make containerlab (here), or install "
                       f"containerlab on {host.name}")
    if found["containerlab"] is None:  # the project's build, copied with the lab's tools
        found["containerlab"] = str(paths.BIN / "containerlab")
        from dnslab.runtime.clab import containerlab_version

        version = containerlab_version(found["containerlab"])
        found["containerlab_version"] = ".".join(map(str, version)) if version else None
    return found


def plan_vxlan(state: LabState, inventory: Inventory,
               facts: dict[str, dict[str, Any]]) -> dict[str, Any]:
    from dnslab.runtime.netns import lab_vni, vxlan_device

    used = state.host_names()
    underlay_mtus = [route["mtu"] for found in facts.values()
                     for route in (found.get("routes") or {}).values() if route]
    largest = min(underlay_mtus) - VXLAN_OVERHEAD if underlay_mtus else None
    mtu = inventory.mtu or largest or 1450
    if largest is not None and mtu > largest:
        raise LabError(f"vxlan mtu {mtu} does not fit the underlay (MTU {min(underlay_mtus)} "
                       f"carries at most {largest} inside VXLAN): large answers would be dropped",
                       hint=f"vxlan: {{mtu: {largest}}} in {inventory.path}, or drop the mtu "
                            "line to use the measured one")
    if mtu < MIN_LAN_MTU:
        raise LabError(f"the lab LAN's MTU would be {mtu}, under {MIN_LAN_MTU}",
                       hint="an underlay with a larger MTU (1500 is usual)")
    plan = {"vni": lab_vni(state.lab), "port": inventory.vxlan_port, "mtu": mtu,
            "underlay_mtu": min(underlay_mtus) if underlay_mtus else None,
            "underlay": {h: inventory.spec(h).underlay for h in used}}
    if state.runtime == "clab":
        # containerlab's vxlan link has one remote: the first host is the hub, one VXLAN
        # (and VNI: one VNI and port per namespace) to each other host, so the LAN is a tree
        plan["method"] = "containerlab vxlan link, endpoint the lab bridge"
        plan["links"] = [{"hosts": [used[0], spoke], "vni": plan["vni"] + index,
                          "device": vxlan_device(plan["vni"] + index)}
                         for index, spoke in enumerate(used[1:])]
    else:
        plan["method"] = "VXLAN device in the bridge namespace, flooding to every host"
    return plan


def data_interfaces(state: LabState, inventory: Inventory) -> dict[str, str]:
    """host -> its data interface, for the hosts the lab's nodes are placed on
    (`wanted_data_interfaces`)."""
    return wanted_data_interfaces(inventory, state.host_names(), state.runtime)


def wanted_data_interfaces(inventory: Inventory, used: list[str],
                           runtime: str) -> dict[str, str]:
    """host -> its data interface, when every host of `used` names one; {} when none does
    or one host is all there is; a LabError when some do and some do not (one LAN cannot be
    half macvlan), or on the clab runtime."""
    named = {h: inventory.spec(h).data_interface for h in used}
    with_one = [h for h in used if named[h]]
    if not with_one or len(used) < 2:
        return {}
    without = [h for h in used if not named[h]]
    if without:
        raise LabError(f"host {with_one[0]!r} has a data_interface and host {without[0]!r} "
                       "has none: the lab LAN is macvlan on every host's data interface or "
                       "VXLAN on every host's underlay, not both",
                       hint=f"give {without[0]!r} 'data_interface: <its NIC>' in "
                            f"{inventory.path}, or remove it from every host")
    if runtime == "clab":
        raise LabError("the hosts name a data_interface (a macvlan data path), which only "
                       "the netns runtime builds", hint="RUNTIME=netns, or drop "
                       f"data_interface from {inventory.path} to use VXLAN")
    return {h: str(named[h]) for h in used}


def check_data_interface(host: Host, interface: str) -> int:
    """The MTU of a host's data interface; a LabError when it is missing, down, or a
    bridge's (or bond's) port, which a macvlan cannot share."""
    where = f"host {host.name!r}'s data_interface {interface!r}"
    proc = host.run(["ip", "-j", "link", "show", "dev", interface], check=False)
    if proc.returncode != 0 or not proc.stdout.strip():
        raise LabError(f"{where} does not exist there",
                       hint=f"ip -br link on {host.name} lists its interfaces; fix "
                            "data_interface in the inventory")
    link = json.loads(proc.stdout)[0]
    flags = link.get("flags") or []
    if "UP" not in flags or "LOWER_UP" not in flags:
        state = "administratively down" if "UP" not in flags else "without carrier"
        raise LabError(f"{where} is down ({state})",
                       hint=f"on {host.name}: ip link set {interface} up, and check its link "
                            "to the other hosts")
    if link.get("master"):
        raise LabError(f"{where} is a port of {link['master']}: a macvlan cannot share it",
                       hint="a NIC of its own for the lab's data, or drop data_interface to "
                            "use VXLAN")
    return int(link["mtu"])


def plan_macvlan(state: LabState, interfaces: dict[str, str]) -> dict[str, Any]:
    """The data path over dedicated interfaces: each node's eth1 a macvlan of its host's
    data interface, every one with the smallest of their MTUs (a larger one would send
    frames the other side drops)."""
    mtus = {h: check_data_interface(state.hosts_handle().get(h), i)
            for h, i in interfaces.items()}
    mtu = min(mtus.values())
    if mtu < MIN_LAN_MTU:
        host = min(mtus, key=mtus.__getitem__)
        raise LabError(f"host {host!r}'s data_interface {interfaces[host]!r} has MTU {mtu}, "
                       f"under the {MIN_LAN_MTU} the lab LAN needs",
                       hint=f"on {host}: ip link set {interfaces[host]} mtu 1500")
    names = set(interfaces.values())
    where = names.pop() if len(names) == 1 else ", ".join(
        f"{h}:{i}" for h, i in interfaces.items())
    return {"kind": "macvlan", "mode": "bridge", "description": f"macvlan on {where}",
            "interfaces": interfaces, "interface_mtus": mtus, "mtu": mtu}


def vxlan_data_path(vxlan: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "vxlan", "description": "vxlan", "mtu": vxlan["mtu"]}


def files_to_push(rendered: RenderedLab, state: LabState, host: str) -> list[Path]:
    """What a host needs of this machine's files for its nodes: the rendered folders of its
    nodes, the folders of the zones they serve, the lab's log folder, the experiment's extra
    folders and the lab's tools (a load generator's host gets no zone it does not serve)."""
    topo = rendered.topology
    mine = [topo.nodes[n] for n, s in state.nodes.items() if s.host == host]
    zones = {z.path.parent for node in mine for z in rendered.zones_for(node)}
    wanted = [rendered.root / "logs", *(rendered.node_dir(n.name) for n in mine), *zones,
              *rendered.data.extra_binds]
    if paths.BIN.exists():
        wanted.append(paths.BIN)
    return wanted


def prepare(rendered: RenderedLab, state: LabState, inventory: Inventory,
            generator_host: str = "", server_host: str = "") -> None:
    """Place the nodes, check the hosts, plan the VXLAN, copy the files (see the module)."""
    place(state, rendered, inventory, generator_host, server_host)
    interfaces = data_interfaces(state, inventory)
    state.save()  # teardown after a failure below reaches every host from the saved state
    remote = [state.hosts_handle().get(h) for h in state.host_names()]
    remote = [h for h in remote if not h.local]
    reach(remote)  # every host at once: one that does not answer is said within seconds
    for host in remote:  # the host commands themselves, before they are asked anything
        host.push_package()
        state.hosts_touched.append(host.name)
        state.save()
    facts = check_hosts(state, inventory)
    check_cpu_sets(state, facts)
    state.host_facts = facts
    if interfaces:
        state.data_path = plan_macvlan(state, interfaces)
    elif len(state.host_names()) > 1:
        state.vxlan = plan_vxlan(state, inventory, facts)
        state.data_path = vxlan_data_path(state.vxlan)
    for host in remote:
        # a node's folder there is this rendering's alone, as here: a zone a secondary
        # transferred in a lab before would be served until it refreshed
        mine = [rendered.node_dir(n) for n, node in state.nodes.items() if node.host == host.name]
        host.run(["rm", "-rf", *[str(d) for d in mine]])
        host.push(files_to_push(rendered, state, host.name))
    state.save()


def check_lan_mtu(state: LabState) -> dict[str, int]:
    """Once the LAN is up across hosts: a packet of the LAN's full MTU, don't-fragment set,
    from a node on each host to a node on each other host, must arrive (an underlay path
    that carries less than its interfaces say drops large answers and TLS handshakes, and
    a run would measure that). One line naming the MTU and the one that crossed otherwise.
    Returns, per direction ("a->b"), the largest size seen to cross."""
    mtu = int(state.vxlan["mtu"])
    port = state.vxlan.get("port")
    first = {}
    for name, node in state.nodes.items():
        if node.netns:
            first.setdefault(node.host, name)
    crossed: dict[str, int] = {}
    for source, sender in first.items():
        for target, receiver in first.items():
            if target == source:
                continue
            found = state.host(sender).call("lan-mtu", netns=state.nodes[sender].netns,
                                            target=state.nodes[receiver].address, mtu=mtu,
                                            floor=MIN_LAN_MTU)
            where = f"from host {source!r} to host {target!r} ({sender} to {receiver})"
            if not found["small"]:
                raise LabError(f"the lab LAN does not reach {where}: nothing crossed the "
                               f"VXLAN (UDP port {port})",
                               hint=f"let UDP port {port} through between the hosts' underlay "
                                    "addresses (a firewall, a security group)")
            if not found["full"]:
                largest = found["largest"]
                raise LabError(
                    f"the lab LAN's MTU {mtu} does not cross {where}: a {mtu}-byte packet was "
                    "dropped" + (f", {largest} bytes crossed" if largest else
                                 f", nor did {MIN_LAN_MTU} bytes"),
                    hint=(f"vxlan: {{mtu: {largest}}} in {state.hosts.get('path')}: the "
                          "underlay's path carries less than its interfaces say" if largest
                          else f"an underlay path that carries {MIN_LAN_MTU + VXLAN_OVERHEAD} "
                               "bytes or more"))
            crossed[f"{source}->{target}"] = int(found["largest"])
    return crossed
