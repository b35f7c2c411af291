"""Write a run's report: one self-contained HTML page and a short Markdown summary.

`report/report.html` embeds the plots as PNG data URIs and carries its CSS inline, so it can
be mailed or opened from anywhere; links to the SVG files and the raw data are relative to
`report/`. `report/summary.md` is the terminal version. Order in both: verdicts, plots,
environment, CPU placement and sysctls read back (meta.json), parameters, raw data.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, FileSystemLoader, select_autoescape

from analysis import derived
from analysis.claim import REPRODUCTION, STATUS_MEANING, STATUSES, finding_titles
from analysis.index import census, census_text
from analysis.plots import RenderedPlot
from analysis.rundata import Run
from dnslab.probes import changed_settings, changed_text
from dnslab.results import is_full_scale
from dnslab.thresholds import QUIET_OTHER_LOAD_PCT

TEMPLATES = Path(__file__).resolve().parent / "templates"
STATUS_TEXT = {"reproduced": "reproduced", "not_reproduced": "not reproduced",
               "inconclusive": "inconclusive", "not_applicable": "not applicable",
               "incomplete": "incomplete", "error": "error"}
STATUS_ICON = {"reproduced": "✔", "not_reproduced": "✘", "inconclusive": "?",
               "not_applicable": "–", "incomplete": "◐", "error": "!"}
CAUSE_TEXT = {"machine": "the machine", "setting": "a setting"}


def _env() -> Environment:
    env = Environment(loader=FileSystemLoader(TEMPLATES),
                      autoescape=select_autoescape(["html.j2", "html"], default_for_string=False),
                      trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters["status_text"] = lambda s: STATUS_TEXT.get(s, s)
    env.filters["status_icon"] = lambda s: STATUS_ICON.get(s, "?")
    env.filters["cause_text"] = lambda c: CAUSE_TEXT.get(c, "unclassified")
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
    """Rows = sysctl keys, columns = (cell, node); each value is what the kernel read back,
    with what the lab requested when that was something else. Rows that differ between
    columns are flagged, as are values that did not take. Columns of the same node with
    every value alike are one column ("<first cell> (+N alike)")."""
    columns: list[tuple[str, str]] = []
    values: dict[str, dict[tuple[str, str], dict[str, Any]]] = {}
    for cell in run.cells:
        read_back = run.sysctls_for(cell.id)
        requested = run.sysctls_requested_for(cell.id)
        for node in sorted(set(read_back) | set(requested)):
            columns.append((cell.id, node))
            keys = set(read_back.get(node, {})) | set(requested.get(node, {}))
            for key in keys:
                got = read_back.get(node, {}).get(key)
                asked = requested.get(node, {}).get(key)
                values.setdefault(key, {})[(cell.id, node)] = {
                    "value": "not read" if got is None else got, "requested": asked,
                    "mismatch": asked is not None and got != asked}
    empty = {"value": "", "requested": None, "mismatch": False}
    # columns of one node whose every value is the same (a profile's rounds, repetitions)
    # are shown once, labelled with the first cell and how many more there are
    groups: dict[tuple[Any, ...], list[tuple[str, str]]] = {}
    for col in columns:
        same = (col[1], *(json.dumps(values[key].get(col, empty), sort_keys=True)
                          for key in sorted(values)))
        groups.setdefault(same, []).append(col)
    shown = [cols[0] for cols in groups.values()]
    labels = [(cell if len(cols) == 1 else f"{cell} (+{len(cols) - 1} alike)", node)
              for (cell, node), cols in zip(shown, groups.values(), strict=True)]
    rows = []
    for key in sorted(values):
        cells = [values[key].get(col, empty) for col in shown]
        rows.append({"key": key, "values": cells,
                     "differs": len({c["value"] for c in cells}) > 1,
                     "requested": any(c["requested"] is not None for c in cells)})
    return {"columns": labels, "rows": rows}


def _placement(run: Run) -> dict[str, Any]:
    """The run's CPU placement (meta.json `placement`) and, per cell, each node's cpu-set
    and the affinity read back from its daemon (`cells.<id>.placement` / `.affinity`)."""
    rows = []
    for cell_id, cell in (run.meta.get("cells") or {}).items():
        placed = (cell or {}).get("placement") or {}
        seen = (cell or {}).get("affinity") or {}
        nodes = [{"node": n, "cpus": placed.get(n, ""), "affinity": seen.get(n, "")}
                 for n in sorted(set(placed) | set(seen)) if placed.get(n) != "any" or n in seen]
        if nodes:
            rows.append({"cell": cell_id, "nodes": nodes})
    summary = run.meta.get("placement") or {}
    text = ""
    if summary:
        if "secondary_cpus" in summary:  # a zone transfer: its two ends
            ends = (f"secondary on CPU {summary['secondary_cpus']}, the zone's primary on "
                    f"CPU {summary.get('primary_cpus')}")
        else:
            ends = (f"load generator on CPU {summary.get('generator_cpus')}, server under "
                    f"test on CPU {summary.get('server_cpus')}")
        text = (f"{ends} of {summary.get('host_cpus')}"
                + (" (shared on purpose: SHARE_CORES)" if summary.get("shared") else
                   " (disjoint)"))
    return {"summary": text, "rows": rows}


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
    busy = _other_load(run)
    if busy:
        items.append(("other load on the machine", busy))
    # what the procedure said while it ran (e.g. a load that did not saturate the server)
    items.extend(("warning", str(w)) for w in meta.get("warnings") or [])
    generators = meta.get("generators") or {}
    for tool, ran in sorted(generators.items()):
        items.append((f"load generator: {tool}", f"{ran.get('version')} (node "
                      f"{ran.get('node')}, {ran.get('runs_from')})"))
    # what each server node ran: its kind@version, package version and where it came from
    for node, ran in sorted((meta.get("node_versions") or {}).items()):
        items.append((f"server: {node}", f"{ran.get('runs')} ({ran.get('package')} "
                      f"{ran.get('version') or '?'}, {ran.get('from')})"))
    ran_elsewhere = {tool for tool, ran in generators.items()
                     if ran.get("runs_from") != "host package"}
    for name, version in sorted((meta.get("versions") or {}).items()):
        items.append((f"version: {name}", str(version) + (
            " (the host's package, not the one that ran: see load generator)"
            if name in ran_elsewhere else " (the host's package; a server node's own: server)"
            if meta.get("node_versions") else "")))
    return items


def _other_load(run: Run) -> str:
    """How busy the machine was outside the lab, over the cells that recorded it."""
    loads = [(cell, load) for cell in run.cells if (load := derived.other_load(cell))]
    if not loads:
        return ""
    seconds = sum(load.seconds for _, load in loads)
    mean = sum(load.mean_pct * load.seconds for _, load in loads) / seconds
    busiest, worst = max(loads, key=lambda pair: pair[1].mean_pct)
    quiet = "quiet" if mean <= QUIET_OTHER_LOAD_PCT else "BUSY: spreads between repetitions " \
        "are partly the machine's"
    return (f"processes outside the lab used {mean:.0f} % of a core on average ({quiet}); "
            f"the busiest cell {busiest.label}: {worst.mean_pct:.0f} % (at most "
            f"{worst.max_pct:.0f} %)")


def _topology(run: Run) -> list[dict[str, str]]:
    topo = run.meta.get("topology")
    nodes = topo.get("nodes") if isinstance(topo, dict) else None
    if isinstance(nodes, dict):
        return [{"name": n, "addr": str((s or {}).get("address", "")),
                 **{k: str(v) for k, v in (s or {}).items()}} for n, s in nodes.items()]
    if isinstance(nodes, list):
        return [{k: str(v) for k, v in n.items()} for n in nodes if isinstance(n, dict)]
    return []


def _profiles_as_run(run: Run) -> list[tuple[str, str]]:
    """Each sysctl profile as the run really ran it: its description, and the sysctls the
    experiment set beside it on a node (requested there with another value than the
    profile's, and not alike on every node of the cell), with the values read back - so a
    run whose meta.json says "kernel defaults (nothing set)" while it set a port range is
    described right."""
    items = []
    for name, entry in (run.meta.get("profiles") or {}).items():
        own = {k: str(v) for k, v in ((entry or {}).get("sysctls") or {}).items()}
        seen: dict[tuple[str, str], list[str]] = {}
        for cell in run.cells_where(profile=name):
            requested = run.sysctls_requested_for(cell.id)
            read_back = run.sysctls_for(cell.id)
            for node, keys in requested.items():
                for key, asked in keys.items():
                    if own.get(key) == str(asked) or all(
                            str(other.get(key)) == str(asked) for other in requested.values()):
                        continue  # the profile's own value, or the lab's baseline
                    value = read_back.get(node, {}).get(key, "not read")
                    if value not in seen.setdefault((node, key), []):
                        seen[(node, key)].append(value)
        described = (entry or {}).get("profile_description") or (entry or {}).get(
            "description", "")
        extra = "; ".join(f"{key} = {' / '.join(values)} on {node}"
                          for (node, key), values in sorted(seen.items()))
        items.append((f"profile {name} as run",
                      described + (f", plus (read back): {extra}" if extra else "")))
    return items


def _chosen_in_run(run: Run) -> list[tuple[str, Any]]:
    """Settings the run chose or applied itself (calibrated port range, profiles as run, WAN
    links applied and read back, resumptions), from meta.json."""
    meta = run.meta
    items: list[tuple[str, Any]] = list(_profiles_as_run(run))
    for key, choice in sorted((meta.get("port_range_choice") or {}).items()):
        items.append((f"port range ({key})", choice))
    for cell_id, cell in (meta.get("cells") or {}).items():
        if isinstance(cell, dict) and cell.get("wan"):
            wan = {node: {k: v for k, v in applied.items() if k in (
                "backend", "delay_ms", "jitter_ms", "loss_pct", "readback", "sysctls")}
                for node, applied in cell["wan"].items()}
            items.append((f"WAN links ({cell_id})", wan))
            if cell.get("wan_counters"):
                items.append((f"WAN delayer counters ({cell_id})", cell["wan_counters"]))
    if meta.get("plan"):
        items.append(("plan", meta["plan"]))
    for resumed in meta.get("resumed") or []:
        items.append(("resumed", resumed))
    return items


def context(run: Run, summary: dict[str, Any], plots: list[RenderedPlot],
            report_dir: Path) -> dict[str, Any]:
    verdicts = summary.get("verdicts", [])
    # calibrations and lab checks are reported apart and never counted as reproductions
    reproductions = [v for v in verdicts if v.get("kind", REPRODUCTION) == REPRODUCTION]
    counts = {s: sum(1 for v in reproductions if v["status"] == s) for s in STATUSES}
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
        "run": run, "summary": summary, "verdicts": reproductions, "counts": counts,
        "by_version": by_version_table(summary),
        "calibrations": [v for v in verdicts if v.get("kind", REPRODUCTION) != REPRODUCTION],
        "status_meaning": STATUS_MEANING,
        # judged / not applicable (machine) / not applicable (setting), checks included
        "census": {f: census_text(c) for f, c in census(verdicts).items()},
        "findings": finding_titles(), "notes": notes, "plots": plot_items,
        "environment": _environment(run), "topology": _topology(run),
        "sysctls": _sysctl_table(run),
        "placement": _placement(run),
        "params": run.params,
        # a full-scale run that changed a setting, not only what runs: another question
        "probe": (changed_text(changed_settings(run.dir, run.meta))
                  if is_full_scale(run.meta) else ""),
        "chosen": _chosen_in_run(run),
        "cells": [{"id": c.id, "params": c.params, "figures": c.figures,
                   "files": c.data_files()} for c in run.cells],
        "run_files": run.data_files(),
        "errors": summary.get("analysis", {}).get("errors", []),
    }


def by_version_table(summary: dict[str, Any]) -> dict[str, Any]:
    """The per-version table: {versions: [...], rows: [{claim_id, title, kind, cells: {version:
    verdict}}]} from summary.json's `verdicts_by_version`; {} for a run of one version."""
    found = summary.get("verdicts_by_version") or {}
    if not found:
        return {}
    rows: dict[str, dict[str, Any]] = {}
    for version, verdicts in found.items():
        for v in verdicts:
            row = rows.setdefault(v["claim_id"], {"claim_id": v["claim_id"], "title": v["title"],
                                                  "kind": v.get("kind", REPRODUCTION),
                                                  "cells": {}})
            row["cells"][version] = v
    return {"versions": list(found), "rows": list(rows.values())}


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
