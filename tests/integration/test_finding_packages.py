"""Each finding package's own integration checks, found as the packages are: a package with
an `integration.py` names the experiments (`EXPERIMENTS`) to run at SCALE=ci on both
runtimes with real daemons (or on those its `RUNTIMES` names for an experiment), and says
what each run must show (`check(run, runtime)`). Each run is analysed and checked as every
run is (`conftest.analysed`), then by its package. A new finding brings its checks in its own
folder: nothing here names one."""

from __future__ import annotations

import pytest

from dnslab import findings
from tests.integration.conftest import RUNTIMES, analysed, run_once

pytestmark = pytest.mark.integration


def package_experiments() -> list[tuple[str, str, str]]:
    """(runtime, finding id, experiment) of every package's `integration.EXPERIMENTS`, on
    every runtime unless its `RUNTIMES` names fewer for the experiment."""
    found = []
    for finding in findings.all_findings():
        module = finding.module("integration")
        if module is None:
            continue
        chosen = getattr(module, "RUNTIMES", {})
        for name in module.EXPERIMENTS:
            found += [(runtime, finding.id, name) for runtime in RUNTIMES
                      if runtime in chosen.get(name, RUNTIMES)]
    return found


@pytest.mark.parametrize("runtime, finding_id, experiment", package_experiments())
def test_the_packages_own_checks_of_its_ci_runs(request, results, runtime: str,
                                                 finding_id: str, experiment: str) -> None:
    if runtime == "clab":
        request.getfixturevalue("clab_ready")
    run = run_once(experiment, ["SCALE=ci", f"RUNTIME={runtime}"])
    summary = analysed(run)
    findings.finding(finding_id).module("integration").check(run, runtime, summary)
