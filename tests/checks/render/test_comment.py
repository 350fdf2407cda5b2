"""The sticky comment and the explain reply: pure rendering, tables of cases."""

from __future__ import annotations

import pytest

from checks.render.comment import MARKER, CommentMode, render_comment, render_explain, wants_comment
from checks.report import Conclusion, Report


@pytest.mark.parametrize(
    ("mode", "conclusion", "exists", "wanted"),
    [
        ("off", "failure", False, False),
        ("off", "failure", True, False),
        ("always", "success", False, True),
        ("always", "failure", True, True),
        ("on-failure", "success", False, False),
        ("on-failure", "failure", False, True),
        ("on-failure", "neutral", False, True),
        ("on-failure", "action_required", False, True),
        # A comment that exists is kept current, or it would show a failure the PR has fixed.
        ("on-failure", "success", True, True),
    ],
)
def test_wants_comment(mode: CommentMode, conclusion: Conclusion, exists: bool, wanted: bool) -> None:
    assert wants_comment(mode, conclusion, exists=exists) is wanted


def test_the_comment_has_the_marker_the_headline_the_table_and_the_link() -> None:
    report = Report(conclusion="failure", head_sha="a" * 40, reasons=["2 new findings"])
    body = render_comment(report, "https://github.com/o/r/runs/7")
    assert body.startswith(MARKER + "\n**")
    assert "| layer | result | numbers |" in body and "| **behaviour** |" in body
    assert "[The full report on the check run](https://github.com/o/r/runs/7)" in body
    assert "`aaaaaaaaaaaa`" in body


def test_reasons_are_escaped_in_the_explain_reply() -> None:
    report = Report(conclusion="failure", head_sha="b" * 40, reasons=["[click](https://evil) *now*"])
    body = render_explain(report, "https://github.com/o/r/runs/9")
    assert "- \\[click\\](https://evil) \\*now\\*" in body
    assert MARKER not in body and "(https://github.com/o/r/runs/9)" in body


def test_explain_without_a_run_or_reasons() -> None:
    assert render_explain(None, None) == "patchgate has no finished run of this pull request yet."
    assert "Every layer passed" in render_explain(Report(conclusion="success"), None)
