"""What the grader raises when the code under test does not answer."""

from __future__ import annotations


class SubjectGone(Exception):
    """The code under test stopped answering (it exited, crashed or hung)."""


class SubjectTimeout(Exception):
    """A call into the code under test ran past its test's time budget."""
