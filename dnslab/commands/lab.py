"""`dnslab lab up|down|status|exec`: bring a lab up, tear it down, look at it, run in a node."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import typer
from rich.console import Console
from rich.table import Table

from dnslab import lab as lab_engine
from dnslab.errors import LabError
from dnslab.hosts import inventory_from_env
from dnslab.runtime.base import hosts_of

app = typer.Typer(help="Bring labs up and down, look at them, run commands in their nodes.",
                  no_args_is_help=True)
console = Console(stderr=True)

DEFAULT_LAB = "reference"


@app.command()
def up(lab: str = typer.Option(DEFAULT_LAB, "--lab", "-l", envvar="LAB", help="topology name"),
       runtime: str = typer.Option("auto", "--runtime", "-r", envvar="RUNTIME",
                                   help="auto, clab or netns"),
       hosts: str = typer.Option("", "--hosts", envvar="HOSTS",
                                 help="inventory file: split the lab across its hosts"),
       generator_host: str = typer.Option("", "--generator-host", envvar="GENERATOR_HOST",
                                          help="the client's host (default: the second)"),
       server_host: str = typer.Option("", "--server-host", envvar="SERVER_HOST",
                                       help="the servers' host (default: the first)")) -> None:
    """Start a lab and return when every server answers for its zones."""
    start = time.monotonic()
    inventory = inventory_from_env(hosts)
    if inventory is None and (generator_host or server_host):
        raise LabError("GENERATOR_HOST/SERVER_HOST name hosts of an inventory",
                       hint="add HOSTS=hosts.yml (see README, 'Across machines')")
    handle = lab_engine.up(lab or DEFAULT_LAB, runtime=runtime or "auto", inventory=inventory,
                           generator_host=generator_host, server_host=server_host)
    elapsed = time.monotonic() - start
    where = ""
    if handle.state.split:
        where = " across hosts " + ", ".join(
            f"{h} ({', '.join(n for n, s in handle.state.nodes.items() if s.host == h)})"
            for h in handle.state.host_names())
        if handle.state.vxlan:
            vx = handle.state.vxlan
            where += f"; LAN over VXLAN {vx['vni']}, UDP port {vx['port']}, MTU {vx['mtu']}"
        elif handle.state.data_path:
            path = handle.state.data_path
            where += f"; LAN over {path['description']}, MTU {path['mtu']}"
    console.print(f"lab [bold]{handle.name}[/] is up on the {handle.runtime.name} runtime "
                  f"({len(handle.state.nodes)} nodes, healthy in {elapsed:.1f} s){where}")
    _print_status(lab_engine.status(handle.name))


@app.command()
def down(lab: str = typer.Option("", "--lab", "-l", envvar="LAB",
                                 help="topology name (default: every lab)")) -> None:
    """Tear a lab down completely (every lab when none is named); safe to repeat. Across
    hosts it returns once every host's daemons and namespaces are gone, and says so per
    host."""
    hosts = [h.name for h in hosts_of(lab or None) if not h.local]  # while the state says
    removed = lab_engine.down(lab or None)
    left = lab_engine.leftovers(lab or None)
    for where in ["", *hosts] if hosts else [None]:
        mine_removed = [i for i in removed if where is None or item_host(i) == where]
        mine_left = [i for i in left if where is None or item_host(i) == where]
        said = "" if where is None else (f"host {where}: " if where else "this machine: ")
        console.print(f"{said}removed {len(mine_removed)} item(s)" + (
            f"; LEFT: {mine_left}" if mine_left else "; nothing of the lab is left"))
    if left:
        raise typer.Exit(1)


def item_host(item: str) -> str:
    """The host an item of `lab down` or `leftovers` is on ("" for this machine)."""
    if item.startswith("unreachable host "):
        return item.removeprefix("unreachable host ").split(":", 1)[0]
    return item.rsplit(" on host ", 1)[1] if " on host " in item else ""


@app.command()
def status(lab: str = typer.Option("", "--lab", "-l", envvar="LAB")) -> None:
    """Nodes, addresses, state and health of the labs that are up."""
    rows = lab_engine.status(lab or None)
    if not rows:
        console.print("no lab is up")
        return
    _print_status(rows)


@app.command(name="exec", context_settings={"allow_extra_args": True,
                                            "ignore_unknown_options": True})
def exec_(ctx: typer.Context,
          node: str = typer.Argument(..., help="node name, e.g. client"),
          lab: str = typer.Option("", "--lab", "-l", envvar="LAB",
                                  help="topology name (default: the one lab that is up)")) -> None:
    """Run a command inside a node: dnslab lab exec client -- dig @198.18.0.11 example.test SOA"""
    argv = list(ctx.args) or [os.environ.get("SHELL", "/bin/sh")]
    handle = lab_engine.attach(lab or the_lab_up())
    code = subprocess.call(handle.exec_argv(node, argv))
    sys.exit(code)


def the_lab_up() -> str:
    """The lab a command means when it names none: the one lab that is up."""
    labs = lab_engine.labs_with_state()
    if len(labs) == 1:
        return labs[0]
    if not labs:
        raise LabError("no lab is up", hint="make lab up [LAB=<lab>] first")
    raise LabError(f"{len(labs)} labs are up ({', '.join(labs)})",
                   hint="name one: LAB=<lab> (or --lab)")


def _print_status(rows: list[dict]) -> None:
    table = Table(title="lab status")
    columns = ["lab", "node", "role", "server", "address", "runtime", "state", "health"]
    if any(row.get("host") for row in rows):
        columns.insert(5, "host")
    for col in columns:
        table.add_column(col)
    for row in rows:
        table.add_row(*(str(row.get(c) or "") for c in columns))
    Console(width=120).print(table)
