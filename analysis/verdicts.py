"""Run the claim tests of a run's finding (`experiments/<finding>/claims.py`) with pytest and
collect verdicts.

`evaluate(run)` calls `pytest.main` on the claims module of the finding whose package holds
the run's experiment, with a small plugin that
- gives the tests the `run` (an `analysis.rundata.Run`) and `verdict` fixtures,
- keeps the claims the experiment file's `claims:` list names, in that order of findings,
- turns each test's outcome into one verdict dict:
  {claim_id, finding, kind, title, status, line, conditions, published, source, effect,
   tolerance, precondition, fails_when, measured, detail, note, cause, intervals, basis}:
  `line` is one sentence for a slide (status word, the claim's short measured phrase - its
  figure with the interval, which survives shortening -, the conditions the lab changed; at
  most LINE_LIMIT characters), `conditions` those conditions as short strings, `cause` what
  would judge a "not applicable" (`machine` | `setting`), `intervals` each judged figure's
  interval and band (`analysis.claim.decide`), `basis` what the verdict rests on (an
  interval's method and repetitions, or "one measurement"). A calibration or lab check is
  never worded as a reproduction: its line begins "Calibration holds:" / "Lab check fails:"
  (`status_word`), never "Reproduced:".
An interrupted run (meta.json `complete: false`) never yields "not reproduced" nor
"inconclusive": a claim that fails or cannot tell on partial data is "incomplete".

A run with cells of several versions of one server kind (`SERVERS=bind@9.16,bind@9.18,
bind@9.20`: their `server` parameter) is judged once more per version (`evaluate_by_version`):
the claims see the run as if that version were the one it judges (its `seed_servers`, the
servers claims pick the judged one from, is that version alone; the other versions' cells
are left out, other kinds' and the generator's kept), so a speaker reads "held on 9.16, not
on 9.18 or 9.20" with each version's figures. The run's own verdicts are then its first
version's (SERVERS order), never a mix of versions.
"""

from __future__ import annotations

import dataclasses
import os
import re
from typing import Any

import pytest

from analysis.claim import (
    CALIBRATION,
    ERROR,
    INCOMPLETE,
    INCONCLUSIVE,
    JUDGED,
    LAB_CHECK,
    NOT_APPLICABLE,
    NOT_REPRODUCED,
    ONE_MEASUREMENT,
    REGISTRY,
    REPRODUCED,
    REPRODUCTION,
    Claim,
    Inconclusive,
    Verdict,
)
from analysis.rundata import NotApplicable, Run
from dnslab import findings
from dnslab.errors import LabError
from dnslab.experiment_spec import load_spec

LINE_LIMIT = 140
STATUS_WORD = {REPRODUCED: "Reproduced", NOT_REPRODUCED: "Not reproduced",
               INCONCLUSIVE: "Inconclusive", NOT_APPLICABLE: "Not applicable",
               INCOMPLETE: "Incomplete", ERROR: "Error"}
# a check of the lab passes or fails; it reproduces nothing
CHECK_NAME = {CALIBRATION: "Calibration", LAB_CHECK: "Lab check"}
CHECK_WORD = {REPRODUCED: "holds", NOT_REPRODUCED: "fails", INCONCLUSIVE: "inconclusive"}


def status_word(status: str, kind: str = REPRODUCTION) -> str:
    """The word a verdict's line begins with: "Reproduced" for a reproduction that held,
    "Lab check holds" / "Calibration fails" for checks of the lab."""
    if kind in CHECK_NAME and status in CHECK_WORD:
        return f"{CHECK_NAME[kind]} {CHECK_WORD[status]}"
    return STATUS_WORD.get(status, status)


