"""README's "Extending" section is true: in a copy of the repository, a throwaway finding
(the tests' example finding copied in as F99, `experiments/f99_throwaway/`) and a throwaway
server kind (NSD's manifest, driver and templates copied as `throwaway`) need nothing outside
their own folders but the files that section names, each edited here as it says; then the
tests that cover findings and kinds pass in the copy, the throwaways included.

Slow (a copy of the repository and two pytest runs in it): about a minute."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "tests" / "fixtures" / "example_finding"
FINDING_DIR = "experiments/f99_throwaway"
KIND = "throwaway"
KIND_FILES = (f"dnslab/servers/{KIND}.yaml", f"dnslab/servers/{KIND}.py",
              f"topologies/templates/{KIND}/")
# the tests that hold findings and kinds: every one parametrized over them or scanning them
WHOLE_FILES = ["tests/unit/test_findings.py", "tests/unit/test_experiment_params.py",
               "tests/unit/test_architecture_doc.py", "tests/unit/test_readme_tables.py",
               "tests/unit/test_campaign.py",
               "tests/unit/test_thresholds.py", "tests/unit/test_import_graph.py",
               "tests/unit/test_manifests.py", "tests/unit/test_servers.py",
               "tests/unit/test_server_configs.py",
               "tests/unit/test_results_access.py", "tests/unit/test_node_roles.py",
               "tests/unit/test_experiment_runner.py::"
               "test_every_experiment_file_loads_with_a_story_and_a_ci_scale"]
# ... and those parametrized per finding or claim, for the throwaway's own
SELECTED_FILES = ["tests/unit/test_analysis_claims.py", "tests/unit/test_figures_every_plot.py",
                  "tests/unit/test_claims_adversarial.py", "tests/unit/test_param_fuzz.py"]
SELECTION = "F99 or throwaway or every_claim or case_guard"


def extending_section() -> str:
    text = (REPO / "README.md").read_text()
    found = re.search(r"^## Extending\n(.*?)(?=^## )", text, re.M | re.S)
    assert found, "README.md has no Extending section"
    return found.group(1)


def named_outside_files() -> set[str]:
    """The files the section says a finding or a kind touches besides its own (backticked
    paths of files in the repository, the tests aside)."""
    paths = set(re.findall(r"`([\w./-]+)`", extending_section()))
    return {p for p in paths if (REPO / p).is_file() and not p.startswith("tests/")}


def add_rows(doc: Path) -> None:
    """docs/architecture.md: the finding's and the kind's table rows, the kind's label."""
    text = doc.read_text()
    text = re.sub(r"(\| F\d+ \| `experiments/[^\n]*\n)(?!\| F)",
                  rf"\1| F99 | `{FINDING_DIR}/` | Throwaway echo |\n", text, count=1)
    text = re.sub(r"(\| tools \| client \|[^\n]*\n)",
                  rf"\1| {KIND} | primary, secondary | {KIND} |\n", text, count=1)
    text = re.sub(r"(`dnslab\.server` \([^)]*)\)", rf"\1 | {KIND})", text, count=1)
    doc.write_text(text)


def add_readme_rows(readme: Path) -> None:
    """README.md: the finding's row in its findings table, its experiment's in the
    experiments table."""
    text = readme.read_text()
    row = f"| F99 throwaway echo | made up | [`{FINDING_DIR}`]({FINDING_DIR}/NOTES.md) |"
    text = re.sub(r"(\| F\d+ [^\n]*NOTES\.md\) \|\n)(?!\| F)", rf"\1{row}\n", text,
                  count=1)
    text = re.sub(r"(\| `[\w-]+` \| F\d+ \|[^\n]*\n)(?!\| `)",
                  r"\1| `throwaway-echo` | F99 | echo latency |\n", text, count=1)
    readme.write_text(text)


def add_step(plan: Path) -> None:
    """experiments/campaign.yaml: the throwaway's experiment as a step."""
    plan.write_text(plan.read_text().rstrip("\n")
                    + "\n  - {experiment: throwaway-echo, minutes: 1}\n")


OUTSIDE_EDITS: dict[str, Callable[[Path], None]] = {
    "docs/architecture.md": add_rows, "experiments/campaign.yaml": add_step,
    "README.md": add_readme_rows}


def copy_repository(target: Path) -> None:
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], cwd=REPO, capture_output=True, check=True)
    for name in filter(None, listed.stdout.decode().split("\0")):
        source = REPO / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)


def add_finding(repo: Path) -> None:
    """The example finding X1 as F99, its experiment and plot renamed (names are unique
    across findings)."""
    folder = repo / FINDING_DIR
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns("__pycache__"))
    (folder / "echo-speed.yaml").rename(folder / "throwaway-echo.yaml")
    for path in folder.iterdir():
        text = path.read_text()
        for old, new in (("X1", "F99"), ("echo-speed", "throwaway-echo"),
                         ("echo_latency", "throwaway_latency"),
                         ("Echo servers answer at the speed of light", "Throwaway echo")):
            text = text.replace(old, new)
        path.write_text(text)
    (folder / "test_throwaway.py").write_text(OWN_TEST)


