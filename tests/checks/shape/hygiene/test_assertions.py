"""checks.shape.hygiene.assertions: what a test checks, by content, so rewriting a check is seen."""

from __future__ import annotations

import ast
from textwrap import dedent

import pytest

from checks.shape.hygiene.assertions import Expectation, compare, expectations, tautological


def checks_of(source: str) -> tuple[Expectation, ...]:
    tree = ast.parse(dedent(source))
    fn = tree.body[-1]
    assert isinstance(fn, ast.FunctionDef)
    return expectations(fn, {"pytest": "pytest"})


@pytest.mark.parametrize(
    ("check", "cannot_fail"),
    [
        # Real checks.
        ("f(x) == [4]", False),
        ("f(x) == f(y)", False),
        ("f(x) != f(x)", False),  # always false, which fails loudly: not a way to pass
        ("a < a", False),
        ("x in [y]", False),
        ("f(x) == [4] or g(x)", False),
        ("True", False),  # no check at all: counted by assert-weakened, not called a tautology
        # Tautologies.
        ("f(x) == f(x)", True),
        ("f(x) is f(x)", True),
        ("f(x) >= f(x)", True),
        ("a < b == b", True),
        ("x in [1, x]", True),
        ("not (f(x) != f(x))", True),
        ("(x == 1, 'message')", True),  # a non-empty tuple is always true
        ("f(x) == [4] or True", True),
        ("f(x) == [4] or [1]", True),
        ("a == a and b == b", True),
        # Hostile spellings of the same tautology: parentheses, spacing, line breaks, a walrus.
        ("(f(x)) == ((f(x)))", True),
        ("f( x ) ==f(x)", True),
        ("(f(x)\n    ==\n f(x))", True),
        ("(r := f(x)) == r", True),
        ("r == (r := f(x))", True),
    ],
)
def test_tautological(check: str, cannot_fail: bool) -> None:
    tree = ast.parse(f"assert {check}")
    node = tree.body[0]
    assert isinstance(node, ast.Assert)
    assert tautological(node.test) is cannot_fail


@pytest.mark.parametrize(
    ("call", "cannot_fail"),
    [
        ("self.assertEqual(f(x), [4])", False),
        ("self.assertEqual(f(x), f(x))", True),
        ("self.assertListEqual(a.b, a.b)", True),
        ("np.testing.assert_array_equal(arr, arr)", True),
        ("self.assertIs(a, a)", True),
        ("self.assertIn(a, [a, b])", True),
        ("self.assertTrue(f(x) == f(x))", True),
        ("self.assertTrue(f(x))", False),
        ("self.assertNotEqual(a, a)", False),  # always fails: loud, not a way to pass
    ],
)
def test_tautological_assert_calls(call: str, cannot_fail: bool) -> None:
    found = checks_of(f"def test_a(self):\n    {call}\n")
    assert [e.tautology for e in found] == [cannot_fail]


def test_expectations_include_bound_values_and_parametrize_cases() -> None:
    found = checks_of("""
        import pytest

        @pytest.mark.parametrize("x, want", [(2, 4), (3, 9)])
        def test_square(x, want):
            expected = [want]
            unrelated = 7
            assert True
            assert square(x) == expected
    """)
    assert [e.text for e in found] == ["(2, 4)", "(3, 9)", "expected = [want]", "square(x) == expected"]


def changes(base: str, head: str) -> tuple[list[tuple[str, str]], list[str]]:
    changed, tautologies = compare(checks_of(base), checks_of(head))
    return [(c.before, c.after) for c in changed], [t.text for t in tautologies]


BASE = "def test_f():\n    assert f(2) == [4]\n    assert g(2) == 'x'\n"


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        # Pass: unchanged, moved, reformatted, or a check added.
        (BASE, ([], [])),
        ("def test_f():\n    assert g(2) == 'x'\n    assert f(2) == [4]\n", ([], [])),
        ("def test_f():\n    assert (f(2) ==\n            [4])\n    assert g(2) == 'x'\n", ([], [])),
        (BASE + "    assert f(3) == [9]\n", ([], [])),
        # Fail: the expected literal changed, in place or through a variable.
        (
            "def test_f():\n    assert f(2) == [5]\n    assert g(2) == 'x'\n",
            ([("f(2) == [4]", "f(2) == [5]")], []),
        ),
        (
            "def test_f():\n    assert f(2) == [4, 5]\n    assert g(2) == 'x'\n",
            ([("f(2) == [4]", "f(2) == [4, 5]")], []),
        ),
        (
            "def test_f():\n    assert f(2) == -4\n    assert g(2) == 'x'\n",
            ([("f(2) == [4]", "f(2) == -4")], []),
        ),
        # Fail: replaced by a tautology.
        ("def test_f():\n    assert f(2) == f(2)\n    assert g(2) == 'x'\n", ([], ["f(2) == f(2)"])),
        ("def test_f():\n    assert ( f(2) )==(f(2))\n    assert g(2) == 'x'\n", ([], ["f(2) == f(2)"])),
    ],
)
def test_compare(head: str, expected: tuple[list[tuple[str, str]], list[str]]) -> None:
    assert changes(BASE, head) == expected


def test_a_changed_value_bound_before_the_assert() -> None:
    base = "def test_f():\n    expected = [4]\n    assert f(2) == expected\n"
    head = "def test_f():\n    expected = [5]\n    assert f(2) == expected\n"
    assert changes(base, head) == ([("expected = [4]", "expected = [5]")], [])


def test_a_changed_parametrize_case() -> None:
    base = (
        "import pytest\n@pytest.mark.parametrize('x, want', [(2, 4), (3, 9)])\n"
        "def test_f(x, want):\n    pass\n"
    )
    assert changes(base, base.replace("(3, 9)", "(3, 10)")) == ([("(3, 9)", "(3, 10)")], [])
    # A case added keeps the old ones: nothing changed.
    assert changes(base, base.replace("(3, 9)", "(3, 9), (4, 16)")) == ([], [])


def test_texts_are_shortened() -> None:
    long = " + ".join(["value"] * 40)
    found = checks_of(f"def test_f():\n    assert f() == {long}\n")
    assert len(found[0].text) == 100 and found[0].text.endswith("...")
