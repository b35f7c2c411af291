"""The findings book: what a speaker takes away, across findings, from analysed runs.

`build(runs, out)` takes run folders (by default the newest complete run of each experiment
under a results root, full scale first: `newest_runs`) and writes, into a folder of its own
that is never reused, one HTML page (`index.html`, Jinja2, with the runs' figures copied beside
it) and one 16:9 PDF deck (`deck.pdf`, matplotlib's PDF backend): a title slide; a census slide
(per finding: judged - reproduced, not reproduced, inconclusive -, not applicable for the
machine, not applicable for a setting); per finding a slide with each published claim and its
source beside the measured verdict line (reproductions first, calibrations and lab checks
apart, what the machine could not show with its measured figure and remedy), then one slide per
figure of its runs; a finding without a run says which command produces it; last an environment
slide (machine, cores, kernel, runtime, versions, dates, run ids, commits). Findings come from
their packages (`dnslab.findings`), verdicts from each run's summary.json (a run not analysed
yet is analysed first).
"""

from __future__ import annotations

import json
import re
import shutil
import textwrap
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jinja2
import matplotlib

matplotlib.use("Agg")
import matplotlib.image as mpimg  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.backends.backend_pdf import PdfPages  # noqa: E402

from analysis import index  # noqa: E402
from analysis.claim import REPRODUCTION  # noqa: E402
from analysis.index import census, census_text  # noqa: E402
from analysis.pipeline import analyse  # noqa: E402
from analysis.report import TEMPLATES, by_version_table  # noqa: E402
from analysis.rundata import Run, load_run  # noqa: E402
from analysis.verdicts import status_word  # noqa: E402
from dnslab import findings, results  # noqa: E402
from dnslab.errors import LabError  # noqa: E402
from dnslab.probes import counts_as_full  # noqa: E402

SLIDE_INCHES = (13.333, 7.5)  # 16:9
STATUS_COLOUR = {"reproduced": "#1b7837", "not_reproduced": "#b2182b",
                 "inconclusive": "#7b3294", "not_applicable": "#6b6b6b",
                 "incomplete": "#b8860b", "error": "#b2182b"}
# CJK script (two sources are Japanese): the deck's font has no glyphs for it, and each
# source carries an English gloss beside its title
CJK = re.compile(r"[\u3000-\u30ff\u3400-\u9fff\uff00-\uffef]+")


@dataclass
class RunPage:
    """One analysed run as the book shows it."""

    run: Run
    summary: dict[str, Any]
    figures: list[Path] = field(default_factory=list)  # copied into the book, relative

    @property
    def verdicts(self) -> list[dict[str, Any]]:
        return list(self.summary.get("verdicts") or [])


@dataclass
class FindingPage:
    """A finding's slide: its runs (none: the command that produces one)."""

    id: str
    title: str
    seed: str
    source: str
    experiments: tuple[str, ...]
    runs: list[RunPage] = field(default_factory=list)
    # each claim's latest evidence ((verdict, run label), `index.latest_evidence`) when the
    # book was built from a results root: a claim its newest run could not judge shows the
    # newest full run that did, named in its line
    evidence: list[tuple[dict[str, Any], str]] = field(default_factory=list)
    # the runs some of that evidence comes from besides `runs` (in the environment table)
    evidence_runs: list[RunPage] = field(default_factory=list)

    def _shown(self) -> list[dict[str, Any]]:
        if not self.evidence:
            return [v for page in self.runs for v in page.verdicts]
        mine = {page.run.label for page in self.runs}
        return [v if label in mine else
                {**v, "line": f"{line_of(v)} (from the full run {label}, which ran it)"}
                for v, label in self.evidence]

    def verdicts(self, *, reproductions: bool) -> list[dict[str, Any]]:
        return [v for v in self._shown()
                if (v.get("kind", REPRODUCTION) == REPRODUCTION) == reproductions]

    @property
    def missing(self) -> list[str]:
        have = {findings.base_experiment(p.run.experiment) for p in self.runs}
        return [e for e in self.experiments if e not in have]

    @property
    def census(self) -> str:
        """Its claims, calibrations and lab checks: judged / not applicable (machine) / not
        applicable (setting), e.g. "7 judged (5 reproduced, 2 inconclusive); not
        applicable: 1 machine, 2 setting" ("no run" without one)."""
        counted = census(self._shown())
        return census_text(counted[self.id]) if self.id in counted else "no run"


