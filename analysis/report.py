"""Write a run's report: one self-contained HTML page and a short Markdown summary.

`report/report.html` embeds the plots as PNG data URIs and carries its CSS inline, so it can
be mailed or opened from anywhere; links to the SVG files and the raw data are relative to
`report/`. `report/summary.md` is the terminal version. Order in both: verdicts, plots,
environment and sysctls read back (meta.json), parameters, raw data.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, FileSystemLoader, select_autoescape

from analysis.claim import FINDINGS, STATUSES
from analysis.plots import RenderedPlot
from analysis.rundata import Run

TEMPLATES = Path(__file__).resolve().parent / "templates"
STATUS_TEXT = {"reproduced": "reproduced", "not_reproduced": "not reproduced",
               "not_applicable": "not applicable", "incomplete": "incomplete", "error": "error"}
STATUS_ICON = {"reproduced": "✔", "not_reproduced": "✘", "not_applicable": "–",
               "incomplete": "◐", "error": "!"}


def _env() -> Environment:
    env = Environment(loader=FileSystemLoader(TEMPLATES),
                      autoescape=select_autoescape(["html.j2", "html"], default_for_string=False),
                      trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters["status_text"] = lambda s: STATUS_TEXT.get(s, s)
    env.filters["status_icon"] = lambda s: STATUS_ICON.get(s, "?")
    env.filters["link"] = lambda rel: quote("../" + rel)
    env.filters["mdcell"] = lambda v: "" if v is None else str(v).replace("|", "\\|").replace(
        "\n", " ")
    env.filters["compact"] = _compact
    env.globals["zip"] = zip
    return env


def _compact(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, float):
        return f"{value:,.3f}".rstrip("0").rstrip(".")
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return str(value)


def _sysctl_table(run: Run) -> dict[str, Any]:
    """Rows = sysctl keys, columns = (cell, node); rows whose values differ are flagged."""
    columns: list[tuple[str, str]] = []
    values: dict[str, dict[tuple[str, str], str]] = {}
    for cell_id, nodes in sorted((run.meta.get("sysctls") or {}).items()):
        if not isinstance(nodes, dict):
            continue
        for node, keys in sorted(nodes.items()):
            if not isinstance(keys, dict):
                continue
            columns.append((cell_id, node))
            for key, value in keys.items():
                values.setdefault(key, {})[(cell_id, node)] = str(value)
    rows = []
    for key in sorted(values):
        cells = [values[key].get(col, "") for col in columns]
        rows.append({"key": key, "values": cells, "differs": len(set(cells)) > 1})
    return {"columns": columns, "rows": rows}


def _environment(run: Run) -> list[tuple[str, str]]:
    meta = run.meta
    items: list[tuple[str, str]] = []
    for key, label in (("runtime", "runtime"), ("kernel", "kernel"),
                       ("git_revision", "git revision"), ("git", "git revision"),
                       ("command", "command line"), ("started", "started"), ("ended", "ended")):
        value = meta.get(key)
        if isinstance(value, dict) and "commit" in value:  # the runner's {commit, dirty}
            value = f"{value['commit']}" + (" (with uncommitted changes)" if value.get("dirty")
                                            else "")
        if isinstance(value, list):
            value = " ".join(map(str, value))
        if value is not None:
            items.append((label, _compact(value)))
    items.append(("complete", "yes" if run.complete else "NO - the run was interrupted"))
    for name, version in sorted((meta.get("versions") or {}).items()):
        items.append((f"version: {name}", str(version)))
    return items


def _topology(run: Run) -> list[dict[str, str]]:
    topo = run.meta.get("topology")
    nodes = topo.get("nodes") if isinstance(topo, dict) else None
    if isinstance(nodes, dict):
        return [{"name": n, "addr": str((s or {}).get("address", "")),
                 **{k: str(v) for k, v in (s or {}).items()}} for n, s in nodes.items()]
    if isinstance(nodes, list):
        return [{k: str(v) for k, v in n.items()} for n in nodes if isinstance(n, dict)]
    return []


def context(run: Run, summary: dict[str, Any], plots: list[RenderedPlot],
            report_dir: Path) -> dict[str, Any]:
    verdicts = summary.get("verdicts", [])
    counts = {s: sum(1 for v in verdicts if v["status"] == s) for s in STATUSES}
    notes = {}
    for v in verdicts:
        if v.get("note"):
            notes.setdefault(v["note"], []).append(v["claim_id"])
    plot_items = []
    for p in plots:
        item: dict[str, Any] = {"name": p.name, "title": p.title, "caption": p.caption,
                                "notes": p.notes, "readings": p.readings, "error": p.error,
                                "skipped": p.skipped}
        if p.png is not None and p.svg is not None:
            item["data_uri"] = "data:image/png;base64," + base64.b64encode(
                p.png.read_bytes()).decode()
            item["png"] = p.png.relative_to(report_dir).as_posix()
            item["svg"] = p.svg.relative_to(report_dir).as_posix()
        plot_items.append(item)
    return {
        "run": run, "summary": summary, "verdicts": verdicts, "counts": counts,
        "findings": FINDINGS, "notes": notes, "plots": plot_items,
        "environment": _environment(run), "topology": _topology(run),
        "sysctls": _sysctl_table(run),
        "params": run.params,
        "cells": [{"id": c.id, "params": c.params, "figures": c.figures,
                   "files": c.data_files()} for c in run.cells],
        "run_files": run.data_files(),
        "errors": summary.get("analysis", {}).get("errors", []),
    }


def write(run: Run, summary: dict[str, Any], plots: list[RenderedPlot],
          report_dir: Path) -> tuple[Path, Path]:
    env = _env()
    ctx = context(run, summary, plots, report_dir)
    html = report_dir / "report.html"
    md = report_dir / "summary.md"
    report_dir.mkdir(parents=True, exist_ok=True)
    html.write_text(env.get_template("report.html.j2").render(**ctx))
    md.write_text(env.get_template("summary.md.j2").render(**ctx))
    return html, md
