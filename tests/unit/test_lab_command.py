"""`dnslab lab exec` with no lab named acts on the one lab that is up, and says which labs
are up otherwise (it used to assume `reference`, even with only another lab up)."""

from __future__ import annotations

import pytest

from dnslab import lab as lab_engine
from dnslab.commands import lab as lab_command
from dnslab.errors import LabError


def test_the_one_lab_that_is_up_is_the_default(monkeypatch):
    monkeypatch.setattr(lab_engine, "labs_with_state", lambda: ["mine"])
    assert lab_command.the_lab_up() == "mine"


def test_no_lab_up_says_how_to_bring_one_up(monkeypatch):
    monkeypatch.setattr(lab_engine, "labs_with_state", lambda: [])
    with pytest.raises(LabError) as err:
        lab_command.the_lab_up()
    assert err.value.message == "no lab is up" and "make lab up" in (err.value.hint or "")


def test_several_labs_up_ask_for_a_name(monkeypatch):
    monkeypatch.setattr(lab_engine, "labs_with_state", lambda: ["mine", "reference"])
    with pytest.raises(LabError) as err:
        lab_command.the_lab_up()
    assert "mine, reference" in err.value.message and "LAB=" in (err.value.hint or "")
