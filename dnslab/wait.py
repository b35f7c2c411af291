"""Waiting on evidence: call a check until it holds, with a timeout, instead of a bare sleep.

`wait_until(check, timeout, what)` calls `check()` every `interval` seconds until it returns
something truthy and returns that value; after `timeout` seconds it raises `WaitTimeout` (a
LabError naming `what`). An exception raised by the check (a node that exited) ends the wait
at once. A caller that records a timeout instead of failing catches `WaitTimeout`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from dnslab.errors import LabError

T = TypeVar("T")


class WaitTimeout(LabError):
    """The awaited evidence did not come within the timeout."""


def wait_until(check: Callable[[], T], timeout: float, what: str | Callable[[], str], *,
               interval: float = 0.1, hint: str | None = None) -> T:
    """`check()`'s first truthy value; WaitTimeout after `timeout` s ("timed out after
    <timeout> s waiting for <what>"; `what` may be a callable, asked at the timeout, so the
    message can say how far the wait got). The check runs at least once."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() >= deadline:
            text = what() if callable(what) else what
            raise WaitTimeout(f"timed out after {timeout:g} s waiting for {text}", hint=hint)
        time.sleep(max(0.0, min(interval, deadline - time.monotonic())))