def line_of(verdict: dict[str, Any]) -> str:
    """The verdict's one-line slide text; older summaries without one get status + measured."""
    if verdict.get("line"):
        return str(verdict["line"])
    said = verdict.get("measured") or verdict.get("detail") or ""
    word = status_word(verdict["status"], verdict.get("kind", REPRODUCTION))
    return f"{word}: {said}".strip()


def newest_runs(root: Path) -> list[Path]:
    """The newest complete run of each experiment under a results root: its newest
    full-scale one on the experiment file's own settings where it has one (a SCALE=ci run made
    after it checks the lab and measures nothing a speaker shows; a probe that changed a
    setting, `dnslab.probes`, asked another question), else its newest."""
    complete = []
    for folder in results.run_dirs(root):  # oldest first: run ids sort by time
        meta = results.peek_meta(folder)
        if meta.get("complete") and meta.get("experiment"):
            complete.append((str(meta["experiment"]), counts_as_full(folder, meta), folder))
    newest = results.newest_full_first(complete)
    return [newest[e] for e in sorted(newest)]


def latest_evidence(root: Path) -> list[tuple[dict[str, Any], str]]:
    """Each claim's latest evidence under a results root (`index.latest_evidence`) from the
    summaries of its complete runs (a run not analysed yet is passed over)."""
    runs = []
    for folder in results.run_dirs(root):  # oldest first
        meta = results.peek_meta(folder)
        path = folder / "summary.json"
        if not (meta.get("complete") and meta.get("experiment") and path.is_file()):
            continue
        try:
            verdicts = json.loads(path.read_text()).get("verdicts") or []
        except json.JSONDecodeError:
            continue
        runs.append((str(meta["experiment"]), counts_as_full(folder, meta),
                     f"{meta['experiment']}/{meta.get('run_id') or folder.name}", verdicts))
    return index.latest_evidence(runs)


def _summary(folder: Path) -> dict[str, Any]:
    path = folder / "summary.json"
    if not path.is_file():
        return analyse(folder, update_index=False)
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise LabError(f"{path}: not JSON ({exc.msg})",
                       hint=f"re-run its analysis: make analysis RUN={folder}") from None


def _new_folder(parent: Path) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    for n in range(100):
        folder = parent / (stamp if n == 0 else f"{stamp}-{n}")
        try:
            folder.mkdir(parents=True)
            return folder
        except FileExistsError:
            continue
    raise LabError(f"no free book folder under {parent}", hint="remove old books")


def collect(run_folders: list[Path], out: Path) -> list[FindingPage]:
    """The book's pages: every finding, each with its runs and their figures copied to out."""
    pages = {f.id: FindingPage(f.id, f.title, f.seed, f.source, f.experiments)
             for f in findings.all_findings()}
    for folder in run_folders:
        run = load_run(folder)
        finding = findings.finding_of(run.experiment)
        if finding is None:
            raise LabError(f"{folder}: experiment {run.experiment!r} belongs to no finding",
                           hint="name run folders of the lab's experiments")
        summary = _summary(run.dir)
        page = RunPage(run, summary)
        for rel in summary.get("analysis", {}).get("plots") or []:
            source = run.dir / rel
            if source.is_file():
                target = Path("figures") / run.experiment / run.run_id / source.name
                (out / target).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, out / target)
                page.figures.append(target)
        pages[finding.id].runs.append(page)
    return list(pages.values())


