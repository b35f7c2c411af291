"""README's setup and its first experiment at SCALE=ci in clean Debian 12 (bookworm) and
Debian 13 (trixie) root file systems: debootstrap, the project cloned in, `make setup` and
`make experiment EXP=xfr-30k-zones SCALE=ci` in a chroot with the suite's own python3 (no
headers until setup installs them) and its own BIND (9.18 and 9.20), on the netns runtime
(scripts/test-clean-root.sh does the work and prints what each phase cost).

Measured on a 2-core VM shared with other work, bookworm took 2.5-3 min (debootstrap 22-47 s,
make setup 40-53 s, the experiment 84-85 s) and trixie 4-6.5 min (debootstrap 23-49 s, make
setup 45-163 s: no wheel of pip's cache fits its python 3.13, the experiment 160-191 s), 7-9.5
min together: `make test` runs them last, in a pytest session of their own (`-m clean_root`;
the labs' session leaves them out, tests/conftest.py), and `make test-clean-root` alone.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from analysis.rundata import load_run
from dnslab.results import run_dirs

pytestmark = [pytest.mark.integration, pytest.mark.clean_root]
REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "test-clean-root.sh"
# the suite -> the BIND its archive carries, which the run must have used
BIND_OF_SUITE = {"bookworm": "9.18.", "trixie": "9.20."}


@pytest.mark.parametrize("suite", sorted(BIND_OF_SUITE))
def test_readme_setup_and_first_experiment_in_a_clean_debian_root(suite, tmp_path):
    results = tmp_path / "results"
    proc = subprocess.run([str(SCRIPT), suite], capture_output=True, text=True, timeout=1800,
                          env={**os.environ, "RESULTS": str(results)})
    out = proc.stdout + proc.stderr
    print("\n".join(line for line in out.splitlines() if line.startswith("clean-root")))
    assert proc.returncode == 0, out[-4000:]
    # Debian's python3 (no pyenv, no headers before setup) ran setup and the lab
    assert re.search(rf"clean-root {suite}: Python 3\.\d+\.\d+; BIND {BIND_OF_SUITE[suite]}",
                     out), out[-2000:]
    assert "python3: none" in out or "python3: /usr/bin/python3" in out

    runs = run_dirs(results, "xfr-30k-zones")
    assert len(runs) == 1, runs
    run = load_run(runs[0])
    assert run.complete is True
    assert run.meta["runtime"] == "netns"
    assert run.meta["versions"]["bind9"].split(":")[-1].startswith(BIND_OF_SUITE[suite])
    for cell in run.cells:
        assert cell.status == "complete", cell.id
    # the primary is not what paces the cold start on either version: with a range the
    # secondary cannot fill, every zone is served (BIND 9.20's default tcp-clients capped it
    # at 30 connections/s and 750 of 1,000 zones before the lab gave the primary room)
    wide = run.cell(profile="wide-ports", transport="tcp")
    assert wide.figures["zones_served"] == wide.figures["zones"], wide.figures
    assert wide.figures["connect_failures"] == 0, wide.figures

    # nothing of the chroot is left: no mount below the build folder, no process in it
    root = REPO / "build" / "clean-root" / f"{suite}.root"
    assert str(root) not in Path("/proc/mounts").read_text()
    assert not root.exists()
