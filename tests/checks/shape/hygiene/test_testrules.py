"""The hygiene rules on test files, through the gate on real git changes: passing, failing, hostile."""

from __future__ import annotations

import pytest

from checks.shape.hygiene.testrules import line_after_removal
from tests.checks.shape.conftest import Files, Found, Gate, found, src

SQUARES = src("""
    import pytest


    def check_square(x, want):
        assert square(x) == want
        assert square(-x) == want


    def test_square():
        assert square(2) == [4]
        assert square(3) == [9]


    @pytest.mark.parametrize("x, want", [(2, 4), (3, 9)])
    def test_cases(x, want):
        check_square(x, want)
""")
T = "tests/test_sq.py"
HELPER = "    assert square(x) == want\n    assert square(-x) == want\n"
SECOND = "    assert square(3) == [9]\n"

CASES: list[tuple[str, Files, Files, Found]] = [
    # --- assert-tautology
    ("check kept", {T: SQUARES}, {T: SQUARES + "\n\ndef test_more():\n    assert square(4) == [16]\n"}, []),
    (
        "determinism check added next to the real one",
        {T: SQUARES},
        {T: SQUARES.replace(SECOND, SECOND + "    assert square(3) != []\n")},
        [],
    ),
    (
        "expected value replaced by the call itself",
        {T: SQUARES},
        {T: SQUARES.replace("assert square(2) == [4]", "assert square(2) == square(2)")},
        [("assert-tautology", T, 10)],
    ),
    (
        "tautology in parentheses across lines",
        {T: SQUARES},
        {T: SQUARES.replace("assert square(2) == [4]", "assert (square( 2 )\n            ==  (square(2)))")},
        [("assert-tautology", T, 10)],
    ),
    (
        "tautology through a walrus",
        {T: SQUARES},
        {T: SQUARES.replace("assert square(2) == [4]", "assert (r := square(2)) == r")},
        [("assert-tautology", T, 10)],
    ),
    (
        "check or True",
        {T: SQUARES},
        {T: SQUARES.replace("assert square(2) == [4]", "assert square(2) == [4] or True")},
        [("assert-tautology", T, 10)],
    ),
    (
        "tautology in a new test",
        {T: SQUARES},
        {T: SQUARES + "\n\ndef test_cube():\n    assert cube(2) == cube(2)\n"},
        [("assert-tautology", T, 20)],
    ),
    (
        "unittest assertEqual of a value with itself",
        {"tests/test_u.py": "import unittest\n"},
        {
            "tests/test_u.py": "import unittest\n\n\nclass T(unittest.TestCase):\n    def test_a(self):\n"
            "        self.assertEqual(f(1), f(1))\n"
        },
        [("assert-tautology", "tests/test_u.py", 6)],
    ),
    (
        "tautology in non-test code is no test",
        {"src/m.py": "x = 1\n"},
        {"src/m.py": "x = 1\n\n\ndef test_f():\n    assert f() == f()\n"},
        [],
    ),
    # --- expected-changed
    (
        "expected value kept, input reformatted",
        {T: SQUARES},
        {T: SQUARES.replace("assert square(2) == [4]", "assert square( 2 ) == [ 4 ]")},
        [],
    ),
    (
        "expected literal changed",
        {T: SQUARES},
        {T: SQUARES.replace("assert square(2) == [4]", "assert square(2) == [5]")},
        [("expected-changed", T, 10)],
    ),
    (
        "expected literal changed and moved",
        {T: SQUARES},
        {
            T: SQUARES.replace(
                "    assert square(2) == [4]\n    assert square(3) == [9]\n",
                "    assert square(3) == [9]\n    assert square(2) == [5]\n",
            )
        },
        [("expected-changed", T, 11)],
    ),
    (
        "expected value changed through a variable",
        {
            T: SQUARES.replace(
                "    assert square(2) == [4]\n", "    want = [4]\n    assert square(2) == want\n"
            )
        },
        {
            T: SQUARES.replace(
                "    assert square(2) == [4]\n", "    want = [5]\n    assert square(2) == want\n"
            )
        },
        [("expected-changed", T, 10)],
    ),
    (
        "parametrized expectation changed",
        {T: SQUARES},
        {T: SQUARES.replace("(3, 9)]", "(3, 10)]")},
        [("expected-changed", T, 14)],
    ),
    ("parametrized case added", {T: SQUARES}, {T: SQUARES.replace("(3, 9)]", "(3, 9), (4, 16)]")}, []),
    (
        "a helper's check rewritten, not a literal changed",
        {T: SQUARES},
        {T: SQUARES.replace("assert square(x) == want", "assert square(x) == abs(want)")},
        [],
    ),
    # --- helper-weakened
    (
        "helper kept, its caller edited",
        {T: SQUARES},
        {T: SQUARES.replace("check_square(x, want)\n", "check_square(x, want=want)\n")},
        [],
    ),
    (
        "helper's asserts became return None",
        {T: SQUARES},
        {T: SQUARES.replace(HELPER, "    return None\n")},
        [("helper-weakened", T, 4)],
    ),
    (
        "helper returns before its asserts",
        {T: SQUARES},
        {T: SQUARES.replace("    assert square(x) == want\n", "    return\n    assert square(x) == want\n")},
        [("helper-weakened", T, 4)],
    ),
    (
        "helper's asserts under if False",
        {T: SQUARES},
        {T: SQUARES.replace(HELPER, "    if False:\n" + HELPER.replace("    ", "        "))},
        [("helper-weakened", T, 4)],
    ),
    (
        "helper's check made a tautology",
        {T: SQUARES},
        {T: SQUARES.replace("assert square(-x) == want", "assert square(-x) == square(-x)")},
        [("assert-tautology", T, 6)],
    ),
    (
        "helper in a root conftest.py hollowed",
        {"conftest.py": "def ok(r):\n    assert r.status == 200\n"},
        {"conftest.py": "def ok(r):\n    return None\n"},
        [("helper-weakened", "conftest.py", 1), ("test-config-edited", "conftest.py", 2)],
    ),
]


