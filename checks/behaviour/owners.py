"""The host's side of name ownership in a behaviour run (pure; docs/behaviour.md, "Who owns each name").

Every importable name in a run has one owner: the grader's tools (the
standard library, pytest and the rest of the image), the suite or the
subject (the change's tree). The grader decides the tools' names itself,
from what its own ``sys.path`` holds (``incontainer/grader/names.py``);
the host computes, from trusted files only, the subject's names (both
trees), the suite's names (``suites.own_names``), and what follows from
them that a maintainer must read:

- a suite name the tree provides too: the suite's module is used;
- a change to a tree module named like a standard-library module, or like
  the test runner itself (pytest, ``_pytest``): the tests import the
  grader's, so no suite can test that code.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from checks.behaviour.incontainer.grader.names import runner_names
from checks.behaviour.result import Note
from checks.testinfra.files import is_test_path
from checks.toolnames import STDLIB, top_level
from checks.workspace import ChangedFile

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def module_names(*trees: Path) -> list[str]:
    """Return the top-level module names the trees provide (at their root and under ``src/``).

    These are the subject's: a test's import of one of them is served by the
    code under test (``import json`` stays the grader's own, whatever the
    repository holds).
    """
    names: set[str] = set()
    for tree in trees:
        for base in (tree, tree / "src"):
            if not base.is_dir():
                continue
            for entry in os.scandir(base):
                name = entry.name[:-3] if entry.name.endswith(".py") and entry.is_file() else entry.name
                importable = entry.is_dir(follow_symlinks=False) or entry.name.endswith(".py")
                if importable and _IDENTIFIER.match(name):
                    names.add(name)
    return sorted(names)


def served_names(modules: Iterable[str], suite_names: Iterable[str]) -> frozenset[str]:
    """The tree's top-level names a test's import gets from the subject: not the suite's own, and
    never the standard library's or the test runner's (the grader's own tools it may also use aside)."""
    return frozenset(modules) - frozenset(suite_names) - STDLIB - runner_names()


def unservable_changes(changed: Iterable[ChangedFile]) -> list[str]:
    """Name each changed tree module that the grader's own module of that name shadows, as a reason to read.

    The grader and the subject both run on the standard library, and pytest
    runs the suite, so a tree module named like one of theirs
    (``statistics.py``, ``_pytest/``) is never the one a test gets: the
    change's code there cannot be tested, and saying so is the host's job
    (the subject's own report of what it ran is not evidence).
    """
    runner = runner_names()
    found: dict[str, str] = {}
    for f in changed:
        if f.status == "deleted" or not f.path.endswith(".py") or is_test_path(f.path):
            continue
        name = top_level(f.path)
        if name is not None and (name in STDLIB or name in runner) and name not in found:
            found[name] = f.path
    return [
        f"the change edits {path}, in a module named like the "
        f"{'standard library' if name in STDLIB else 'test runner'}'s {name!r}: tests import that one, "
        "so no suite can test this code"
        for name, path in sorted(found.items())
    ]


def suite_shadows(suite_names: Iterable[str], tree_names: Iterable[str]) -> Note | None:
    """Say which of the suite's own modules the tree provides too (the suite's are the ones used)."""
    both = sorted(set(suite_names) & set(tree_names))
    if not both:
        return None
    listed = ", ".join(both[:10]) + (" ..." if len(both) > 10 else "")
    return Note(
        f"the suite's own modules are used where the tree has modules of the same names: {listed}",
        "the suite's own modules are used where the tree has modules of the same names",
    )
