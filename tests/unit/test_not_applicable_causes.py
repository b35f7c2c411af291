"""Every "not applicable" says what would judge it: the machine (cores, hosts, a NIC: nothing
in the lab changes it) or a setting (a parameter, a calibration, a busy machine, a cell the
run did not have). The class is data at each raise site: every call of `require`,
`not_applicable` or `NotApplicable` in the analysis, the finding packages and the tests'
example finding passes `cause=` (no default hides it), read here from the source."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from analysis.claim import require
from analysis.rundata import MACHINE, SETTING, NotApplicable, combined_cause

REPO = Path(__file__).resolve().parents[2]
ROOTS = [REPO / "analysis", REPO / "experiments", REPO / "tests" / "fixtures"]
RAISERS = {"require", "not_applicable", "NotApplicable", "require_below_ceiling",
           "require_paced_load_reached"}


def call_name(node: ast.Call) -> str | None:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def raise_sites() -> list[tuple[str, int, bool]]:
    """(file, line, states its cause) of every call that raises NotApplicable."""
    sites = []
    for root in ROOTS:
        for path in sorted(root.rglob("*.py")):
            tree = ast.parse(path.read_text(), filename=str(path))
            for node in ast.walk(tree):
                if isinstance(node, ast.Call) and call_name(node) in RAISERS:
                    stated = any(k.arg == "cause" for k in node.keywords)
                    sites.append((str(path.relative_to(REPO)), node.lineno, stated))
    return sites


def test_every_raise_site_states_machine_or_setting() -> None:
    sites = raise_sites()
    assert len(sites) > 100  # the finding packages' claims, plots and the shared helpers
    missing = [f"{path}:{line}" for path, line, stated in sites if not stated]
    assert not missing, "raise sites without cause=MACHINE|SETTING: " + ", ".join(missing)


def test_the_class_is_required_and_checked() -> None:
    with pytest.raises(TypeError):
        NotApplicable("no cell")  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="cause must be one of"):
        NotApplicable("no cell", cause="unknown")
    with pytest.raises(NotApplicable) as raised:
        require(False, "1 core", "a machine with 8", cause=MACHINE)
    assert raised.value.cause == MACHINE


def test_several_unmet_preconditions_are_the_machine_only_when_each_is() -> None:
    machine, setting = NotApplicable("a", cause=MACHINE), NotApplicable("b", cause=SETTING)
    assert combined_cause([machine, machine]) == MACHINE
    assert combined_cause([machine, setting]) == SETTING
    assert combined_cause([]) == SETTING
