"""checks.shape.hygiene.suppressions: real suppression comments only, and only the ones the change added."""

from __future__ import annotations

import pytest

from checks.shape.hygiene.suppressions import find_suppressions, new_suppressions


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import os  # noqa\n", [(1, ("noqa",))]),
        ("import os  # NOQA: F401\n", [(1, ("noqa",))]),
        ("# ruff: noqa\n", [(1, ("noqa",))]),
        ("# flake8: noqa: E501\n", [(1, ("noqa",))]),
        ("x = f()  # type: ignore\n", [(1, ("type: ignore",))]),
        ("x = f()  # type:ignore[attr-defined]\n", [(1, ("type: ignore",))]),
        ("# mypy: ignore-errors\n", [(1, ("type: ignore",))]),
        ("# mypy: disable-error-code=attr-defined\n", [(1, ("type: ignore",))]),
        ("x = f()  # pyright: ignore[reportGeneralTypeIssues]\n", [(1, ("pyright: ignore",))]),
        ("subprocess.call(x, shell=True)  # nosec B602\n", [(1, ("nosec",))]),
        ("eval(x)  # nosemgrep: python.eval\n", [(1, ("nosemgrep",))]),
        ("if x:  # pragma: no cover\n    pass\n", [(1, ("pragma: no cover",))]),
        ("if x:  # pragma: no branch\n    pass\n", [(1, ("pragma: no cover",))]),
        ("def f():  # pylint: disable=invalid-name\n    pass\n", [(1, ("pylint: disable",))]),
        ("x = f()  # type: ignore  # noqa: E501\n", [(1, ("noqa", "type: ignore"))]),
        # Not suppressions: strings, docstrings, ordinary comments, look-alike words.
        ("s = '# noqa'\n", []),
        ("s = '''\n# type: ignore\n'''\n", []),
        ('def f():\n    """Add # nosec when sure."""\n', []),
        ("s = f'{x}  # noqa'\n", []),
        ("# the type: of this is ignored by nobody\n", []),
        ("# noqaish\n", []),
        ("x = 1  # a comment\n", []),
    ],
)
def test_find_suppressions(source: str, expected: list[tuple[int, tuple[str, ...]]]) -> None:
    assert [(s.line, s.kinds) for s in find_suppressions(source)] == expected


def test_tokenizing_stops_quietly_at_broken_source() -> None:
    found = find_suppressions("x = 1  # noqa\ny = (\n")
    assert [(s.line, s.kinds) for s in found] == [(1, ("noqa",))]
    assert find_suppressions("\tif x:\n  y  # noqa\n z\n") is not None


def test_only_changed_lines_count() -> None:
    head = "import os  # noqa\nimport sys  # noqa\n"
    found, old = new_suppressions(None, head, frozenset({2}))
    assert [(s.line, s.kinds) for s in found] == [(2, ("noqa",))] and old == 0


def test_a_suppressed_line_that_moved_is_not_new() -> None:
    base = "import os  # noqa\n"
    head = "x = 1\n\nif x:\n    import os  # noqa\n"
    found, old = new_suppressions(base, head, frozenset({1, 2, 3, 4}))
    assert found == [] and old == 1


def test_a_suppression_on_an_edited_line_is_new() -> None:
    base = "x = f()  # type: ignore\n"
    head = "x = f(1)  # type: ignore\n"
    found, _ = new_suppressions(base, head, frozenset({1}))
    assert [(s.line, s.kinds) for s in found] == [(1, ("type: ignore",))]


def test_a_second_copy_of_an_old_suppression_is_new() -> None:
    base = "import os  # noqa\n"
    head = "import os  # noqa\nimport os  # noqa\n"
    found, old = new_suppressions(base, head, frozenset({1, 2}))
    assert len(found) == 1 and old == 1


def test_a_new_kind_on_an_old_line_is_new() -> None:
    base = "import os  # noqa\n"
    head = "import os  # noqa  # type: ignore\n"
    found, _ = new_suppressions(base, head, frozenset({1}))
    assert [s.kinds for s in found] == [("type: ignore",)]
