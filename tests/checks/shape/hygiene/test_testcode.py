"""checks.shape.hygiene.testcode: test inventory, assertion counts, skip markers, base matched to head."""

from __future__ import annotations

import ast
from textwrap import dedent

import pytest

from checks.shape.hygiene.testcode import (
    MODULE_SCOPE,
    ChangedTestModule,
    CollectedTest,
    ModuleFacts,
    count_assertions,
    match_tests,
    module_facts,
)


def facts(source: str) -> ModuleFacts:
    return module_facts(ast.parse(dedent(source)))


@pytest.mark.parametrize(
    ("body", "count"),
    [
        ("assert x", 1),
        ("assert x == 1\nassert y", 2),
        ("assert True", 0),
        ("assert 1", 0),
        ("assert 'non-empty'", 0),
        ("assert False, 'unreachable'", 1),
        ("with pytest.raises(ValueError):\n    f()", 1),
        ("with pytest.warns(UserWarning):\n    f()", 1),
        ("self.assertEqual(a, b)\nself.assertIn(a, b)", 2),
        ("mock.assert_called_once_with(1)", 1),
        ("np.testing.assert_allclose(a, b)", 1),
        ("assert_frame_equal(a, b)", 1),
        ("pytest.fail('no')", 1),
        ("print('assert x')", 0),
        ("for x in xs:\n    assert x", 1),
        ("def check(v):\n    assert v\ncheck(1)", 1),
        # Checks that can never run do not count: a hollowed test keeps them as dead code.
        ("return None\nassert x", 0),
        ("raise SystemExit\nassert x", 0),
        ("if False:\n    assert x", 0),
        ("if 0:\n    assert x\nelse:\n    assert y", 1),
        ("while False:\n    assert x", 0),
        ("for x in xs:\n    continue\n    assert x", 0),
        ("if flag:\n    return\nassert x", 1),
        ("assert x\nreturn\nassert y", 1),
        ("with pytest.raises(E):\n    raise E\nassert x", 2),
    ],
)
def test_count_assertions(body: str, count: int) -> None:
    tree = ast.parse(body)
    assert count_assertions(tree, {"pytest": "pytest"}) == count


def test_count_follows_import_aliases() -> None:
    tree = ast.parse("from pytest import raises as r\nwith r(ValueError):\n    f()\n")
    assert count_assertions(tree, {"r": "pytest.raises"}) == 1


def test_tests_are_collected_like_pytest_does() -> None:
    found = facts("""
        import pytest

        def test_top():
            assert 1

        def helper():
            assert 1

        class TestOuter:
            def test_method(self):
                assert 1

            class TestInner:
                async def test_deep(self):
                    assert 1

        def test_shadowed():
            assert 1

        def test_shadowed():
            pass

        def outer():
            def test_nested():
                assert 1

        @pytest.mark.parametrize("x", [1, 2, 3])
        @pytest.mark.parametrize("y", (1, 2))
        def test_cases(x, y):
            assert x

        @pytest.mark.parametrize("x", CASES)
        def test_opaque(x):
            assert x
    """)
    tests = found.tests
    assert sorted(tests) == [
        "TestOuter.TestInner.test_deep",
        "TestOuter.test_method",
        "test_cases",
        "test_opaque",
        "test_shadowed",
        "test_top",
    ]
    # The later definition wins, as it does in Python.
    assert tests["test_shadowed"].asserts == 0
    assert tests["test_cases"].cases == 5
    assert tests["test_opaque"].cases is None
    assert tests["test_top"].cases == 0
    assert tests["test_cases"].line == tests["test_cases"].end_line - 3


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import pytest\n@pytest.mark.skip\ndef test_a(): pass\n", {"test_a": ["pytest.mark.skip"]}),
        (
            "import pytest\n@pytest.mark.skipif(True, reason='')\ndef test_a(): pass\n",
            {"test_a": ["pytest.mark.skipif"]},
        ),
        (
            "import pytest\n@pytest.mark.xfail(strict=False)\ndef test_a(): pass\n",
            {"test_a": ["pytest.mark.xfail"]},
        ),
        ("import pytest as pt\n@pt.mark.xfail\ndef test_a(): pass\n", {"test_a": ["pytest.mark.xfail"]}),
        ("from pytest import mark\n@mark.skip\ndef test_a(): pass\n", {"test_a": ["pytest.mark.skip"]}),
        ("import pytest\ndef test_a():\n    pytest.skip('x')\n", {"test_a": ["pytest.skip"]}),
        ("import pytest\ndef test_a():\n    pytest.xfail('x')\n", {"test_a": ["pytest.xfail"]}),
        ("import pytest\nnp = pytest.importorskip('numpy')\n", {MODULE_SCOPE: ["pytest.importorskip"]}),
        ("import pytest\npytestmark = pytest.mark.skip\n", {MODULE_SCOPE: ["pytest.mark.skip"]}),
        (
            "import pytest\npytestmark = [pytest.mark.slow, pytest.mark.xfail]\n",
            {MODULE_SCOPE: ["pytest.mark.xfail"]},
        ),
        (
            "import pytest\ndef test_a():\n    raise pytest.skip.Exception('x')\n",
            {"test_a": ["pytest.skip.Exception"]},
        ),
        (
            "import unittest\n@unittest.skip('x')\nclass T(unittest.TestCase): pass\n",
            {"T": ["unittest.skip"]},
        ),
        (
            "from unittest import skipIf\nclass T:\n    @skipIf(True, '')\n    def test_a(self): pass\n",
            {"T.test_a": ["unittest.skipIf"]},
        ),
        (
            "import unittest\nclass T:\n    @unittest.expectedFailure\n    def test_a(self): pass\n",
            {"T.test_a": ["unittest.expectedFailure"]},
        ),
        ("class T:\n    def test_a(self):\n        self.skipTest('x')\n", {"T.test_a": ["self.skipTest"]}),
        (
            "from unittest import SkipTest\ndef test_a():\n    raise SkipTest\n",
            {"test_a": ["unittest.SkipTest"]},
        ),
        (
            "import pytest\n@pytest.mark.parametrize('x', [pytest.param(1, marks=pytest.mark.xfail)])\n"
            "def test_a(x): pass\n",
            {"test_a": ["pytest.mark.xfail"]},
        ),
        # Not skips.
        ("import pytest\n@pytest.mark.slow\ndef test_a(): pass\n", {}),
        ("def skip(x): pass\ndef test_a():\n    skip(1)\n", {}),
        ("import pytest\nDOC = 'pytest.mark.skip'\n", {}),
        ("import pytest\ndef test_a():\n    assert pytest.mark.skipper\n", {}),
    ],
)
def test_skip_markers(source: str, expected: dict[str, list[str]]) -> None:
    skips = facts(source).skips
    assert {scope: [m.name for m in marks] for scope, marks in skips.items()} == expected


