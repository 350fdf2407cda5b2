"""What goes wrong with a suite itself: a gate configuration problem, never a PR failure."""

from __future__ import annotations


class SuiteError(Exception):
    """A suite cannot run as written (syntax error, bad case file, no tests, missing dependency).

    The message names the suite file. It is shown for hidden suites only;
    for a held-out suite it goes to the server log and the report says less.
    """


class NoTests(SuiteError):
    """A suite folder holds no test a suite's pytest collects and no case (for a repository: none to run)."""