@pytest.mark.parametrize(("base", "head", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_rule(gate: Gate, base: Files, head: Files, expected: Found) -> None:
    result = gate(base, head)
    assert result.tool.status == "ok"
    assert sorted(found(result)) == sorted(expected)


def test_findings_quote_the_checks(gate: Gate) -> None:
    result = gate(
        {T: SQUARES},
        {
            T: SQUARES.replace("assert square(2) == [4]", "assert square(2) == [5]")
            .replace("assert square(3) == [9]", "assert square(3) == square(3)")
            .replace("    assert square(-x) == want\n", "")
        },
    )
    by_rule = {f.rule: f for f in result.findings}
    assert set(by_rule) == {"expected-changed", "assert-tautology", "helper-weakened"}
    changed = by_rule["expected-changed"]
    assert "test_square" in changed.message
    assert "`square(2) == [4]` at base, `square(2) == [5]` now" in changed.message
    assert "`square(3) == square(3)`" in by_rule["assert-tautology"].message
    assert "check_square" in by_rule["helper-weakened"].message and "2 check(s) at base, 1 now" in (
        by_rule["helper-weakened"].message
    )
    assert all(f.needs_maintainer and f.severity == "error" for f in result.findings)


@pytest.mark.parametrize(
    ("base", "head", "line", "expected"),
    [
        ("a\nb\nc\n", "a\nb\nc\n", 2, 2),  # unchanged: the same line
        ("x\na\nb\n", "a\nb\n", 2, 1),  # a line above removed: shifted up
        ("a\nt1\nt2\nb\n", "a\nb\n", 3, 2),  # removed: the line that followed
        ("a\nt1\n", "a\n", 2, 1),  # removed at the end: the last line
        ("t1\nt2\n", "", 1, 1),  # nothing left: line 1
        ("a\nt1\nb\n", "a\nnew\nb\n", 2, 2),  # replaced: what replaced it
    ],
)
def test_line_after_removal(base: str, head: str, line: int, expected: int) -> None:
    assert line_after_removal(base, head, line) == expected


def test_line_after_removal_on_huge_files_stays_linear() -> None:
    # Shared starts and ends are matched line by line, however long the file.
    assert line_after_removal("a\n" * 30_000, "b\n" + "a\n" * 30_000, 500) == 501
    # A hostile middle (difflib needs a minute on 19,000 reversed lines) maps to its first line.
    lines = [f"    assert x{i % 100}" for i in range(19_000)]
    base = "def test_a():\n" + "\n".join(lines) + "\ndef test_z():\n    pass\n"
    head = "def test_a():\n" + "\n".join(reversed(lines)) + "\n"
    assert line_after_removal(base, head, 19_002) == 2
