"""Which test classes the subject makes classes of its own for (grader/handed.py)."""

from __future__ import annotations

from checks.behaviour.incontainer.grader.aliases import Aliases
from checks.behaviour.incontainer.grader.handed import Handed


class _Plain:
    pass


def test_whether_a_class_is_the_suite_s_is_each_run_s_own_answer() -> None:
    # Two runs in one process (the tests here): the first, whose suite is elsewhere, must not decide
    # for the second, whose suite this file is.
    elsewhere = Handed(Aliases("/elsewhere/"))
    here = Handed(Aliases(__file__.rsplit("/", 1)[0] + "/"))
    assert not elsewhere.mirrorable(_Plain)
    assert here.mirrorable(_Plain)