# what a finding's own unit tests look like: a test_*.py in its folder, which pytest collects
OWN_TEST = '''"""The throwaway finding's own unit test: its procedure records a cell per trial."""
from contextlib import contextmanager
from types import SimpleNamespace

from experiments.f99_throwaway import echo


def test_each_trial_is_one_cell():
    cells = []

    @contextmanager
    def cell(cell_id, params):
        cells.append(SimpleNamespace(id=cell_id, figures={}))
        yield cells[-1]

    echo.measure(SimpleNamespace(params={"trials": 3}, cell=cell))
    assert [c.id for c in cells] == ["trial=0", "trial=1", "trial=2"]
    assert all(c.figures["latency_ms"] == 0.5 for c in cells)
'''


def add_kind(repo: Path) -> None:
    """NSD's manifest, driver and templates as a kind of its own."""
    servers = repo / "dnslab" / "servers"
    manifest = (servers / "nsd.yaml").read_text()
    manifest = re.sub(r"^kind: nsd$", f"kind: {KIND}", manifest, flags=re.M)
    manifest = re.sub(r"^order: \d+$", "order: 99", manifest, flags=re.M)
    manifest = re.sub(r"^  dir: nsd$", f"  dir: {KIND}", manifest, flags=re.M)
    manifest = re.sub(r"^description: .*$", "description: a throwaway kind (NSD)", manifest,
                      flags=re.M)
    (servers / f"{KIND}.yaml").write_text(manifest)
    driver = (servers / "nsd.py").read_text()
    driver = driver.replace("class Nsd(Driver):", "class Throwaway(Driver):")
    driver = driver.replace('kind = "nsd"', f'kind = "{KIND}"')
    (servers / f"{KIND}.py").write_text(driver)
    shutil.copytree(repo / "topologies" / "templates" / "nsd",
                    repo / "topologies" / "templates" / KIND)


def pytest_in(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(repo), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-x", *args], cwd=repo, env=env, capture_output=True, text=True)


def test_the_section_names_exactly_the_files_edited_here() -> None:
    assert named_outside_files() == set(OUTSIDE_EDITS), (
        "README's Extending section and this test's edits disagree")
    section = extending_section()
    assert FINDING_DIR.replace("f99_throwaway", "f<N>_<topic>") in section
    for path in KIND_FILES:
        assert path.replace(KIND, "<kind>") in section, path


@pytest.fixture(scope="module")
def extended(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("extended")
    copy_repository(repo)
    add_finding(repo)
    add_kind(repo)
    for name, edit in OUTSIDE_EDITS.items():
        edit(repo / name)
    return repo


def test_the_throwaways_are_whole(extended: Path) -> None:
    """The copy sees them (so the runs below test them, not nothing)."""
    probe = ("from dnslab import findings, servers; "
             "print(findings.finding('F99').experiments, 'throwaway' in servers.kinds())")
    out = subprocess.run([sys.executable, "-c", probe], cwd=extended, capture_output=True,
                         text=True, env={**os.environ, "PYTHONPATH": str(extended)})
    assert out.stdout.strip() == "('throwaway-echo',) True", out.stderr[-2000:]


def test_the_tests_of_findings_and_kinds_pass_with_the_throwaways(extended: Path) -> None:
    whole = pytest_in(extended, *WHOLE_FILES)
    assert whole.returncode == 0, whole.stdout[-4000:] + whole.stderr[-2000:]
    selected = pytest_in(extended, *SELECTED_FILES, "-k", SELECTION)
    assert selected.returncode == 0, selected.stdout[-4000:] + selected.stderr[-2000:]
    assert re.search(r"\b(\d+) passed", selected.stdout), selected.stdout[-2000:]
    ran = pytest_in(extended, *SELECTED_FILES, "-k", SELECTION, "--collect-only")
    for wanted in ("test_claim_verdict[F99.", "test_every_plot_is_a_readable_slide[F99]",
                   "test_altered_data_leaves_nothing_reproduced[throwaway-echo]",
                   "test_the_published_figure_is_drawn_and_labelled[F99]",
                   "test_a_bad_value_is_one_line_and_status_2_before_any_work[throwaway-echo-"
                   "trials-"):
        assert wanted in ran.stdout, wanted
    kinds = pytest_in(extended, "tests/unit/test_manifests.py", "--collect-only")
    assert f"[{KIND}]" in kinds.stdout
    # the finding's own tests: run where they are, and found by a bare `pytest` (testpaths)
    own = pytest_in(extended, FINDING_DIR)
    assert own.returncode == 0 and "1 passed" in own.stdout, own.stdout[-2000:]
    bare = pytest_in(extended, "--collect-only", "-m", "not integration and not docker")
    assert f"{FINDING_DIR}/test_throwaway.py::test_each_trial_is_one_cell" in bare.stdout