def environment(pages: list[FindingPage]) -> list[dict[str, str]]:
    """One row per run: what it ran on."""
    rows = []
    for page in pages:
        for rp in page.runs + page.evidence_runs:
            meta = rp.run.meta
            machine = meta.get("machine") or {}
            git = meta.get("git") or {}
            versions = meta.get("versions") or {}
            rows.append({
                "run": rp.run.label, "finding": page.id,
                "machine": f"{machine.get('cpus', '?')} cores, "
                           f"{int(machine.get('memory_kb') or 0) // 1048576} GiB",
                "kernel": str(meta.get("kernel", "?")), "runtime": str(meta.get("runtime", "?")),
                "dates": f"{str(meta.get('started', '?'))[:16]} - "
                         f"{str(meta.get('ended', '?'))[:16]}",
                "commit": str(git.get("commit", "?"))[:8]
                          + (" (dirty)" if git.get("dirty") else ""),
                "versions": ", ".join(f"{k} {v}" for k, v in sorted(versions.items()))
                            + "".join(f"; {node} ran image {image}" for node, image
                                      in sorted((meta.get("images") or {}).items()))
                            + "".join(f"; {node} ran {ran.get('runs')} {ran.get('version')} "
                                      f"({ran.get('from')})" for node, ran in sorted(
                                          (meta.get("node_versions") or {}).items()))
                            + "".join(f"; load generator {tool} {ran.get('version')} "
                                      f"({ran.get('runs_from')})" for tool, ran
                                      in sorted((meta.get("generators") or {}).items())),
                "scale": str(meta.get("scale", "full")),
            })
    return rows


def software(pages: list[FindingPage]) -> str:
    """The package versions of every run, once: "bind9 9.18.49-1~deb12u3, ..." (a package
    whose version differs between runs lists each), then the images nodes ran from (meta.json
    `images`, e.g. BIND 9.16 from Debian 11 for SERVERS=bind@9.16: the host's bind9 is not the
    server those cells measured), then the server versions nodes ran from elsewhere than the
    host (meta.json `node_versions`: a root file system, an image)."""
    found: dict[str, list[str]] = {}
    images: list[str] = []
    servers_ran: list[str] = []  # versions a node ran other than the host's (node_versions)
    for page in pages:
        for rp in page.runs:
            for name, version in (rp.run.meta.get("versions") or {}).items():
                if str(version) not in found.setdefault(name, []):
                    found[name].append(str(version))
            for image in (rp.run.meta.get("images") or {}).values():
                if str(image) not in images:
                    images.append(str(image))
            for ran in (rp.run.meta.get("node_versions") or {}).values():
                said = f"{ran.get('runs')} {ran.get('version')}"
                if ran.get("from") != "host" and said not in servers_ran:
                    servers_ran.append(said)
    line = ", ".join(f"{name} {' / '.join(found[name])}" for name in sorted(found))
    return line + ("; images: " + ", ".join(images) if images else "") + (
        "; servers not the host's: " + ", ".join(servers_ran) if servers_ran else "")


