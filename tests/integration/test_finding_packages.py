"""Each finding package's own integration checks, found as the packages are: a package with
an `integration.py` names the experiments (`EXPERIMENTS`) to run at SCALE=ci on both
runtimes with real daemons, and says what each run must show (`check(run, runtime)`). Each
run is analysed and checked as every run is (`conftest.analysed`), then by its package. A
new finding brings its checks in its own folder: nothing here names one."""

from __future__ import annotations

import pytest

from dnslab import findings
from tests.integration.conftest import analysed, run_once

pytestmark = pytest.mark.integration


def package_experiments() -> list[tuple[str, str]]:
    """(finding id, experiment) of every package's `integration.EXPERIMENTS`."""
    found = []
    for finding in findings.all_findings():
        module = finding.module("integration")
        if module is not None:
            found += [(finding.id, name) for name in module.EXPERIMENTS]
    return found


@pytest.mark.parametrize("finding_id, experiment", package_experiments())
def test_the_packages_own_checks_of_its_ci_runs(results, runtime: str, finding_id: str,
                                                 experiment: str) -> None:
    run = run_once(experiment, ["SCALE=ci", f"RUNTIME={runtime}"])
    summary = analysed(run)
    findings.finding(finding_id).module("integration").check(run, runtime, summary)
