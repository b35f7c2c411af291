"""A run that measured one kind in several versions (SERVERS=bind@9.16,bind@9.18) is judged
per version: each version's claims see only its own cells (and the other kinds' and the
generator's), the run's verdicts are its first version's, and the report and summary.md show
one column per version with each version's figure."""

from __future__ import annotations

import json
from html import unescape

from analysis.pipeline import analyse
from analysis.rundata import load_run
from analysis.verdicts import run_versions, version_view
from experiments.f1_tcp_fallback import fixtures as f1


def test_a_run_of_two_versions_is_judged_per_version(tmp_path):
    # BIND 9.16: capacity halves with the new records (the seed's effect); BIND 9.18: it
    # barely moves (9,000 -> 8,600 qps): present on one version, absent on the other
    run_dir = f1.full_scale_fallback_run(tmp_path)
    run = load_run(run_dir)
    assert run_versions(run) == {"bind@9.16": ["bind916"], "bind@9.18": ["bind"]}
    view = version_view(run, "bind@9.18")
    assert view.params["seed_servers"] == ["bind"]
    assert {c.params["server"] for c in view.cells} == {"bind", "ceiling"}
    assert len(run.cells) == 10 and len(view.cells) == 6

    summary = analyse(run_dir, update_index=False)
    by_version = summary["verdicts_by_version"]
    assert list(by_version) == ["bind@9.16", "bind@9.18"]
    status = {key: {v["claim_id"]: v["status"] for v in verdicts}
              for key, verdicts in by_version.items()}
    assert status["bind@9.16"]["F1.capacity-drop"] == "reproduced"
    assert status["bind@9.18"]["F1.capacity-drop"] == "not_reproduced"
    assert all(v["version"] == key for key, vs in by_version.items() for v in vs)
    # the run's own verdicts are its first version's, not a mix
    assert [v["status"] for v in summary["verdicts"]] == [
        v["status"] for v in by_version["bind@9.16"]]
    drop = {key: next(v for v in vs if v["claim_id"] == "F1.capacity-drop")["line"]
            for key, vs in by_version.items()}
    html = (run_dir / "report" / "report.html").read_text()
    assert 'id="versions"' in html and 'data-version="bind@9.18"' in html
    assert drop["bind@9.18"] and drop["bind@9.18"] in unescape(html)
    md = (run_dir / "report" / "summary.md").read_text()
    table = md[md.index("## Per version"):].splitlines()
    assert table[2] == "| claim | bind@9.16 | bind@9.18 |" and table[3] == "|---|---|---|"
    row = next(line for line in table if line.startswith("| F1.capacity-drop |"))
    # each version's slide line, led by its status word
    assert row.split("|")[2].strip().endswith(drop["bind@9.16"].replace("|", "\\|"))
    assert drop["bind@9.16"].startswith("Reproduced: ")
    assert drop["bind@9.18"].startswith("Not reproduced: ")
    assert row.split("|")[3].strip().endswith(drop["bind@9.18"].replace("|", "\\|"))
    saved = json.loads((run_dir / "summary.json").read_text())
    assert saved["verdicts_by_version"] == by_version


def test_a_run_of_one_version_per_kind_has_no_per_version_table(tmp_path):
    run_dir = f1.fallback_run(tmp_path, f1.seed_like_fallback_cells())
    assert run_versions(load_run(run_dir)) == {}
    summary = analyse(run_dir, update_index=False)
    assert "verdicts_by_version" not in summary
    assert 'id="versions"' not in (run_dir / "report" / "report.html").read_text()


def test_the_book_shows_each_version_of_a_run_in_its_own_column(tmp_path):
    from analysis import book

    run_dir = f1.full_scale_fallback_run(tmp_path / "results")
    analyse(run_dir, update_index=False)
    pages = book.collect(book.newest_runs(tmp_path / "results"), tmp_path / "book")
    html = unescape(book.write_html(pages, book.environment(pages), tmp_path / "book").read_text())
    table = html[html.index('<table class="versions">'):]
    table = table[:table.index("</table>")]
    assert "<th>bind@9.16</th><th>bind@9.18</th>" in table
    row = next(r for r in table.split("<tr>") if r.startswith("<td>F1.capacity-drop</td>"))
    assert "8,000 -> 4,000 qps" in row and "9,000 -> 8,600 qps" in row
    assert row.index("8,000 -> 4,000") < row.index("9,000 -> 8,600")


def test_a_comparison_of_ones_own_keeps_its_versions_side_by_side(tmp_path):
    """A run of one's own experiment file (no claims) that compared two versions draws them
    in one figure: nothing is judged per version."""
    from experiments.procedures import fixtures as compare_fx

    run_dir = compare_fx.compare_run(tmp_path, {"bind@9.18": {"udp": 40000.0, "tcp": 20000.0},
                                                "bind@9.20": {"udp": 42000.0, "tcp": 21000.0}},
                                     ceiling={"udp": 90000.0, "tcp": 50000.0})
    assert list(run_versions(load_run(run_dir))) == ["bind@9.18", "bind@9.20"]
    summary = analyse(run_dir, update_index=False)
    assert "verdicts_by_version" not in summary and summary["verdicts"] == []
    assert summary["analysis"]["plots"] == ["report/compare_qps.png",
                                            "report/compare_latency.png"]


def test_a_cell_that_names_only_its_secondary_belongs_to_that_version(tmp_path):
    # F3 with SERVERS=bind@9.18,bind@9.20: the calibration cells carry no `server`, only the
    # ends (run e7a1 judged 9.18's seed-range claim on 9.20's calibrations before this)
    from analysis.rundata import Cell, Run

    run = Run(tmp_path, {"experiment": "xfr-30k-zones",
                         "params": {"servers": ["bind@9.18", "bind@9.20"]}})
    specs = {"phase=calibrate,secondary=bind@9.18,transport=tcp": {"secondary": "bind@9.18"},
             "phase=calibrate,secondary=bind@9.20,transport=tcp": {"secondary": "bind@9.20"},
             "transport=tcp,rep=0,server=bind@9.18": {"server": "bind@9.18",
                                                       "secondary": "bind@9.18"},
             "transport=tcp,rep=0,server=bind@9.20": {"server": "bind@9.20",
                                                       "secondary": "bind@9.20"},
             "phase=ceiling": {}}
    run.cells = [Cell(run, cell_id, tmp_path / cell_id, params, {})
                 for cell_id, params in specs.items()]
    assert list(run_versions(run)) == ["bind@9.18", "bind@9.20"]
    assert {c.id for c in version_view(run, "bind@9.18").cells} == {
        "phase=calibrate,secondary=bind@9.18,transport=tcp",
        "transport=tcp,rep=0,server=bind@9.18", "phase=ceiling"}
