"""Suppression comments: the ways to tell a linter, type checker or coverage tool to look away."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from checks.shape.pysource import comments

# Each kind, and the comment text that makes it; matched against real comment tokens only.
SUPPRESSIONS: dict[str, re.Pattern[str]] = {
    "noqa": re.compile(r"\bnoqa\b", re.I),
    "type: ignore": re.compile(r"\btype:\s*ignore\b|\bmypy:\s*(?:ignore-errors|disable-error-code)", re.I),
    "pyright: ignore": re.compile(r"\bpyright:\s*ignore\b", re.I),
    "nosec": re.compile(r"\bnosec\b", re.I),
    "nosemgrep": re.compile(r"\bnosemgrep\b", re.I),
    "pragma: no cover": re.compile(r"\bpragma:\s*no\s*(?:cover|branch)\b", re.I),
    "pylint: disable": re.compile(r"\bpylint:\s*disable\b", re.I),
}


@dataclass(frozen=True)
class Suppression:
    line: int
    kinds: tuple[str, ...]
    comment: str


def find_suppressions(text: str) -> list[Suppression]:
    """Return every comment in Python source ``text`` that suppresses a tool, in line order."""
    out = []
    for line, comment in comments(text):
        kinds = tuple(kind for kind, pattern in SUPPRESSIONS.items() if pattern.search(comment))
        if kinds:
            out.append(Suppression(line, kinds, comment))
    return out


def new_suppressions(
    base: str | None, head: str, changed: frozenset[int]
) -> tuple[list[Suppression], int]:
    """Return the suppressions on ``changed`` head lines that the base did not have, and how many it did.

    A suppression counts as old when the base has the same kind on a line
    with the same text: moving or re-indenting a suppressed line is not new.
    """
    known: Counter[tuple[str, str]] = Counter()
    if base is not None:
        base_lines = base.split("\n")
        for s in find_suppressions(base):
            for kind in s.kinds:
                known[kind, _line_text(base_lines, s.line)] += 1
    # Split on \n only, as git and the tokenizer count lines (not on \f or \x1c).
    head_lines = head.split("\n")
    found: list[Suppression] = []
    old = 0
    for s in find_suppressions(head):
        if s.line not in changed:
            continue
        text = _line_text(head_lines, s.line)
        fresh = []
        for kind in s.kinds:
            if known[kind, text] > 0:
                known[kind, text] -= 1
                old += 1
            else:
                fresh.append(kind)
        if fresh:
            found.append(Suppression(s.line, tuple(fresh), s.comment))
    return found, old


def _line_text(lines: list[str], line: int) -> str:
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""
