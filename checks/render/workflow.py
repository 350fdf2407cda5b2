"""GitHub Actions workflow commands: one annotation line per finding on a changed line (pure, no I/O).

Format and escaping: https://docs.github.com/en/actions/reference/workflow-commands-for-github-actions
(``::error file=F,line=L,endLine=E,title=T::MESSAGE``; in the message ``%``,
CR and LF are percent-encoded, in properties also ``:`` and ``,``). A
message the change wrote into a finding cannot start a command of its own:
no line break survives.
"""

from __future__ import annotations

from checks.render.annotations import MAX_MESSAGE, render_annotations
from checks.report import Report

_COMMAND = {"failure": "error", "warning": "warning", "notice": "notice"}


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def render_workflow_commands(report: Report) -> str:
    """Return the annotations of ``report`` as workflow commands, one a line."""
    lines = []
    for a in render_annotations(report):
        where = f"file={_property(a.path)},line={a.start_line},endLine={a.end_line}"
        props = f"{where},title={_property(a.title)}"
        lines.append(f"::{_COMMAND[a.level]} {props}::{_data(a.message[:MAX_MESSAGE])}")
    return "".join(line + "\n" for line in lines)
