"""Suppression comments: the ways to tell a linter, type checker or coverage tool to look away."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from checks.shape.hygiene.pysource import comments

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
    # The code the comment is attached to, stripped: how a moved line is recognised.
    code: str


def find_suppressions(text: str) -> list[Suppression]:
    """Return every comment in Python source ``text`` that suppresses a tool, in line order."""
    # Split on \n only, as git and the tokenizer count lines (not on \f or \x1c).
    lines = text.split("\n")
    out = []
    for line, col, comment in comments(text):
        kinds = tuple(kind for kind, pattern in SUPPRESSIONS.items() if pattern.search(comment))
        if kinds:
            code = lines[line - 1][:col].strip() if line <= len(lines) else ""
            out.append(Suppression(line, kinds, comment, code))
    return out


def new_suppressions(base: str | None, head: str, changed: frozenset[int]) -> tuple[list[Suppression], int]:
    """Return the suppressions on ``changed`` head lines that the base did not have, and how many it did.

    A suppression counts as old when the base has the same kind on the same
    code: moving or re-indenting a suppressed line is not new, editing it is.
    """
    known: Counter[tuple[str, str]] = Counter()
    for s in find_suppressions(base) if base is not None else []:
        for kind in s.kinds:
            known[kind, s.code] += 1
    found: list[Suppression] = []
    old = 0
    for s in find_suppressions(head):
        if s.line not in changed:
            continue
        fresh = []
        for kind in s.kinds:
            if known[kind, s.code] > 0:
                known[kind, s.code] -= 1
                old += 1
            else:
                fresh.append(kind)
        if fresh:
            found.append(Suppression(s.line, tuple(fresh), s.comment, s.code))
    return found, old
