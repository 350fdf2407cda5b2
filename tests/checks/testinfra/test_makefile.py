"""checks.testinfra.makefile: only edits to what `make test` runs count."""

from __future__ import annotations

import pytest

from checks.testinfra.config import config_changes
from checks.testinfra.makefile import recipe_of_tests

MAKEFILE = """\
PYTEST_ARGS = -q $(EXTRA)
EXTRA = --strict-markers
VERSION = 1.0

.PHONY: test release build

test: build
\tpytest $(PYTEST_ARGS) tests/

build:
\tpython -m build

release:
\ttwine upload dist/*-$(VERSION)*
"""

CASES: list[tuple[str, str, bool]] = [
    ("the release recipe", MAKEFILE.replace("twine upload", "twine upload --sign"), False),
    ("a variable only the release uses", MAKEFILE.replace("VERSION = 1.0", "VERSION = 1.1"), False),
    ("a comment", MAKEFILE.replace(".PHONY", "# the targets\n.PHONY"), False),
    ("the test recipe", MAKEFILE.replace("tests/", "tests/ --deselect tests/test_a.py::test_x"), True),
    ("the test recipe ignores failures", MAKEFILE.replace("\tpytest", "\t-pytest"), True),
    ("a variable the test recipe uses", MAKEFILE.replace("-q $(EXTRA)", "-q -k 'not slow' $(EXTRA)"), True),
    ("a variable it uses through another", MAKEFILE.replace("--strict-markers", "-p no:warnings"), True),
    ("a variable appended later", MAKEFILE + "PYTEST_ARGS += -x\n", True),
    ("a prerequisite's recipe", MAKEFILE.replace("python -m build", "python -m build && rm -rf tests"), True),
    (
        "a target-specific variable",
        MAKEFILE.replace("test: build", "test: PYTEST_ARGS = -k nothing\ntest: build"),
        True,
    ),
    ("an include", "include extra.mk\n" + MAKEFILE, True),
    ("the test target removed", MAKEFILE.replace("test: build\n\tpytest $(PYTEST_ARGS) tests/\n", ""), True),
    ("a new target running pytest", MAKEFILE + "\nquick:\n\tpytest -x -k fast\n", True),
    (
        "pytest hidden behind a line continuation",
        MAKEFILE + "\nquick:\n\techo start && \\\n\t  py.test -k fast\n",
        True,
    ),
    (
        "a define block the recipe uses",
        MAKEFILE.replace("\tpytest $(PYTEST_ARGS) tests/", "\t$(RUN)") + "define RUN\npytest -k x\nendef\n",
        True,
    ),
]


@pytest.mark.parametrize(("head", "changed"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_only_test_targets_count(head: str, changed: bool) -> None:
    assert (recipe_of_tests(head) != recipe_of_tests(MAKEFILE)) is changed
    kinds = [kind for kind, _ in config_changes("Makefile", MAKEFILE.encode(), head.encode())]
    assert kinds == (["make"] if changed else [])


def test_what_a_test_target_is() -> None:
    rules = recipe_of_tests(MAKEFILE + "\ncheck-types:\n\tmypy .\n\ndocs:\n\tsphinx-build docs out\n")
    chosen = rules["rules"]
    assert isinstance(chosen, dict)
    # Named like a test, or running a test tool; with what it depends on; never the docs.
    assert sorted(chosen) == ["build", "check-types", "test"]
    assert rules["variables"] == {"EXTRA": ["--strict-markers"], "PYTEST_ARGS": ["-q $(EXTRA)"]}


def test_a_makefile_that_is_not_utf8_counts_as_changed() -> None:
    assert [k for k, _ in config_changes("Makefile", MAKEFILE.encode(), b"test:\n\t\xff\n")] == ["make"]


def test_a_line_of_spaces_without_a_colon_parses_at_once() -> None:
    # Hostile: the rule pattern's lazy targets before ``\s*`` backtracked quadratically over a long
    # line with no colon - minutes for this line, hours for one of megabytes (the GIL held
    # throughout). Linear now; the config reader also refuses such lines.
    line = "release" + " " * 300_000 + "x\n"
    assert recipe_of_tests(line + "test:\n\tpytest\n")["rules"] == {"test": ([], ["pytest"])}
