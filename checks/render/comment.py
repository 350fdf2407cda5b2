"""The sticky PR comment and the ``/patchgate explain`` reply: short markdown, no I/O.

The comment carries a hidden marker so the worker finds it again and edits it
in place: one comment per PR, however many runs.
"""

from __future__ import annotations

from typing import Literal

from checks.render.gfm import escape
from checks.render.markdown import layer_table
from checks.render.numbers import headline
from checks.report import Conclusion, Report

# An HTML comment: invisible in the rendered comment, searchable in its body.
MARKER = "<!-- patchgate:summary -->"
CommentMode = Literal["off", "on-failure", "always"]
# GitHub refuses comment bodies over 65536 characters.
MAX_COMMENT_CHARS = 65_000


def wants_comment(mode: CommentMode, conclusion: Conclusion, *, exists: bool) -> bool:
    """Decide whether a run writes the sticky comment.

    on-failure creates it only for a run that did not succeed, but keeps an
    existing one up to date: a stale failure must not outlive its fix.
    """
    if mode == "off":
        return False
    return mode == "always" or exists or conclusion != "success"


def render_comment(report: Report, check_run_url: str) -> str:
    """Return the sticky comment: the conclusion line, the layer table and the check run's link."""
    lines = [
        MARKER,
        f"**{escape(headline(report), 1000)}**",
        "",
        layer_table(report),
        "",
        f"[The full report on the check run]({check_run_url}) · head `{report.head_sha[:12]}`",
    ]
    return "\n".join(lines)[:MAX_COMMENT_CHARS]


def render_explain(report: Report | None, check_run_url: str | None) -> str:
    """Return the reply to ``/patchgate explain``: the reasons of the PR's latest report."""
    if report is None:
        return "patchgate has no finished run of this pull request yet."
    lines = [f"**{escape(headline(report), 1000)}**", ""]
    if report.reasons:
        lines += ["Why:", *[f"- {escape(r, 2000)}" for r in report.reasons]]
    else:
        lines.append("Every layer passed; nothing held the change back.")
    if check_run_url:
        lines += ["", f"[The full report]({check_run_url}) · head `{report.head_sha[:12]}`"]
    return "\n".join(lines)[:MAX_COMMENT_CHARS]