def _shorten(text: str, room: int) -> str:
    """`text` in at most `room` characters: its longest leading run of whole clauses that
    fits (cut before a ": " or "; " outside parentheses and brackets, else before a ", ",
    else before a " ("), so a slide never shows half a figure nor half its interval
    ("[0.87, 1.37]"), nor a name without its figure ("kresd 0.37 [0.34, 0.39], bind@9.20":
    a " (" after a name is its label, "bind@9.20 (resolver) 0.77"); else cut at a word
    boundary, an ellipsis saying so."""
    if len(text) <= room:
        return text
    depth, clause, comma, paren, space = 0, 0, 0, 0, 0
    for i, char in enumerate(text[:room + 1]):
        if char == "(":
            if i and text[i - 1] == " " and depth == 0:
                paren = i - 1
            depth += 1
        elif char == "[":
            depth += 1
        elif char in ")]":
            depth = max(depth - 1, 0)
        elif depth == 0 and text[i:i + 2] in (": ", "; "):
            clause = i
        elif depth == 0 and text[i:i + 2] == ", ":
            comma = i
        if depth == 0 and char == " " and i < room:
            space = i
    for best in (clause, comma, paren):
        if best >= room // 3:
            return text[:best].rstrip(" ,;:")
    # a word boundary outside brackets, so an interval is shown whole or not at all
    cut = text[:space] if space else text[:max(room - 1, 0)]
    return cut.rstrip(" ,;:(") + "…"


def essential(condition: str) -> str:
    """A condition without its detail: the text before its first " (" outside brackets
    ("range sized to run out at 38 s (620-628 conn/s; seed: ...)" -> "range sized to run
    out at 38 s")."""
    depth = 0
    for i, char in enumerate(condition):
        if char == "(" and depth == 0 and i and condition[i - 1] == " ":
            return condition[:i - 1].rstrip(" ,;:")
        if char in "([":
            depth += 1
        elif char in ")]":
            depth = max(depth - 1, 0)
    return condition


def slide_line(status: str, phrase: str | None, conditions: list[str],
               limit: int = LINE_LIMIT, kind: str = REPRODUCTION) -> str:
    """One line for a slide: "<Status>: <phrase>; <condition>; ...", at most `limit`
    characters. The phrase (the figure and its interval) comes first and stays whole; the
    conditions give way first: one by one to their essential clause (`essential`; the one
    with the most detail first), then, in their order, those that no longer fit go whole.
    Only a phrase too long for the line alone is cut, by whole clauses."""
    head = f"{status_word(status, kind)}: "
    parts = [phrase] if phrase else []

    def line(shown: list[str]) -> str:
        return head + "; ".join(parts + shown)

    shown = list(conditions)
    # the condition with the most detail first, until the line fits
    for i in sorted(range(len(shown)), key=lambda i: len(essential(shown[i])) - len(shown[i])):
        if len(line(shown)) <= limit:
            return line(shown)
        shown[i] = essential(shown[i])
    if len(line(shown)) <= limit:
        return line(shown)
    if len(line([])) > limit:  # the phrase alone is too long: cut by whole clauses
        parts = [_shorten(phrase or "", limit - len(head))]
    kept: list[str] = []  # in their order, each that still fits
    for text in shown:
        if len(line([*kept, text])) <= limit:
            kept.append(text)
    return line(kept)


def _phrase(record: Verdict | None, detail: str) -> str:
    """The claim's own short phrase, else what it measured, else why it was not judged
    (the measured figure of an unmet precondition, without the remedy)."""
    if record is not None and record.phrase:
        return record.phrase
    if record is not None and record.measured:
        return record.measured.split("; ")[0]
    text = detail.split("; ")[0].replace("precondition unmet: ", "")
    return re.sub(r" \(to judge it: .*$", "", text)


def _first_line(exc: BaseException) -> str:
    text = exc.message if isinstance(exc, LabError) else str(exc)
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[0].strip() if lines else type(exc).__name__


