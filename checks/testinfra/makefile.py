"""The test targets of a Makefile: what `make test` runs, so only edits to that count.

A Makefile usually builds, lints and releases too; a PR that edits its
release target is not touching the tests. A target counts as a test target
when its name says so (`test`, `check`, `coverage`, `test-unit`, `ci`...) or
its recipe runs a test tool (pytest, tox, nox, unittest, coverage, hatch);
with it count the targets it depends on and the variables it uses, however
indirectly, and every `include`. This is a reading of make's syntax good for
comparing two versions, not an evaluator: conditionals are not followed.
"""

from __future__ import annotations

import re

_NAMES = frozenset({"Makefile", "makefile", "GNUmakefile"})
_TEST_TARGET = re.compile(
    r"(?:^|[-_./])(?:test|tests|check|checks|cov|coverage|pytest|tox|nox|ci|unittest|integration)(?:$|[-_./])",
    re.IGNORECASE,
)
_TEST_COMMAND = re.compile(
    r"(?:^|[^\w-])(?:pytest|py\.test|tox|nox|unittest|nosetests|coverage|trial|hatch\s+(?:test|run))(?:$|[^\w-])"
)
_ASSIGN = re.compile(
    r"^(?:(?:export|override|private)\s+)*([^\s:#=!?+]+)\s*(?::::=|::=|:=|\?=|\+=|!=|=)(.*)$"
)
# Linear on any line: the targets' own class runs up to the colon (a lazy one followed by ``\s*``
# backtracked quadratically over a line of spaces with no colon - hours for one line of megabytes).
_RULE = re.compile(r"^([^:#=]+)::?(?!=)(.*)$")
# $(NAME), ${NAME}, ${NAME:.c=.o}: a reference to a variable (or a function, which names none).
_REFERENCE = re.compile(r"\$[({]([^)}:\s$]+)")
_INCLUDE = re.compile(r"^-?s?include\s")
_COMMENT = re.compile(r"(?<!\\)#.*")

Rules = dict[str, tuple[list[str], list[str]]]


def is_makefile(name: str) -> bool:
    """Return True for a Makefile's name (Makefile, makefile, GNUmakefile, *.mk)."""
    return name in _NAMES or name.endswith(".mk")


def recipe_of_tests(text: str) -> dict[str, object]:
    """Return the test targets' rules, what they depend on, the variables they use, and the includes."""
    rules, variables, includes = _parse(text)
    pending = [
        t
        for t, (_, recipe) in rules.items()
        if _TEST_TARGET.search(t) or any(_TEST_COMMAND.search(line) for line in recipe)
    ]
    chosen: set[str] = set()
    while pending:
        target = pending.pop()
        if target in chosen:
            continue
        chosen.add(target)
        pending += [p for p in rules[target][0] if p in rules]
    used: set[str] = set()
    lines = [line for t in chosen for line in (t, *rules[t][0], *rules[t][1])]
    refs = [ref for line in lines for ref in _REFERENCE.findall(line)]
    while refs:
        name = refs.pop()
        if name in used or name not in variables:
            continue
        used.add(name)
        refs += [ref for value in variables[name] for ref in _REFERENCE.findall(value)]
    return {
        "rules": {t: rules[t] for t in sorted(chosen)},
        "variables": {v: variables[v] for v in sorted(used)},
        "includes": includes,
    }


def _logical_lines(text: str) -> list[str]:
    out: list[str] = []
    pending = ""
    for line in text.splitlines():
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        out.append(pending + line)
        pending = ""
    if pending:
        out.append(pending)
    return out


def _parse(text: str) -> tuple[Rules, dict[str, list[str]], list[str]]:
    rules: Rules = {}
    variables: dict[str, list[str]] = {}
    includes: list[str] = []
    current: list[str] = []
    defining: str | None = None
    for line in _logical_lines(text):
        if defining is not None:
            if line.strip() == "endef":
                defining = None
            else:
                variables[defining].append(line)
            continue
        if line.startswith("\t"):
            # A recipe line belongs to every target of the rule above it.
            for target in current:
                rules[target][1].append(line.strip())
            continue
        code = _COMMENT.sub("", line).strip()
        if not code:
            continue
        if code.startswith("define "):
            defining = code.split(None, 1)[1].rstrip("=:+?! ").strip()
            variables.setdefault(defining, [])
            current = []
        elif _INCLUDE.match(code):
            includes.append(code)
        elif (assign := _ASSIGN.match(code)) is not None:
            variables.setdefault(assign.group(1), []).append(assign.group(2).strip())
            current = []
        elif (rule := _RULE.match(code)) is not None:
            current = rule.group(1).split()
            prerequisites, _, inline = rule.group(2).partition(";")
            for target in current:
                entry = rules.setdefault(target, ([], []))
                entry[0].extend(p for p in prerequisites.split() if p != "|")
                if inline.strip():
                    entry[1].append(inline.strip())
    return rules, variables, includes
