"""One exception type for every error a user can fix, printed as a single line with a hint.

Code anywhere in the lab raises `LabError("what went wrong", hint="what to do")`; the CLI
catches it and prints `error: what went wrong (hint: what to do)` with no traceback.
"""

from __future__ import annotations


class LabError(Exception):
    """An error caused by input or environment, with a hint that tells the user how to fix it."""

    def __init__(self, message: str, hint: str | None = None, detail: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        # extra lines (a log tail) shown after the one-line message
        self.detail = detail

    def one_line(self) -> str:
        text = f"error: {self.message}"
        if self.hint:
            text += f" (hint: {self.hint})"
        return text