def write_html(pages: list[FindingPage], env: list[dict[str, str]], out: Path) -> Path:
    jenv = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES),
                              autoescape=jinja2.select_autoescape(["html", "j2"]),
                              undefined=jinja2.StrictUndefined)
    html = jenv.get_template("book.html.j2").render(
        pages=pages, env=env, line_of=line_of, status_colour=STATUS_COLOUR,
        by_version=by_version_table,
        generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"))
    path = out / "index.html"
    path.write_text(html)
    return path


def _text_slide(pdf: PdfPages, title: str, lines: list[tuple[str, str]],
                footer: str = "") -> int:
    """Slides of (text, colour) lines under a title, wrapped to the slide's width; returns
    how many it took."""
    return _table_slides(pdf, title, [("", text, colour) for text, colour in lines], footer)


def _table_slides(pdf: PdfPages, title: str, rows: list[tuple[str, str, str]],
                  footer: str = "", header: tuple[str, str] | None = None,
                  subtitle: str = "") -> int:
    """Rows of (left, right, right's colour) in two columns (one when every left is empty),
    wrapped, continued on further slides when they do not fit; returns the slides drawn."""
    two = any(left for left, _, _ in rows)
    left_width, right_width = (58, 52) if two else (0, 125)
    step, bottom = 0.042, 0.09
    top = 0.80 if subtitle else 0.83
    chunks: list[list[tuple[list[str], list[str], str]]] = [[]]
    room = top - bottom - (step if header else 0)
    for left, right, colour in rows:
        wrapped = (textwrap.wrap(CJK.sub("\u2026", left), left_width) if two else [],
                   textwrap.wrap(CJK.sub("\u2026", right), right_width) or [""])
        height = (max(len(wrapped[0]), len(wrapped[1])) + 0.4) * step
        if chunks[-1] and height > room:
            chunks.append([])
            room = top - bottom - (step if header else 0)
        chunks[-1].append((wrapped[0], wrapped[1], colour))
        room -= height
    for n, chunk in enumerate(chunks):
        fig = plt.figure(figsize=SLIDE_INCHES)
        fig.text(0.04, 0.93, title + (" (continued)" if n else ""), fontsize=24,
                 weight="bold", va="top")
        if subtitle:
            fig.text(0.04, 0.86, CJK.sub("\u2026", subtitle), fontsize=11, color="#555555",
                     va="top")
        y = top
        if header:
            fig.text(0.05, y, header[0], fontsize=12, color="#555555", va="top", weight="bold")
            fig.text(0.5, y, header[1], fontsize=12, color="#555555", va="top", weight="bold")
            y -= step
        for left_lines, right_lines, colour in chunk:
            for i, text in enumerate(left_lines):
                fig.text(0.05, y - i * step, text, fontsize=12, color="#333333", va="top")
            x = 0.5 if two else 0.05
            for i, text in enumerate(right_lines):
                fig.text(x, y - i * step, text, fontsize=13, color=colour, va="top",
                         weight="bold" if two else "normal")
            y -= (max(len(left_lines), len(right_lines)) + 0.4) * step
        if footer:
            fig.text(0.04, 0.03, footer, fontsize=10, color="#555555")
        pdf.savefig(fig)
        plt.close(fig)
    return len(chunks)


def _figure_slide(pdf: PdfPages, title: str, image: Path, footer: str) -> None:
    fig = plt.figure(figsize=SLIDE_INCHES)
    fig.text(0.04, 0.96, title, fontsize=18, weight="bold", va="top")
    ax = fig.add_axes((0.03, 0.07, 0.94, 0.82))
    ax.imshow(mpimg.imread(image))
    ax.set_axis_off()
    fig.text(0.04, 0.025, footer, fontsize=10, color="#555555")
    pdf.savefig(fig)
    plt.close(fig)


def write_deck(pages: list[FindingPage], env: list[dict[str, str]], out: Path) -> list[str]:
    """deck.pdf; returns the slides' titles in order."""
    titles: list[str] = []
    with PdfPages(out / "deck.pdf") as pdf:
        title = "DNS performance lab: published findings, reproduced here"
        drawn = _text_slide(pdf, title, [(f"{p.id}  {p.title}", "#222222") for p in pages]
                            + [("", "#222222"),
                               (f"built {datetime.now(UTC):%Y-%m-%d %H:%M} UTC from "
                                f"{sum(len(p.runs) for p in pages)} runs", "#555555")])
        titles += [title] * drawn
        name = "Census: judged, and what the machine or a setting left unjudged"
        drawn = _table_slides(pdf, name, [(f"{p.id}  {p.title}", p.census, "#222222")
                                          for p in pages],
                              header=("finding", "claims, calibrations and lab checks"))
        titles += [name] * drawn
        for page in pages:
            slide = f"{page.id}: {page.title}"
            runs = ", ".join(rp.run.label for rp in page.runs) or "no run"
            rows = [(f"{v['published']} [{v['source']}]", line_of(v),
                      STATUS_COLOUR.get(v["status"], "#222222"))
                     for v in page.verdicts(reproductions=True)]
            rows += [("", f"No complete run of {e}: make experiment EXP={e}", "#b8860b")
                     for e in page.missing]
            drawn = _table_slides(pdf, slide, rows, footer=f"{runs} · census: {page.census}",
                                  header=("published", "measured here"),
                                  subtitle=f"Source (seed {page.seed}): {page.source}")
            titles += [slide] * drawn
            checks = page.verdicts(reproductions=False)
            if checks:
                name = f"{page.id}: calibrations and lab checks (not reproductions)"
                drawn = _table_slides(pdf, name, [(v["title"], line_of(v), "#555555")
                                                  for v in checks], footer=runs)
                titles += [name] * drawn
            for rp in page.runs:
                for figure in rp.figures:
                    name = f"{page.id}, {rp.run.experiment}: {figure.stem.replace('_', ' ')}"
                    _figure_slide(pdf, name, out / figure, rp.run.label)
                    titles.append(name)
        drawn = _text_slide(pdf, "Environment", [(
            f"{r['run']}: {r['machine']}, kernel {r['kernel']}, {r['runtime']}, "
            f"scale {r['scale']}, {r['dates']}, commit {r['commit']}", "#222222") for r in env]
            + ([(f"software: {software(pages)}", "#222222")] if software(pages) else [])
            or [("no runs", "#555555")])
        titles += ["Environment"] * drawn
    return titles


def build(run_folders: list[Path] | None = None, *, results_root: Path,
          out: Path | None = None) -> Path:
    """Build the book into a new folder (under `results_root/book/` unless `out` is given).
    The runs are checked first (each a run of an experiment of a finding, its summary
    readable); a book that fails on the way leaves no folder behind."""
    folders = [Path(f) for f in run_folders] if run_folders else newest_runs(results_root)
    for folder in folders:
        if not results.is_run(folder):
            raise LabError(f"{folder} is not a run folder (no meta.json)",
                           hint="RUNS=results/<experiment>/<run-id> ...")
        run = load_run(folder)
        if findings.finding_of(run.experiment) is None:
            raise LabError(f"{folder}: experiment {run.experiment!r} belongs to no finding",
                           hint="name run folders of the lab's experiments")
        if (folder / "summary.json").is_file():
            _summary(folder)  # readable, or a one-line error now
    if out is not None and out.exists() and any(out.iterdir()):
        raise LabError(f"{out} is not empty: a book is never written over another",
                       hint="give a new --out folder")
    created = out is None or not out.exists()
    target = out if out is not None else _new_folder(Path(results_root) / "book")
    target.mkdir(parents=True, exist_ok=True)
    try:
        pages = collect(folders, target)
        if not run_folders:  # the newest runs: each claim's latest evidence
            evidence = latest_evidence(results_root)
            for page in pages:
                page.evidence = [(v, label) for v, label in evidence
                                 if index.finding_of(v) == page.id]
                mine = {rp.run.label for rp in page.runs}
                for label in dict.fromkeys(label for _, label in page.evidence):
                    if label not in mine:
                        run = load_run(Path(results_root) / label)
                        page.evidence_runs.append(RunPage(run, _summary(run.dir)))
        env = environment(pages)
        write_html(pages, env, target)
        titles = write_deck(pages, env, target)
        (target / "slides.txt").write_text("\n".join(titles) + "\n")
    except BaseException:
        # half a book is no book: what was written goes (the folder too, when made here)
        shutil.rmtree(target, ignore_errors=True)
        if not created:
            target.mkdir()
        elif out is None:
            with suppress(OSError):
                target.parent.rmdir()  # results/book/, when this was to be its first book
        raise
    return target
