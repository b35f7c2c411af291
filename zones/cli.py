"""`dnslab-zones`: generate zone sets and query files from the command line.

Every command prints where the set is and what it holds; bad input prints one `error:` line
and exits with status 2.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated, Any

import click
import typer
from rich.console import Console
from rich.table import Table

from dnslab.errors import LabError

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Zone and query generators for the DNS lab.")
queries_app = typer.Typer(no_args_is_help=True, help="Query files for dnsperf/resperf.")
app.add_typer(queries_app, name="queries")
console = Console(width=None if sys.stdout.isatty() else 120)

Seed = Annotated[int, typer.Option(help="random seed (same seed, same bytes)")]
OutRoot = Annotated[
    Path | None, typer.Option("--out-root", help="parent folder of zone sets (build/zones)")
]


def _ensure(generator: str, params: dict[str, Any], seed: int, out_root: Path | None) -> Any:
    import zones

    started = time.monotonic()
    zs = zones.ensure(generator, params, seed, out_root=out_root)
    took = time.monotonic() - started
    t = zs.manifest["totals"]
    console.print(
        f"{zs.path}  zones={t['zones']:,} records={t['records']:,} bytes={t['bytes']:,} "
        f"({took:.2f} s)"
    )
    return zs


@app.command()
def small(
    count: Annotated[int, typer.Option(help="number of zones")] = 1000,
    hosts: Annotated[int, typer.Option(help="A records per zone besides NS glue")] = 2,
    suffix: Annotated[str, typer.Option(help="parent name of the zones")] = "test",
    seed: Seed = 1,
    out_root: OutRoot = None,
) -> None:
    """Many small zones (SOA, NS, A) named z<NNNNN>.<suffix>."""
    # the servers' zone statements come from the lab engine's templates (dnslab.render)
    _ensure("small-zones", {"count": count, "hosts": hosts, "suffix": suffix}, seed, out_root)


@app.command()
def tld(
    records: Annotated[int, typer.Option(help="total records (1,000 ... 50,000,000)")] = 1_000_000,
    origin: Annotated[str, typer.Option(help="the TLD's name")] = "test",
    glue_share: Annotated[float, typer.Option(help="share of delegations with glue")] = 0.1,
    ds_share: Annotated[float, typer.Option(help="share of delegations with DS")] = 0.25,
    aaaa_share: Annotated[float, typer.Option(help="share of glued ones with AAAA too")] = 0.0,
    signed: Annotated[bool, typer.Option(help="DNSSEC-signed (DNSKEY, RRSIG, NSEC3)")] = False,
    nsec3_optout: Annotated[bool, typer.Option(help="NSEC3 over signed delegations only")] = True,
    seed: Seed = 1,
    out_root: OutRoot = None,
) -> None:
    """A TLD-scale zone of delegations (NS, in-bailiwick glue, DS), signed with --signed
    (xfr-tld's zone: --signed --ds-share 0.35 --aaaa-share 0.5 --records 14000000)."""
    _ensure("tld", {"records": records, "origin": origin, "glue_share": glue_share,
                    "ds_share": ds_share, "aaaa_share": aaaa_share, "signed": signed,
                    "nsec3_optout": nsec3_optout}, seed, out_root)


def _epc_params(profile: str, mcc: str, mnc: str, **counts: int | None) -> dict[str, Any]:
    params: dict[str, Any] = {"profile": profile, "mcc": mcc, "mnc": mnc}
    params.update({k: v for k, v in counts.items() if v is not None})
    return params


@app.command("3gpp")
def gpp(
    profile: Annotated[str, typer.Option(help="before | after")] = "after",
    mcc: Annotated[str, typer.Option(help="mobile country code, 3 digits")] = "440",
    mnc: Annotated[str, typer.Option(help="mobile network code, 3 digits")] = "010",
    apns: Annotated[int | None, typer.Option()] = None,
    tacs: Annotated[int | None, typer.Option()] = None,
    pgws: Annotated[int | None, typer.Option()] = None,
    pgws_v6: Annotated[int | None, typer.Option()] = None,
    sgws: Annotated[int | None, typer.Option(help="SGWs per TAC area")] = None,
    mmes: Annotated[int | None, typer.Option(help="MMEs per pool")] = None,
    name_servers: Annotated[int | None, typer.Option()] = None,
    capabilities: Annotated[str | None, typer.Option(help="e.g. nr,v6,nr.v6")] = None,
    seed: Seed = 1,
    out_root: OutRoot = None,
) -> None:
    """3GPP TS 29.303 EPC zone (profile before or after, modelled on seed 000)."""
    params = _epc_params(profile, mcc, mnc, apns=apns, tacs=tacs, pgws=pgws, pgws_v6=pgws_v6,
                         sgws=sgws, mmes=mmes, name_servers=name_servers)
    if capabilities is not None:
        params["capabilities"] = capabilities
    _ensure("3gpp", params, seed, out_root)


@app.command()
def internet(
    root_servers: Annotated[str, typer.Option(help="comma-separated lab addresses")] = (
        "198.18.0.11"),
    tld_servers: Annotated[str, typer.Option(help="comma-separated lab addresses")] = (
        "198.18.0.12"),
    sld_servers: Annotated[str, typer.Option(help="comma-separated lab addresses")] = (
        "198.18.0.13"),
    tlds: Annotated[int, typer.Option(help="number of TLDs")] = 3,
    slds: Annotated[int, typer.Option(help="number of second-level zones")] = 10_000,
    names: Annotated[int, typer.Option(help="popular names in the query list")] = 10_000,
    seed: Seed = 1,
    out_root: OutRoot = None,
) -> None:
    """Root, TLD and second-level zones plus root hints and a popular-names list."""
    zs = _ensure("internet", {"root_servers": root_servers, "tld_servers": tld_servers,
                              "sld_servers": sld_servers, "tlds": tlds, "slds": slds,
                              "names": names}, seed, out_root)
    console.print(f"root hints: {zs.file('root_hints')}\npopular names: "
                  f"{zs.file('popular_names')}")


@queries_app.command("mobile")
def q_mobile(
    profile: Annotated[str, typer.Option(help="3gpp profile")] = "after",
    count: Annotated[int, typer.Option(help="number of queries")] = 100_000,
    truncating: Annotated[
        float, typer.Option(help="share of queries for names that truncate at the payload")
    ] = 0.23,
    payload: Annotated[int, typer.Option(help="EDNS UDP payload size")] = 4096,
    zone_seed: Annotated[int, typer.Option(help="seed of the 3gpp zone set")] = 1,
    seed: Seed = 1,
    out_root: OutRoot = None,
) -> None:
    """Mobile-core mix (NAPTR 98 %, SRV 1.4 %, A 0.1 %, AAAA 0.5 %) over a 3gpp set."""
    import zones
    from zones.queries import mobile_core

    zs = zones.ensure("3gpp", {"profile": profile}, zone_seed, out_root=out_root)
    qf = mobile_core(zs, count=count, truncating=truncating, seed=seed, payload=payload)
    m = qf.manifest["measured"]
    console.print(f"{qf.path}  queries={count:,} truncated share (model)="
                  f"{m['truncated_share']:.2%}")


@queries_app.command("water")
def q_water(
    domain: Annotated[list[str], typer.Option(help="target domain (repeatable)")] = ["victim.test"],  # noqa: B006
    count: Annotated[int, typer.Option(help="number of queries")] = 100_000,
    seed: Seed = 1,
    out: Annotated[Path | None, typer.Option(help="folder (default build/zones/queries)")] = None,
) -> None:
    """Random-subdomain ("water torture") queries."""
    from dnslab import paths
    from zones.queries import water_torture

    qf = water_torture(out or paths.ZONES_BUILD / "queries", domain, count=count, seed=seed)
    console.print(f"{qf.path}  queries={count:,}")


@queries_app.command("popular")
def q_popular(
    names: Annotated[int, typer.Option(help="number of names")] = 10_000,
    seed: Seed = 1,
    out_root: OutRoot = None,
) -> None:
    """Popular-names list of the emulated internet (generates the internet set if needed)."""
    import zones

    zs = zones.ensure("internet", {"names": names, "slds": max(10_000, names)}, seed,
                      out_root=out_root)
    console.print(str(zs.file("popular_names")))


@app.command()
def calibrate(
    seed: Seed = 1,
    payload: Annotated[int, typer.Option(help="EDNS UDP payload size")] = 4096,
    queries: Annotated[int, typer.Option(help="queries in the mix used for the share")] = 100_000,
    out_root: OutRoot = None,
) -> None:
    """Print the modelled TAC/APN response sizes, section counts and the truncation share."""
    import zones
    from zones import model
    from zones.queries import mobile_core

    table = Table(title="modelled full responses (RFC 3403 additional processing, dnspython)")
    for col in ("profile", "query", "bytes", "ANSWER", "AUTHORITY", "ADDITIONAL", "TC@" +
                str(payload)):
        table.add_column(col)
    for profile in ("before", "after"):
        zs = zones.ensure("3gpp", {"profile": profile}, seed, out_root=out_root)
        z = zs.zones[0]
        zone = model.load_zone(z.path, z.fqdn)
        for name in zs.manifest["extra"]["tac_names"][:1] + zs.manifest["extra"]["apn_names"][:2]:
            m = model.measure(zone, name, "NAPTR", payload)
            table.add_row(profile, name.split(".epc.")[0] + " NAPTR", f"{m.size:,}",
                          str(m.answer), str(m.authority), str(m.additional),
                          "yes" if m.truncated else "no")
        if profile == "after":
            qf = mobile_core(zs, count=queries, seed=seed, payload=payload)
    console.print(table)
    console.print("target (seed 000, after): 23,069 bytes, ANSWER 93, AUTHORITY 14, "
                  "ADDITIONAL 219")
    share = qf.manifest["measured"]["truncated_share"]
    console.print(f"mobile-core mix ({queries:,} queries, default truncating=0.23): "
                  f"{share:.2%} of queries truncate over UDP (target 23 % +- 2)")


def main(argv: list[str] | None = None) -> int:
    try:
        app(args=argv, standalone_mode=False)
    except LabError as exc:
        print(exc.one_line(), file=sys.stderr)
        return 2
    except click.exceptions.Abort:
        print("error: aborted", file=sys.stderr)
        return 130
    except click.ClickException as exc:
        print(f"error: {exc.format_message()}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
