"""`make reproduce SCALE=ci` and the book it ends with, as CI runs them: every step of
experiments/campaign.yaml on netns, each run analysed, then the book (`python -m analysis
book`, what `make book` runs) looked at as a reader would, in headless Chromium and as the
deck's pages rendered by pdftoppm.

The campaign is the code `dnslab reproduce` runs (`dnslab.commands.reproduce.run`), with one
difference: an experiment this pytest session already ran with the same arguments (SCALE=ci,
RUNTIME=netns) is reused instead of run again (`conftest.run_once`), and the later tests reuse
the campaign's; that keeps CI inside its time. Alone:

    flock /tmp/dnslab-labs.lock .venv/bin/pytest -q -m integration \
        tests/integration/test_reproduce.py
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from PIL import Image, ImageStat

from dnslab import campaign, findings, results
from dnslab.commands import reproduce
from tests.integration import conftest

pytestmark = pytest.mark.integration


def not_blank(png: Path) -> bool:
    """Something drawn: the pixels are not all one colour."""
    with Image.open(png) as image:
        return max(ImageStat.Stat(image.convert("L")).stddev) > 5


@pytest.fixture(scope="module")
def done(tmp_path_factory) -> campaign.Campaign:
    root = tmp_path_factory.mktemp("reproduce")
    finished = reproduce.run({"SCALE": "ci", "RUNTIME": "netns"}, run_fn=conftest.run_once,
                             root=root)
    assert finished is not None
    return finished


def test_every_step_of_the_plan_ran_complete_and_analysed(done: campaign.Campaign) -> None:
    steps = done.state["steps"]
    assert [s["experiment"] for s in steps] == [s.experiment for s in campaign.load_plan()]
    for step in steps:
        assert step["status"] == campaign.DONE, step
        folder = Path(step["run"])
        meta = results.read_meta(folder)
        assert meta["complete"] is True and meta["scale"] == "ci", folder
        assert (folder / "summary.json").is_file(), f"{folder} was not analysed"
    # campaign.json says what ran: a RESUME= of a finished campaign has nothing left to do
    again = campaign.Campaign.reopen(done.dir)
    assert all(s["status"] == campaign.DONE for s in again.state["steps"])


def test_the_book_names_every_finding_and_shows_its_figures(done: campaign.Campaign) -> None:
    book = done.dir / "book"
    html = (book / "index.html").read_text()
    for finding in findings.all_findings():
        assert f"{finding.id}: {finding.title}" in html
    images = re.findall(r'<img src="([^"]+)"', html)
    assert images, "a book of ci runs with no figure"
    for src in images:
        assert (book / src).is_file(), src
        assert not_blank(book / src), src


def test_the_book_renders_in_headless_chromium(done: campaign.Campaign, tmp_path: Path) -> None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    assert browser, "chromium is missing: make test-setup installs it"
    shot = tmp_path / "book.png"
    proc = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                           "--hide-scrollbars", f"--screenshot={shot}", "--window-size=1280,2400",
                           (done.dir / "book" / "index.html").as_uri()],
                          capture_output=True, text=True, timeout=180)
    assert shot.is_file(), proc.stderr[-2000:]
    with Image.open(shot) as image:
        assert image.size == (1280, 2400)
    assert not_blank(shot)


def test_the_deck_is_one_16_9_page_per_slide(done: campaign.Campaign, tmp_path: Path) -> None:
    assert shutil.which("pdftoppm"), "pdftoppm is missing: make test-setup installs poppler-utils"
    book = done.dir / "book"
    slides = (book / "slides.txt").read_text().splitlines()
    subprocess.run(["pdftoppm", "-png", "-r", "30", str(book / "deck.pdf"), str(tmp_path / "p")],
                   check=True, timeout=300)
    pages = sorted(tmp_path.glob("p*.png"))
    assert len(pages) == len(slides)
    for page in pages:
        with Image.open(page) as image:
            width, height = image.size
        assert abs(width / height - 16 / 9) < 0.02, (page.name, image.size)
        assert not_blank(page), page.name
