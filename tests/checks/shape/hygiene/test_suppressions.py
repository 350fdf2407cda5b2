"""checks.shape.hygiene.suppressions: real suppression comments only, and only the ones the change added."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest

from checks.shape.hygiene.suppressions import find_suppressions, new_suppressions, type_check_offs
from sandbox.host import run_process


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
        # Any directive of a tool patchgate runs, whatever its options (each was missed before).
        ("# mypy: ignore_errors=True\n", [(1, ("type: ignore",))]),
        ("# mypy: strict-optional=True, ignore-errors\n", [(1, ("type: ignore",))]),
        ("# mypy: check-untyped-defs=False\n", [(1, ("type: ignore",))]),
        ("#mypy:disallow-untyped-defs=False\n", [(1, ("type: ignore",))]),
        ("x = 1  # nosem\n", [(1, ("nosemgrep",))]),
        ("x = 1  # NOSEM: rules.swallowed-exception\n", [(1, ("nosemgrep",))]),
        ("x = 1  # nosemantics\n", [(1, ("nosemgrep",))]),
        ("# ruff: disable[F841]\nx = 1\n# ruff: enable[F841]\n", [(1, ("ruff:",)), (3, ("ruff:",))]),
        ("x = 1  # ruff: ignore[F841]\n", [(1, ("ruff:",))]),
        ("# ruff : file-ignore[F841]\n", [(1, ("ruff:",))]),
        ("#   ruff  :  noqa\n", [(1, ("noqa",))]),
        ("# isort: skip_file\n", [(1, ("ruff:",))]),
        ("# flake8: noqa\n", [(1, ("noqa",))]),
        ("x = f()  # pyright: basic\n", [(1, ("pyright: ignore",))]),
        ("# pylint: skip-file\n", [(1, ("pylint: disable",))]),
        ("a = int('1')  #nosec\n", [(1, ("nosec",))]),
        ("a = int('1')  # nosecurity\n", [(1, ("nosec",))]),
        # Directives two tools read from raw lines, strings included: mypy's inline configuration
        # (a line that starts with it) and semgrep's nosem (a space before it, anywhere on the line).
        ('s = """\n# mypy: ignore-errors\n"""\n', [(2, ("type: ignore",))]),
        ("x = f(' nosemgrep')\n", [(1, ("nosemgrep",))]),
        ('s = """\n   NoSem\n"""\n', [(2, ("nosemgrep",))]),
        # Not suppressions: strings, docstrings, ordinary comments, look-alike words.
        ("s = '# noqa'\n", []),
        ("s = '''\n# type: ignore\n'''\n", []),
        ('def f():\n    """Add # nosec when sure."""\n', []),
        ("s = f'{x}  # noqa'\n", []),
        ("# the type: of this is ignored by nobody\n", []),
        ("# noqaish\n", []),
        ("x = 1  # a comment\n", []),
        ("s = 'mypy: ignore-errors'\n", []),
        ("s = '  # mypy: ignore-errors'\n", []),
        ("s = '#nosem'\n", []),
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


@pytest.mark.parametrize(
    ("source", "lines"),
    [
        ("import typing\n\n\n@typing.no_type_check\ndef f():\n    pass\n", [(4, 5)]),
        ("import typing as t\n\n\nclass C:\n    @t.no_type_check\n    def m(self):\n        ...\n", [(5, 6)]),
        # The import counts, and the name it was imported as.
        ("from typing import no_type_check as ntc\n\n\n@ntc\ndef f():\n    pass\n", [(1, 1), (4, 5)]),
        ("from typing_extensions import no_type_check\n", [(1, 1)]),
        ("import typing\n\n\n@typing.overload\ndef f():\n    pass\n", []),
    ],
)
def test_type_check_offs(source: str, lines: list[tuple[int, int]]) -> None:
    assert [(h.line, h.end_line) for h in type_check_offs(ast.parse(source))] == lines


def tool(*argv: str, cwd: Path) -> str:
    """Run a tool of this environment (the sandbox image pins the same ruff and mypy); return its stdout."""
    result = run_process((sys.executable, "-m", *argv), cwd=cwd, timeout=120, what=argv[0])
    assert not result.stderr.strip(), result.stderr.decode()
    return result.stdout.decode()


# Each hides an unused variable from ruff (F841); the last, with no directive, shows ruff finds it.
RUFF_HIDDEN = {
    "ignore": "def f():\n    x = 1  # ruff: ignore[F841]\n",
    "spaced": "def f():\n    x = 1  # ruff : ignore[F841]\n",
    "range": "def f():\n    # ruff: disable[F841]\n    x = 1\n    # ruff: enable[F841]\n",
    "unmatched": "def f():\n    # ruff: disable[F841]\n    x = 1\n",
    "file": "# ruff: file-ignore[F841]\ndef f():\n    x = 1\n",
    "file_noqa": "#   ruff  :  noqa\ndef f():\n    x = 1\n",
    "flake8": "# flake8: noqa: F841\ndef f():\n    x = 1\n",
}


def test_every_ruff_directive_that_hides_a_finding_is_flagged(tmp_path: Path) -> None:
    for name, source in {**RUFF_HIDDEN, "control": "def f():\n    x = 1\n"}.items():
        (tmp_path / f"{name}.py").write_text(source)
    out = tool("ruff", "check", "--isolated", "--select=F841", "--output-format=json", ".", cwd=tmp_path)
    assert {Path(d["filename"]).stem for d in json.loads(out)} == {"control"}  # ruff honours every one
    for name, source in RUFF_HIDDEN.items():
        assert find_suppressions(source), name


# Each hides a type error from mypy; the control, with none, shows mypy finds it.
MYPY_HIDDEN = {
    "underscore": "# mypy: ignore_errors=True\nx: int = 'a'\n",
    "second": "# mypy: strict-optional=True, ignore-errors\nx: int = 'a'\n",
    "untyped": "# mypy: check-untyped-defs=False\ndef f():\n    x: int = 'a'\n",
    # Read from raw lines: a string's line is inline configuration unless the native parser is on.
    "in_a_string": 'x: int = "a"\nS = """\n# mypy: ignore-errors\n"""\n',
    "decorated": "from typing import no_type_check as ntc\n\n\n@ntc\ndef f() -> None:\n    x: int = 'a'\n",
}


def test_every_mypy_directive_that_hides_an_error_is_flagged(tmp_path: Path) -> None:
    control = {"control": "def f():\n    x: int = 'a'\n"}
    for name, source in {**MYPY_HIDDEN, **control}.items():
        (tmp_path / f"{name}.py").write_text(source)
    argv = ("mypy", "--no-incremental", "--config-file", "", "--check-untyped-defs", "--no-native-parser")
    out = tool(*argv, "--no-error-summary", *(f"{n}.py" for n in (*MYPY_HIDDEN, *control)), cwd=tmp_path)
    assert {line.split(".py:")[0] for line in out.splitlines() if ": error:" in line} == {"control"}
    for name, source in MYPY_HIDDEN.items():
        assert find_suppressions(source) or type_check_offs(ast.parse(source)), name
