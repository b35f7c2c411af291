"""The seed's figures the claims use are its source's data: read here from the package's copy
of the perfmeasurements_2018 CSVs (`source/`) with nothing but the csv module, and held
against `derived.seed()`, the claims' published lines and the regime `published.py` derives."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from analysis.claim import REGISTRY
from experiments.f6_transport_cost import claims, derived  # noqa: F401 (registers)

RESULTS = Path(__file__).parent / "source" / "results" / "bionic"
FILES = {"udp": "UDP", "tcp": "TCP", "dot": "TLS"}


def row_at_8(path: Path) -> list[float]:
    with open(path) as handle:
        for line in csv.reader(handle):
            values = [float(v) for v in (c.strip() for c in line) if v]
            if values and values[0] == 8:
                return values
    raise AssertionError(f"{path}: no row of 8 clients")


def csv_mean(folder: str, transport: str) -> tuple[float, list[float], list[float]]:
    """The CSV's mean qps column at 8 clients, each run's qps and lost count."""
    values = row_at_8(RESULTS / folder / f"test-{FILES[transport]}ct-1-16.csv")
    pairs = values[2:-4]
    return values[-2], pairs[1::2], pairs[0::2]


def test_every_seed_figure_is_its_csvs_mean_of_the_runs_at_8_clients() -> None:
    assert len(derived.seed()) == 4
    for server in derived.seed():
        for transport, figure in (("udp", server.udp), ("tcp", server.tcp),
                                  ("dot", server.tls)):
            path = RESULTS / server.source.folder / f"test-{FILES[transport]}ct-1-16.csv"
            if not path.exists():
                assert figure is None and transport == "dot"  # BIND 9.12 had no TLS
                continue
            mean, runs, _ = csv_mean(server.source.folder, transport)
            assert figure == mean
            ran = [q for q in runs if q > 0]
            # the CSV's mean is of the runs that ran, to its 6 significant digits
            assert sum(ran) / len(ran) == pytest.approx(mean, rel=1e-5)
            assert server.source.runs[transport].qps == tuple(runs)


def test_the_figures_the_issue_found_hand_entered_are_the_csvs() -> None:
    by_name = {s.name.split(" ")[0]: s for s in derived.seed()}
    assert by_name["Knot"].tcp == 131239 and by_name["Knot"].udp == 289928
    assert by_name["Unbound"].tls == 140673 and by_name["Unbound"].udp == 502000
    assert by_name["BIND"].tls is None and by_name["BIND"].role == by_name["Unbound"].role
    # dnsdist's TCP: 2 runs of 5 ran
    assert by_name["dnsdist"].source.runs["tcp"].ran == (0, 1)


def test_the_claims_publish_the_csvs_ratios() -> None:
    ratios = {folder: {t: csv_mean(folder, t)[0] / csv_mean(folder, "udp")[0]
                       for t in ("tcp", "dot")
                       if (RESULTS / folder / f"test-{FILES[t]}ct-1-16.csv").exists()}
              for folder in ("Unbound-release-1.7.0", "Knot-resolver-v2.3.0", "Bind9-v9_12_1",
                             "DNSDist-1.3.0")}
    names = {s.source.folder: s.name for s in derived.seed()}
    tcp_cost = REGISTRY["F6.tcp-cost"].published
    tls_cost = REGISTRY["F6.tls-cost"].published
    for folder in ("Unbound-release-1.7.0", "Knot-resolver-v2.3.0", "Bind9-v9_12_1"):
        assert f"{names[folder]} {ratios[folder]['tcp']:.2f}" in tcp_cost
    for folder in ("Unbound-release-1.7.0", "Knot-resolver-v2.3.0"):
        assert f"{names[folder]} {ratios[folder]['dot']:.2f}" in tls_cost
    assert f"{ratios['DNSDist-1.3.0']['tcp']:.2f}" in REGISTRY["F6.frontend.tcp"].published
    assert f"{ratios['DNSDist-1.3.0']['dot']:.2f}" in REGISTRY["F6.frontend.tls"].published
    below = REGISTRY["F6.tls-below-tcp"].published
    for folder in ("Unbound-release-1.7.0", "Knot-resolver-v2.3.0", "DNSDist-1.3.0"):
        assert (f"{csv_mean(folder, 'dot')[0] / 1000:,.0f}k < "
                f"{csv_mean(folder, 'tcp')[0] / 1000:,.0f}k") in below


def test_the_loss_column_says_most_udp_slots_waited_out_dnspserfs_timeout() -> None:
    for server in derived.seed():
        _, _, lost = csv_mean(server.source.folder, "udp")
        # 5,000 slots x 20 s / 5 s = at most 20,000 lost a run
        assert all(17000 < n < 20000 for n in lost)
        udp = server.source.runs["udp"]
        assert 0.9 < udp.held_share < 0.99
        assert 50 < udp.in_flight < 450
        assert server.source.runs["tcp"].mean_lost == 0
        if "dot" in server.source.runs:
            assert server.source.runs["dot"].mean_lost <= 1


def test_the_servers_cpu_is_the_csvs_and_a_share_of_their_threads() -> None:
    by_name = {s.name.split(" ")[0]: s.source for s in derived.seed()}
    assert [by_name["Unbound"].cpu[t].mean for t in ("udp", "tcp", "dot")] == [314.4, 287.4,
                                                                               288.4]
    assert [by_name["Knot"].cpu[t].mean for t in ("udp", "tcp", "dot")] == [285, 286.2, 293]
    assert by_name["Unbound"].cpu["udp"].runs == (357, 264, 331, 341, 279)
    shares = [s.busy_share(t) for s in (by_name["Unbound"], by_name["Knot"])
              for t in ("udp", "tcp", "dot")]
    assert min(shares) == pytest.approx(285 / 400) and max(shares) == pytest.approx(314.4 / 400)
    # BIND set no thread count (one per CPU): its share is not known
    assert by_name["BIND"].busy_share("udp") is None


def test_the_published_bars_are_hand_entered_and_not_what_the_claims_use() -> None:
    """bar_data.txt (the bars of transport-bar.png) against the CSVs: most are the CSVs'
    rounded, three (the issue's) are off by more than 3 %; the claims read the CSVs."""
    bars = [float(line.split()[1]) * 1000 for line in
            (RESULTS / "bar_data.txt").read_text().splitlines() if line.strip()]
    figures = {(s.name.split(" ")[0], t): v for s in derived.seed()
               for t, v in (("udp", s.udp), ("tcp", s.tcp), ("tls", s.tls or 0.0))}
    assert len(bars) == len(figures)
    off = {key: bar for key, bar in zip(figures, bars, strict=True)
           if abs(bar - figures[key]) > 0.03 * max(figures[key], 1)}
    assert off == {("Knot", "tcp"): 140000, ("Unbound", "tls"): 145000,
                   ("Knot", "udp"): 300000}


def test_the_claims_publish_each_figures_runs_as_the_csvs_have_them() -> None:
    line = REGISTRY["F6.tcp-cost"].published
    for folder in ("Unbound-release-1.7.0", "Knot-resolver-v2.3.0", "Bind9-v9_12_1"):
        for transport in ("udp", "tcp"):
            _, runs, _ = csv_mean(folder, transport)
            ran = [q / 1000 for q in runs if q > 0]
            assert f"{FILES[transport]} {min(ran):,.0f}-{max(ran):,.0f}k" in line
    assert "Unbound 1.7.0 0.41 (UDP 449-554k, TCP 201-207k, 5 runs)" in line