class ClaimsPlugin:
    """pytest plugin: provides the fixtures and records one verdict per claim test."""

    def __init__(self, run: Run, wanted: list[str]):
        self.the_run = run
        self.wanted = set(wanted)
        self.verdicts: dict[str, dict[str, Any]] = {}
        self._records: dict[str, Verdict] = {}
        self.collect_errors: list[str] = []

    @pytest.fixture
    def run(self) -> Run:
        return self.the_run

    @pytest.fixture
    def verdict(self, request: pytest.FixtureRequest) -> Verdict:
        spec: Claim = request.node.function.__claim__
        record = Verdict(claim=spec)
        self._records[request.node.nodeid] = record
        return record

    def pytest_collection_modifyitems(self, config: pytest.Config,
                                      items: list[pytest.Item]) -> None:
        keep, drop = [], []
        for item in items:
            spec = getattr(getattr(item, "function", None), "__claim__", None)
            if spec is None:
                self.collect_errors.append(f"{item.nodeid} is not a registered claim")
                drop.append(item)
            elif spec.id in self.wanted:
                keep.append(item)
            else:
                drop.append(item)
        items[:] = keep
        config.hook.pytest_deselected(items=drop)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.collect_errors.append(f"cannot load claims {report.nodeid}: "
                                       f"{str(report.longrepr).splitlines()[-1]}")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]):
        outcome = yield
        report = outcome.get_result()
        spec: Claim = item.function.__claim__  # type: ignore[attr-defined]
        if call.when == "teardown" or (call.when == "setup" and report.passed):
            return
        record = self._records.get(item.nodeid)
        exc = call.excinfo.value if call.excinfo else None
        cause = unmet = None
        if exc is None:
            status, detail = REPRODUCED, ""
        elif isinstance(exc, AssertionError):
            status, detail = NOT_REPRODUCED, _first_line(exc)
        elif isinstance(exc, Inconclusive):
            status, detail = INCONCLUSIVE, _first_line(exc)
        elif isinstance(exc, NotApplicable):
            status, detail, cause = NOT_APPLICABLE, _first_line(exc), exc.cause
            unmet = "measured" if exc.measured else "absent"
        elif report.skipped:  # a pytest skip states no cause: counted as unclassified
            status, detail = NOT_APPLICABLE, _first_line(exc) if exc else "skipped"
            if detail.startswith("Skipped: "):
                detail = detail[len("Skipped: "):]
        elif isinstance(exc, LabError):
            status, detail = ERROR, _first_line(exc)
        else:  # a bug in the claim code: still one line, with the exception type
            status, detail = ERROR, f"{type(exc).__name__}: {_first_line(exc)}"
        notes = list(record.notes) if record else []
        conditions = list(record.conditions) if record else []
        intervals = list(record.intervals) if record else []
        basis = record.basis if record and record.basis else None
        if basis is None and status in JUDGED:
            basis = ONE_MEASUREMENT
        phrase = _phrase(record, detail)
        if not self.the_run.complete and status in (NOT_REPRODUCED, INCONCLUSIVE, ERROR,
                                                    NOT_APPLICABLE):
            notes.insert(0, f"run interrupted (meta.json complete=false); was {status}: {detail}")
            status, detail, cause, unmet = INCOMPLETE, "", None, None
        elif not self.the_run.complete:
            notes.insert(0, "run interrupted (meta.json complete=false)")
        self.verdicts[spec.id] = {
            "claim_id": spec.id,
            "finding": spec.finding,
            "kind": spec.kind,
            "title": spec.title,
            "status": status,
            "line": slide_line(status, phrase, conditions, kind=spec.kind),
            "conditions": conditions,
            "published": spec.published,
            "source": spec.source,
            "effect": spec.effect,
            "measured": record.measured if record else None,
            "tolerance": spec.tolerance,
            "precondition": spec.precondition,
            "fails_when": spec.fails_when,
            "detail": "; ".join([d for d in [detail, *notes] if d]),
            "note": spec.note,
            "cause": cause,
            # a "not applicable": a precondition the run measured unmet, or data it does not hold
            "unmet": unmet,
            "intervals": intervals,
            "basis": basis,
        }


def experiment_claims(experiment: str) -> list[str]:
    """The `claims:` of the experiment file a run's experiment name stands for."""
    base = findings.base_experiment(experiment)
    return load_spec(base).claims if base else []