def _defs(source: str) -> dict[str, CollectedTest]:
    return dict(facts(source).tests)


BASE = """
    def test_a():
        assert f(1)
        assert f(2)

    def test_b():
        assert f(3)
"""


def test_same_file_same_name_is_kept() -> None:
    base = _defs(BASE)
    kept, lost = match_tests(
        [ChangedTestModule("t.py", "t.py", base, _defs(BASE.replace("assert f(2)", "")))]
    )
    assert lost == []
    assert [(k.base.asserts, k.head.asserts) for k in kept] == [(2, 1), (1, 1)]


def test_renamed_unchanged_test_is_kept_and_an_edited_one_is_lost() -> None:
    base = _defs(BASE)
    head = _defs(
        BASE.replace("def test_a", "def test_a_renamed").replace(
            "def test_b():\n        assert f(3)", "def test_c():\n        assert f(4)"
        )
    )
    kept, lost = match_tests([ChangedTestModule("t.py", "t.py", base, head)])
    assert [(k.base.qualname, k.head.qualname) for k in kept] == [("test_a", "test_a_renamed")]
    assert [(g.base_path, g.test.qualname, g.head_path) for g in lost] == [("t.py", "test_b", "t.py")]


def test_moved_between_files_and_into_a_class_is_kept() -> None:
    base = _defs(BASE)
    moved = _defs("class TestA:\n    def test_a(self):\n        assert f(1)\n")
    files = [
        ChangedTestModule("t.py", "t.py", base, _defs("def test_b():\n    assert f(3)\n")),
        ChangedTestModule(None, "u.py", {}, moved),
    ]
    kept, lost = match_tests(files)
    assert lost == []
    assert sorted((k.base.qualname, k.head.qualname, k.head_path) for k in kept) == [
        ("test_a", "TestA.test_a", "u.py"),
        ("test_b", "test_b", "t.py"),
    ]


def test_a_deleted_file_loses_its_tests_unless_they_reappear() -> None:
    base = _defs(BASE)
    kept, lost = match_tests([ChangedTestModule("t.py", None, base, {})])
    assert kept == [] and sorted(g.test.qualname for g in lost) == ["test_a", "test_b"]
    assert all(g.head_path is None for g in lost)
    kept, lost = match_tests(
        [ChangedTestModule("t.py", None, base, {}), ChangedTestModule(None, "v.py", {}, _defs(BASE))]
    )
    assert lost == [] and len(kept) == 2


def test_one_head_test_cannot_stand_in_for_two_base_tests() -> None:
    same = "def test_a():\n    assert 1\n"
    files = [
        ChangedTestModule("a.py", None, _defs(same), {}),
        ChangedTestModule("b.py", None, _defs(same), {}),
        ChangedTestModule(None, "c.py", {}, _defs(same)),
    ]
    kept, lost = match_tests(files)
    assert len(kept) == 1 and len(lost) == 1


def test_helpers_are_collected_with_their_checks() -> None:
    found = facts("""
        import pytest

        def check_sorted(xs):
            assert xs == sorted(xs)
            assert len(xs) > 0

        @pytest.fixture
        def data():
            return [1, 2]

        class TestX:
            def _assert_ok(self, r):
                return None
                assert r.ok

            def test_a(self):
                self._assert_ok(1)
    """)
    assert {name: h.asserts for name, h in found.helpers.items()} == {
        "check_sorted": 2,
        "data": 0,
        "TestX._assert_ok": 0,
    }
    assert list(found.tests) == ["TestX.test_a"]
    assert [e.text for e in found.helpers["check_sorted"].expectations] == ["xs == sorted(xs)", "len(xs) > 0"]
