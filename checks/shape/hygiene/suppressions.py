"""Suppressions: the ways to tell a linter, type checker or coverage tool to look away.

A suppression is any directive to such a tool, whatever its options: each
tool's directive *prefix* is matched, not a list of the spellings known to
hide code (``# mypy: check-untyped-defs=False`` hides as much as
``# mypy: ignore-errors``). Most tools read directives from comment tokens;
two read raw lines, so a directive inside a string counts for them: mypy's
inline configuration (any line that starts with ``# mypy: ``, mypy.util's
get_mypy_comments, used unless the native parser is on) and semgrep's
``nosem`` (`` nosem`` anywhere on a finding's line or alone on the line
before it, Nosemgrep.ml). ``@typing.no_type_check`` is found in the AST.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import dataclass

from checks.shape.hygiene.pysource import comments, import_aliases
from checks.shape.hygiene.statements import Hit, located

# Each kind, and the comment text that makes it; matched against real comment tokens only.
# Case-insensitive and whitespace-tolerant: wider than any tool, so no spelling a tool honours slips by.
SUPPRESSIONS: dict[str, re.Pattern[str]] = {
    # ruff and flake8: noqa with or without codes, also file-level after a "ruff" or "flake8" prefix.
    "noqa": re.compile(r"\bnoqa\b|\bflake8\s*:", re.I),
    # mypy: type-ignore comments, and inline configuration (a "mypy" prefix, any option).
    "type: ignore": re.compile(r"\btype\s*:\s*ignore\b|\bmypy\s*:", re.I),
    # pyright: its ignore comment and file-level ones (basic, strict, <rule>=false).
    "pyright: ignore": re.compile(r"\bpyright\s*:", re.I),
    # bandit: a hash, spaces, then nosec (its NOSEC_COMMENT), so "nosecurity" counts too.
    "nosec": re.compile(r"\bnosec\b|#\s*nosec", re.I),
    # semgrep: nosem and nosemgrep, with or without rule ids (and raw lines, below).
    "nosemgrep": re.compile(r"nosem", re.I),
    "pragma: no cover": re.compile(r"\bpragma:\s*no\s*(?:cover|branch)\b", re.I),
    # pylint: any of its directives (disable, disable-next, skip-file, ...).
    "pylint: disable": re.compile(r"\bpylint\s*:", re.I),
    # ruff's own directives other than noqa (above): ignore[...], file-ignore[...], the
    # disable[...] ... enable[...] range; and the isort actions ruff honours (skip_file, off).
    "ruff:": re.compile(r"\bruff\s*:(?!\s*noqa\b)|\bisort\s*:", re.I),
}
# Directives a tool reads from raw lines, strings included.
LINE_DIRECTIVES: dict[str, re.Pattern[str]] = {
    "type: ignore": re.compile(r"^# mypy: "),
    "nosemgrep": re.compile(r" nosem", re.I),
}
# Decorators that turn the type checker off for a function or class: `what` of their hits.
NO_TYPE_CHECK = frozenset({"no_type_check", "no_type_check_decorator"})


@dataclass(frozen=True)
class Suppression:
    line: int
    kinds: tuple[str, ...]
    comment: str
    # The code the comment is attached to, stripped: how a moved line is recognised.
    code: str


def find_suppressions(text: str) -> list[Suppression]:
    """Return every comment or line in Python source ``text`` that suppresses a tool, in line order."""
    # Split on \n only, as git, the tokenizer and mypy count lines (not on \f or \x1c).
    lines = text.split("\n")
    found: dict[int, tuple[set[str], str, str]] = {}
    for line, col, comment in comments(text):
        kinds = {kind for kind, pattern in SUPPRESSIONS.items() if pattern.search(comment)}
        if kinds:
            code = lines[line - 1][:col].strip() if line <= len(lines) else ""
            found[line] = (kinds, comment, code)
    for number, raw in enumerate(lines, start=1):
        kinds = {kind for kind, pattern in LINE_DIRECTIVES.items() if pattern.search(raw)}
        if not kinds:
            continue
        if number in found:
            found[number][0].update(kinds)
        else:
            # Not in a comment token: in a string. The whole line is both what is shown and the key.
            found[number] = (kinds, raw.strip(), raw.strip())
    order = list(SUPPRESSIONS)
    return [
        Suppression(line, tuple(sorted(kinds, key=order.index)), comment, code)
        for line, (kinds, comment, code) in sorted(found.items())
    ]


def type_check_offs(tree: ast.Module) -> list[Hit]:
    """Return each statement that names or imports ``no_type_check``: mypy skips what it decorates.

    The import counts too, and so does a name it was imported as (``@ntc``).
    """
    imported = import_aliases(tree)
    aliased = {local for local, full in imported.items() if full.rpartition(".")[2] in NO_TYPE_CHECK}
    hits = []
    for loc in located(tree):
        for node in loc.nodes:
            if isinstance(node, ast.alias):
                name: str | None = node.name.rpartition(".")[2]
            elif isinstance(node, ast.Name):
                name = "no_type_check" if node.id in aliased else node.id
            else:
                name = node.attr if isinstance(node, ast.Attribute) else None
            if name in NO_TYPE_CHECK:
                hits.append(loc.hit(f"@{name}"))
                break
    return hits


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