def evaluate(run: Run) -> tuple[list[dict[str, Any]], list[str]]:
    """Run every claim the run's experiment file names; return (verdicts in claim order,
    collection errors)."""
    found = findings.finding_of(run.experiment)
    claims_file = found.path / "claims.py" if found else None
    if claims_file is None or not claims_file.is_file():
        return [], []
    wanted = experiment_claims(run.experiment)
    plugin = ClaimsPlugin(run, wanted)
    claims_dir = claims_file.parent
    args = [
        str(claims_file),
        "-p", "no:terminal", "-p", "no:cacheprovider",
        "-p", "no:warnings", "--assert=plain",
        # /dev/null as ini: the repository's pytest settings (addopts, testpaths) do not apply
        "-c", os.devnull, "-o", "python_files=claims.py", "-o", "python_functions=test_*",
        "--rootdir", str(claims_dir),
        "--confcutdir", str(claims_dir),
    ]
    code = pytest.main(args, plugins=[plugin])
    if code in (pytest.ExitCode.INTERNAL_ERROR, pytest.ExitCode.USAGE_ERROR):
        plugin.collect_errors.append(f"pytest could not run the claims (exit code {int(code)})")
    unknown = [c for c in wanted if c not in REGISTRY]
    plugin.collect_errors += [f"experiment {run.experiment!r} names claim {c!r}, which "
                              f"{claims_file} does not define" for c in unknown]
    verdicts = sorted(plugin.verdicts.values(), key=lambda v: _sort_key(v["claim_id"]))
    return verdicts, plugin.collect_errors


def _version_of(server: Any) -> str | None:
    """A cell's `server` as `kind@version`; None when it names no kind (`ceiling`)."""
    from dnslab.servers.manifest import ManifestError, image_key

    try:
        return image_key(str(server))
    except ManifestError:
        return None


def run_versions(run: Run) -> dict[str, list[str]]:
    """kind@version -> the `server` names its cells carry, for every kind the run measured in
    more than one version (in the run's SERVERS order)."""
    names: dict[str, list[str]] = {}
    order = [str(s) for s in run.params.get("servers") or []]
    for cell in sorted(run.cells, key=lambda c: (order.index(str(c.params.get("server")))
                                                  if str(c.params.get("server")) in order
                                                  else len(order))):
        server = cell.params.get("server")
        key = _version_of(server) if server is not None else None
        if key is not None and str(server) not in names.setdefault(key, []):
            names[key].append(str(server))
    kinds: dict[str, int] = {}
    for key in names:
        kinds[key.split("@")[0]] = kinds.get(key.split("@")[0], 0) + 1
    return {key: found for key, found in names.items() if kinds[key.split("@")[0]] > 1}


def version_view(run: Run, key: str) -> Run:
    """The run as its claims judge version `key`: its cells of that version and every cell
    of other kinds (or of no kind), `seed_servers` that version's names."""
    names = run_versions(run)[key]
    kind = key.split("@")[0]

    def kept(cell: Any) -> bool:
        # the version a cell measured: its `server`, else its `secondary` (F3's calibration
        # cells name only the ends: judged with 9.18, 9.20's calibration is not 9.18's)
        measured = cell.params.get("server", cell.params.get("secondary"))
        other = _version_of(measured) if measured is not None else None
        return other is None or other == key or other.split("@")[0] != kind

    meta = {**run.meta, "params": {**run.params, "seed_servers": names}, "judged_version": key}
    return dataclasses.replace(run, meta=meta, cells=[c for c in run.cells if kept(c)],
                               _csv_cache=run._csv_cache)


def evaluate_by_version(run: Run) -> tuple[dict[str, list[dict[str, Any]]], list[str]]:
    """kind@version -> the verdicts of the run judged on that version (`version_view`), for
    a run that measured a kind in several versions and has claims to judge ({} otherwise:
    a comparison of one's own draws its versions side by side), and the collection errors."""
    found: dict[str, list[dict[str, Any]]] = {}
    errors: list[str] = []
    if not experiment_claims(run.experiment):
        return found, errors  # nothing to judge (a comparison of one's own): one view
    for key in run_versions(run):
        verdicts, more = evaluate(version_view(run, key))
        found[key] = [{**v, "version": key} for v in verdicts]
        errors += [e for e in more if e not in errors]
    return found, errors


def _sort_key(claim_id: str) -> tuple[str, int]:
    """Finding first, then the order the claims are written in their module."""
    order = list(REGISTRY)
    spec = REGISTRY.get(claim_id)
    return (spec.finding if spec else "~", order.index(claim_id) if spec else len(order))
