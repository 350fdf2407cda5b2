"""The hygiene gate on real git changes: for every rule, a patch that passes and one that fails."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from checks.policy import Policy
from checks.runner import LayerContext
from checks.shape import GATES
from checks.shape.hygiene.gate import HygieneGate
from checks.workspace import from_git
from tests.checks.shape.conftest import Files, Found, Gate, found, src
from tests.conftest import GitRepo
from tests.fakes.runners import NoRunner

TESTS = src("""
    import pytest


    def test_add():
        assert 1 + 1 == 2
        assert 2 + 2 == 4


    def test_raises():
        with pytest.raises(ZeroDivisionError):
            1 / 0


    class TestBox:
        def test_open(self):
            self.assertTrue(True)
            assert "box"
""")


PARAM = "import pytest\n\n@pytest.mark.parametrize('x', [{}])\ndef test_x(x):\n    assert x\n"
UNIT = (
    "import unittest\n\nclass T(unittest.TestCase):\n{deco}    def test_a(self):\n{body}"
    "        self.assertEqual(1, 1)\n"
)


def test_the_gate_is_registered() -> None:
    assert isinstance(GATES["hygiene"], HygieneGate)
    assert GATES["hygiene"].name == "hygiene"


CASES: list[tuple[str, Files, Files, Found]] = [
    # --- test-deleted
    (
        "test function deleted",
        {"tests/test_m.py": TESTS},
        {"tests/test_m.py": TESTS.replace("def test_raises():", "def helper():")},
        [("test-deleted", "tests/test_m.py", 9)],
    ),  # where it was: an annotation on the spot
    (
        "test method deleted",
        {"tests/test_m.py": TESTS},
        {"tests/test_m.py": TESTS.split("class TestBox")[0] + "class TestBox:\n    pass\n"},
        [("test-deleted", "tests/test_m.py", 15)],
    ),
    (
        "whole test file deleted",
        {"tests/test_m.py": TESTS},
        {"tests/test_m.py": None},
        [("test-deleted", "tests/test_m.py", 0)] * 3,
    ),
    (
        "test renamed, body kept",
        {"tests/test_m.py": TESTS},
        {"tests/test_m.py": TESTS.replace("def test_add():", "def test_addition_of_small_numbers():")},
        [],
    ),
    (
        "test file renamed",
        {"tests/test_m.py": TESTS},
        {"tests/test_m.py": None, "tests/test_math.py": TESTS},
        [],
    ),
    (
        "test moved to another file",
        {"tests/test_m.py": TESTS},
        {
            "tests/test_m.py": TESTS.split("class TestBox")[0],
            "tests/test_box.py": "class TestBox:" + TESTS.split("class TestBox:")[1],
        },
        [],
    ),
    (
        "test added",
        {"tests/test_m.py": TESTS},
        {"tests/test_m.py": TESTS + "\n\ndef test_more():\n    assert 3\n"},
        [],
    ),
    (
        "helper deleted from a test file",
        {"tests/test_m.py": TESTS + "\n\ndef make():\n    return 1\n"},
        {"tests/test_m.py": TESTS},
        [],
    ),
    # Test files are what checks.testinfra.files says: Django's app/tests.py and a root testing/ folder too.
    (
        "test deleted from app/tests.py",
        {"app/tests.py": TESTS},
        {"app/tests.py": TESTS.replace("def test_raises():", "def helper():")},
        [("test-deleted", "app/tests.py", 9)],
    ),
    (
        "empty fake in a root conftest.py",
        {"conftest.py": "x = 1\n"},
        {"conftest.py": "x = 1\n\n\nclass FakeClock:\n    def sleep(self, seconds):\n        pass\n"},
        [("test-config-edited", "conftest.py", 2)],
    ),
    (
        "test_* function deleted from non-test code",
        {"src/db.py": "def test_connection():\n    return True\n"},
        {"src/db.py": "def check_connection():\n    return bool(1)\n"},
        [],
    ),
    # --- assert-weakened
    (
        "assert removed",
        {"tests/test_m.py": TESTS},
        {"tests/test_m.py": TESTS.replace("    assert 2 + 2 == 4\n", "")},
        [("assert-weakened", "tests/test_m.py", 4)],
    ),
    (
        "assert hollowed into assert True",
        {"tests/test_m.py": TESTS},
        {"tests/test_m.py": TESTS.replace("assert 2 + 2 == 4", "assert True")},
        [("assert-weakened", "tests/test_m.py", 4)],
    ),
    (
        "pytest.raises removed",
        {"tests/test_m.py": TESTS},
        {
            "tests/test_m.py": TESTS.replace(
                "    with pytest.raises(ZeroDivisionError):\n        1 / 0\n", "    1 / 1\n"
            )
        },
        [("assert-weakened", "tests/test_m.py", 9)],
    ),
    (
        "self.assert* removed",
        {"tests/test_m.py": TESTS},
        {"tests/test_m.py": TESTS.replace("        self.assertTrue(True)\n", "")},
        [("assert-weakened", "tests/test_m.py", 15)],
    ),
    (
        "assert rewritten, not removed",
        {"tests/test_m.py": TESTS},
        {"tests/test_m.py": TESTS.replace("assert 2 + 2 == 4", "assert sum([2, 2]) == 4")},
        [],
    ),
    (
        "asserts added",
        {"tests/test_m.py": TESTS},
        {"tests/test_m.py": TESTS.replace("assert 2 + 2 == 4", "assert 2 + 2 == 4\n    assert 3 + 3 == 6")},
        [],
    ),
    # --- cases-removed
    (
        "parametrized cases removed",
        {"tests/test_p.py": PARAM.format("1, 2, 3")},
        {"tests/test_p.py": PARAM.format("1")},
        [("cases-removed", "tests/test_p.py", 3)],
    ),
    (
        "parametrized cases added",
        {"tests/test_p.py": PARAM.format("1")},
        {"tests/test_p.py": PARAM.format("1, 2")},
        [],
    ),
    # --- skip-added
    (
        "pytest.mark.skip added",
        {"tests/test_m.py": TESTS},
        {"tests/test_m.py": TESTS.replace("def test_add", "@pytest.mark.skip(reason='flaky')\ndef test_add")},
        [("skip-added", "tests/test_m.py", 4)],
    ),
    (
        "skipif added",
        {"tests/test_m.py": TESTS},
        {
            "tests/test_m.py": TESTS.replace(
                "def test_add", "@pytest.mark.skipif(True, reason='')\ndef test_add"
            )
        },
        [("skip-added", "tests/test_m.py", 4)],
    ),
    (
        "xfail added through an alias",
        {"tests/test_m.py": TESTS},
        {
            "tests/test_m.py": "from pytest import mark as m\n"
            + TESTS.replace("def test_add", "@m.xfail\ndef test_add")
        },
        [("skip-added", "tests/test_m.py", 5)],
    ),
    (
        "pytest.skip() call added",
        {"tests/test_m.py": TESTS},
        {"tests/test_m.py": TESTS.replace("    assert 1 + 1", "    pytest.skip('x')\n    assert 1 + 1")},
        [("skip-added", "tests/test_m.py", 5)],
    ),
    (
        "pytestmark added",
        {"tests/test_m.py": TESTS},
        {"tests/test_m.py": TESTS.replace("pytest\n", "pytest\n\npytestmark = [pytest.mark.xfail]\n", 1)},
        [("skip-added", "tests/test_m.py", 3)],
    ),
    (
        "unittest.skip and skipTest added",
        {"tests/test_u.py": UNIT.format(deco="", body="")},
        {
            "tests/test_u.py": UNIT.format(
                deco="    @unittest.skip('x')\n", body="        self.skipTest('no')\n"
            )
        },
        [("skip-added", "tests/test_u.py", 4), ("skip-added", "tests/test_u.py", 6)],
    ),
    (
        "existing skip kept while the test changes",
        {"tests/test_s.py": "import pytest\n\n@pytest.mark.skip\ndef test_a():\n    assert 1\n"},
        {"tests/test_s.py": "import pytest\n\n\n@pytest.mark.skip\ndef test_a():\n    assert 2\n"},
        [],
    ),
    (
        "skip removed",
        {"tests/test_s.py": "import pytest\n\n@pytest.mark.skip\ndef test_a():\n    assert 1\n"},
        {"tests/test_s.py": "import pytest\n\ndef test_a():\n    assert 1\n"},
        [],
    ),
    (
        "skip named in a string only",
        {"tests/test_m.py": TESTS},
        {"tests/test_m.py": TESTS + "\n\nDOC = 'use @pytest.mark.skip sparingly'\n"},
        [],
    ),
    # --- suppression-added
    (
        "noqa added",
        {"src/m.py": "import os\n"},
        {"src/m.py": "import os  # noqa: F401\n"},
        [("suppression-added", "src/m.py", 1)],
    ),
    (
        "type: ignore added",
        {"src/m.py": "x: int = 1\n"},
        {"src/m.py": "x: int = 1\ny: int = 'a'  # type: ignore[assignment]\n"},
        [("suppression-added", "src/m.py", 2)],
    ),
    (
        "nosec, nosemgrep and pragma added",
        {"src/m.py": "x = 1\n"},
        {
            "src/m.py": "x = 1\na = int('1')  # nosec\nb = 2  # nosemgrep\n"
            "if x:  # pragma: no cover\n    pass\n"
        },
        [
            ("suppression-added", "src/m.py", 2),
            ("suppression-added", "src/m.py", 3),
            ("suppression-added", "src/m.py", 4),
        ],
    ),
    (
        "suppression inside a string literal",
        {"src/m.py": "x = 1\n"},
        {"src/m.py": "x = 1\nHELP = 'add # noqa or # type: ignore'\nDOC = '''\n# nosec\n'''\n"},
        [],
    ),
    (
        "suppression already there, other lines changed",
        {"src/m.py": "import os  # noqa\nx = 1\n"},
        {"src/m.py": "import os  # noqa\nx = 2\n"},
        [],
    ),
    (
        "suppressed line moved and re-indented",
        {"src/m.py": "import os  # noqa\n\nx = 1\n"},
        {"src/m.py": "x = 1\nif x:\n    import os  # noqa\n"},
        [],
    ),
    (
        "any directive of a tool patchgate runs added, whatever its options",
        {"src/m.py": "x = 1\n"},
        {
            "src/m.py": "# mypy: check-untyped-defs=False\n# ruff: disable[F841]\nx = 1  # nosem\n"
            "y = 2  # ruff: ignore[F841]\n"
        },
        [
            ("suppression-added", "src/m.py", 1),
            ("suppression-added", "src/m.py", 2),
            ("suppression-added", "src/m.py", 3),
            ("suppression-added", "src/m.py", 4),
        ],
    ),
    (
        "a directive a tool reads from raw lines, in a string",
        {"src/m.py": "x = 1\n"},
        {"src/m.py": 'x = 1\nDOC = """\n# mypy: ignore-errors\n"""\nHELP = " nosemgrep"\n'},
        [("suppression-added", "src/m.py", 3), ("suppression-added", "src/m.py", 5)],
    ),
    (
        "no_type_check decorator added, through an import already there",
        {"src/m.py": "from typing import no_type_check as nc\n"},
        {"src/m.py": "from typing import no_type_check as nc\n\n\n@nc\ndef f(x):\n    return 1\n"},
        [("suppression-added", "src/m.py", 4)],
    ),
    (
        "no_type_check decorator already there, function body changed",
        {"src/m.py": "import typing\n\n\n@typing.no_type_check\ndef f(x):\n    return x\n"},
        {"src/m.py": "import typing\n\n\n@typing.no_type_check\ndef f(x):\n    return x + 1\n"},
        [],
    ),
    # --- stub-body
    (
        "new function is pass",
        {"src/m.py": "x = 1\n"},
        {"src/m.py": "x = 1\n\n\ndef compute_total(items):\n    pass\n"},
        [("stub-body", "src/m.py", 4)],
    ),
    (
        "new function raises NotImplementedError()",
        {"src/m.py": "x = 1\n"},
        {"src/m.py": "x = 1\n\n\ndef parse_date(text):\n    raise NotImplementedError()\n"},
        [("stub-body", "src/m.py", 4)],
    ),
    (
        "new function is a docstring",
        {"src/m.py": "x = 1\n"},
        {"src/m.py": 'x = 1\n\n\ndef parse_date(text):\n    """Parse an ISO date."""\n'},
        [("stub-body", "src/m.py", 4)],
    ),
    (
        "existing body replaced by ...",
        {"src/m.py": "def area(r):\n    return 3.14159 * r * r\n"},
        {"src/m.py": "def area(r):\n    ...\n"},
        [("stub-body", "src/m.py", 1)],
    ),
    (
        "constant return where a computation is promised",
        {"src/m.py": "x = 1\n"},
        {"src/m.py": "x = 1\n\n\ndef calculate_tax(amount, rate):\n    return 0\n"},
        [("stub-body", "src/m.py", 4)],
    ),
    (
        "empty test",
        {"tests/test_m.py": TESTS},
        {"tests/test_m.py": TESTS + "\n\ndef test_todo():\n    pass\n"},
        [("stub-body", "tests/test_m.py", 20)],
    ),
    (
        "abstract method raising NotImplementedError",
        {"src/m.py": "x = 1\n"},
        {
            "src/m.py": src("""
        import abc


        class Shape(abc.ABC):
            @abc.abstractmethod
            def area(self) -> float:
                raise NotImplementedError
     """)
        },
        [],
    ),
    (
        "protocol, overload, __init__ pass and flag-like constants",
        {"src/m.py": "x = 1\n"},
        {
            "src/m.py": src("""
        from typing import Protocol, overload


        class Reader(Protocol):
            def read(self, n: int) -> bytes: ...


        @overload
        def f(x: int) -> int: ...
        @overload
        def f(x: str) -> str: ...
        def f(x):
            return x


        class Plugin:
            def __init__(self):
                pass

            def is_enabled(self):
                return True


        def get_version():
            return "1.0"
     """)
        },
        [],
    ),
    (
        "stub already at base, file changed elsewhere",
        {"src/m.py": "def later(x):\n    pass\n\n\ny = 1\n"},
        {"src/m.py": "def later(x):\n    pass\n\n\ny = 2\n"},
        [],
    ),
    (
        "stub already at base, its decorator changed",
        {"src/m.py": "import functools\n\n\n@functools.cache\ndef later(x):\n    pass\n"},
        {"src/m.py": "import functools\n\n\n@functools.lru_cache\ndef later(x):\n    pass\n"},
        [],
    ),
    # --- CI, policy, test configuration, start-up hooks
    (
        "CI workflow edited",
        {".github/workflows/ci.yml": "on: push\n"},
        {".github/workflows/ci.yml": "on: [push]\n"},
        [("ci-edited", ".github/workflows/ci.yml", 1)],
    ),
    ("docs about CI edited", {"docs/ci.md": "a\n"}, {"docs/ci.md": "b\n"}, []),
    (
        "policy edited",
        {".github/patchgate.yml": "gates: {}\n"},
        {".github/patchgate.yml": "gates:\n  hygiene:\n    enabled: false\n"},
        [("policy-edited", ".github/patchgate.yml", 1)],
    ),
    (
        "conftest added",
        {},
        {"tests/conftest.py": "import pytest\n"},
        [("test-config-edited", "tests/conftest.py", 1)],
    ),
    (
        "pytest options in pyproject edited",
        {"pyproject.toml": '[tool.pytest.ini_options]\naddopts = "-q"\n'},
        {
            "pyproject.toml": "[tool.pytest.ini_options]\n"
            'addopts = "-q --deselect tests/test_m.py::test_add"\n'
        },
        [("test-config-edited", "pyproject.toml", 2)],
    ),
    (
        "dependencies in pyproject edited",
        {"pyproject.toml": '[project]\nname = "a"\ndependencies = []\n'},
        {"pyproject.toml": '[project]\nname = "a"\ndependencies = ["httpx"]\n'},
        [],
    ),
    ("tox.ini deleted", {"tox.ini": "[tox]\n"}, {"tox.ini": None}, [("test-config-edited", "tox.ini", 0)]),
    (
        "tox test command in pyproject deselects a test",
        {"pyproject.toml": '[tool.tox.env_run_base]\ncommands = [["pytest"]]\n'},
        {
            "pyproject.toml": "[tool.tox.env_run_base]\n"
            'commands = [["pytest", "--deselect", "t.py::test_a"]]\n'
        },
        [("test-config-edited", "pyproject.toml", 2)],
    ),
    (
        "hatch test script edited",
        {"hatch.toml": '[envs.default.scripts]\ntest = "pytest"\n'},
        {"hatch.toml": "[envs.default.scripts]\ntest = \"pytest -k 'not slow'\"\n"},
        [("test-config-edited", "hatch.toml", 2)],
    ),
    (
        "Makefile test target edited",
        {"Makefile": "test:\n\tpytest\n\nrelease:\n\ttwine upload dist/*\n"},
        {"Makefile": "test:\n\t-pytest\n\nrelease:\n\ttwine upload dist/*\n"},
        [("test-config-edited", "Makefile", 2)],
    ),
    (
        "Makefile release target edited",
        {"Makefile": "test:\n\tpytest\n\nrelease:\n\ttwine upload dist/*\n"},
        {"Makefile": "test:\n\tpytest\n\nrelease:\n\ttwine upload --sign dist/*\n"},
        [],
    ),
    (
        "nox session edited",
        {"noxfile.py": "import nox\n"},
        {"noxfile.py": "import nox\nnox.options.sessions = []\n"},
        [("test-config-edited", "noxfile.py", 2)],
    ),
    # --- pytest-plugin-loaded (configuration)
    (
        "plugin loaded with -p in addopts",
        {"pyproject.toml": '[tool.pytest.ini_options]\naddopts = "-q"\n'},
        {"pyproject.toml": '[tool.pytest.ini_options]\naddopts = "-q -p tests.hooks"\n'},
        [("pytest-plugin-loaded", "pyproject.toml", 2)],
    ),
    (
        "plugin registered as a pytest11 entry point",
        {"pyproject.toml": '[project]\nname = "a"\n'},
        {"pyproject.toml": '[project]\nname = "a"\n\n[project.entry-points.pytest11]\nh = "pkg.hooks"\n'},
        [("pytest-plugin-loaded", "pyproject.toml", 3)],
    ),
    (
        "plugin registered in setup.py through a computed key",
        {"setup.py": "import setuptools\nsetup()\n"},
        {"setup.py": "import setuptools\nK = 'pytest' + '11'\nsetup(entry_points={K: ['h = pkg.h']})\n"},
        [("pytest-plugin-loaded", "setup.py", 2)],
    ),
    (
        ".pth added",
        {},
        {"src/zz.pth": "import os; os.environ['X'] = '1'\n"},
        [("startup-hook-edited", "src/zz.pth", 1)],
    ),
    (
        "sitecustomize added",
        {},
        {"sitecustomize.py": "import builtins\n"},
        [("startup-hook-edited", "sitecustomize.py", 1)],
    ),
]


@pytest.mark.parametrize(("base", "head", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_rule(gate: Gate, base: Files, head: Files, expected: Found) -> None:
    result = gate(base, head)
    assert result.tool.status == "ok"
    assert sorted(found(result)) == sorted(expected)
    assert all(f.tool == "hygiene" and f.introduced for f in result.findings)


def test_findings_explain_themselves(gate: Gate) -> None:
    result = gate(
        {"tests/test_m.py": TESTS, "src/m.py": "x = 1\n"},
        {
            "tests/test_m.py": TESTS.replace("def test_raises():", "def helper():"),
            "src/m.py": "x = 1\n\n\ndef calculate_tax(amount):\n    return 0\n\n\n"
            "def load(path):\n    pass\n",
        },
    )
    by_rule = {(f.rule, f.start_line): f for f in result.findings}
    deleted = by_rule["test-deleted", 9]
    assert "test_raises" in deleted.message and "tests/test_m.py:9" in deleted.message
    assert deleted.needs_maintainer and deleted.severity == "error"
    constant = by_rule["stub-body", 4]
    assert "calculate_tax" in constant.message and "amount" in constant.message
    # A constant return is a guess from the name: shown as a warning, not a request for a maintainer.
    assert constant.severity == "warning" and not constant.needs_maintainer
    empty = by_rule["stub-body", 8]
    assert empty.severity == "error" and empty.needs_maintainer and "pass" in empty.message
    assert (empty.start_line, empty.end_line) == (8, 9)


def test_pre_existing_suppressions_and_stubs_are_counted(gate: Gate) -> None:
    result = gate(
        {"src/m.py": "import os  # noqa\n\n\ndef later(x):\n    pass\n"},
        {"src/m.py": "import os  # noqa\n\n\n@staticmethod\ndef later(x):\n    pass\n"},
    )
    assert found(result) == []
    assert result.preexisting == 1


def test_subclassed_elsewhere_in_the_repository_is_a_hook(gate: Gate) -> None:
    result = gate(
        {"src/base.py": "x = 1\n"},
        {
            "src/base.py": "class Handler:\n    def handle(self, e):\n        raise NotImplementedError\n",
            "src/impl.py": "from src.base import Handler as H\n\n\nclass Mine(H):\n"
            "    def handle(self, event):\n        return event\n",
        },
    )
    assert found(result) == []


def test_a_whole_new_stub_class_is_flagged_per_method(gate: Gate) -> None:
    result = gate(
        {"src/calc.py": "x = 1\n"},
        {
            "src/calc.py": src("""
            class Calculator:
                def add(self, a, b):
                    raise NotImplementedError("TODO")

                def subtract(self, a, b):
                    pass
        """)
        },
    )
    assert found(result) == [("stub-body", "src/calc.py", 2), ("stub-body", "src/calc.py", 5)]


@pytest.mark.parametrize(
    "bad",
    [
        b"def test_x(:\n    pass  # noqa\n",  # syntax error
        b"def test_x():\n    s = '\xff\xfe'\n    assert s  # noqa\n",  # invalid UTF-8
        b"x = 1\x00\n",  # a null byte
        b"# -*- coding: no-such-codec -*-\nx = 1  # noqa\n",
        b"x = " + b"+".join([b"a"] * 700) + b"\n",  # parses, but too deep to walk
        b"x = " + b"(" * 300 + b")" * 300 + b"\n",
        b'x = """never closed\n',
    ],
)
def test_broken_python_does_not_crash_the_gate(gate: Gate, bad: bytes) -> None:
    result = gate({"tests/test_m.py": TESTS}, {"tests/test_m.py": bad})
    assert result.tool.status == "ok"
    # AST rules skip a file that does not compile (the loads gate reports it): no test-deleted here.
    # One that compiles but is too deep to walk is not examined: a finding (tested below).
    assert {f.rule for f in result.findings} <= {"suppression-added", "not-examined"}


def test_binary_files_are_skipped_and_oversized_ones_not_examined(gate: Gate) -> None:
    big = "x = 1\n" * 400_000 + "def compute(x):\n    pass\n"
    result = gate({"src/m.py": "x = 1\n"}, {"src/m.py": big, "src/blob.py": bytes(range(256)) * 10})
    assert result.tool.status == "ok"
    assert found(result) == [("not-examined", "src/m.py", 2)]
    assert result.notices == ()


# Hostile: each hides a deleted test and a new skip from every AST rule by making the file one
# the gate cannot read or walk. Before, each passed with a notice.
HIDDEN = TESTS.replace("def test_raises():", "def helper():").replace(
    "def test_add", "@pytest.mark.skip\ndef test_add"
)


@pytest.mark.parametrize(
    ("head", "why"),
    [
        (HIDDEN + ("#" * 79 + "\n") * 28_000, "too large to read"),  # 2.2 MB of comments
        ("# padding\n" * 220_000 + HIDDEN, "too large to read"),
        (HIDDEN + "\nX = " + "+".join(["a"] * 700) + "\n", "nested too deeply"),
    ],
    ids=["padded-after", "padded-before", "nested-too-deeply"],
)
def test_a_file_the_gate_cannot_examine_asks_a_maintainer(
    git_repo: GitRepo, tmp_path: Path, head: str, why: str
) -> None:
    from checks.decide import decide
    from checks.policyfile import load_policy
    from checks.report import BehaviourResult, QualityResult
    from checks.shape import run_shape

    git_repo.commit("base", {"tests/test_m.py": TESTS})
    git_repo.branch("pr")
    git_repo.commit("pr", {"tests/test_m.py": head})
    ws = from_git(git_repo.path, "main", "pr", tmp_path / "ws")
    # Whatever the policy says of hygiene's findings, even that they only warn.
    for policy, conclusion in (
        ("", "action_required"),
        ("gates: {hygiene: {on_finding: warn}}", "action_required"),
        ("gates: {hygiene: {on_finding: failure}}", "action_required"),
    ):
        rules = load_policy(policy)
        ctx = LayerContext(ws, rules, NoRunner("the hygiene gate"), image="never-used")
        shape = run_shape(ctx, gates=["hygiene"])
        unseen = [f for f in shape.findings if f.rule == "not-examined"]
        assert [(f.tool, f.path) for f in unseen] == [("hygiene", "tests/test_m.py")]
        assert unseen[0].needs_maintainer
        assert why in unseen[0].message
        decision = decide(shape, BehaviourResult(status="passed"), QualityResult(), rules)
        assert decision.conclusion == conclusion, (policy, decision.reasons)
        assert any("not examined whole (hygiene): tests/test_m.py" in r for r in decision.reasons)


def test_symlinked_python_is_not_followed(git_repo: GitRepo, gate: Gate) -> None:
    git_repo.write({"tests/test_m.py": TESTS})
    os.symlink("test_m.py", git_repo.path / "tests" / "test_link.py")
    result = gate({}, {"tests/test_link.py": None, "tests/test_other.py": "def test_z():\n    assert 1\n"})
    assert found(result) == []


@pytest.mark.parametrize(
    ("policy", "conclusion"),
    [("", "action_required"), ("gates: {hygiene: {on_finding: failure}}", "failure")],
)
def test_findings_reach_the_decision(git_repo: GitRepo, tmp_path: Path, policy: str, conclusion: str) -> None:
    from checks.decide import decide
    from checks.policyfile import load_policy
    from checks.report import BehaviourResult, QualityResult
    from checks.shape import run_shape

    git_repo.commit("base", {"tests/test_m.py": TESTS})
    git_repo.branch("pr")
    skipped = TESTS.replace("def test_add", "@pytest.mark.skip\ndef test_add")
    git_repo.commit("pr", {"tests/test_m.py": skipped})
    ws = from_git(git_repo.path, "main", "pr", tmp_path / "ws")
    rules = load_policy(policy)
    shape = run_shape(
        LayerContext(ws, rules, NoRunner("the hygiene gate"), image="never-used"), gates=["hygiene"]
    )
    assert [(t.tool, t.status) for t in shape.tools] == [("hygiene", "ok")]
    decision = decide(shape, BehaviourResult(status="passed"), QualityResult(), rules)
    assert decision.conclusion == conclusion
    assert any("skip-added" in r for r in decision.reasons)


def test_an_unreadable_workspace_is_an_infrastructure_error(tmp_path: Path) -> None:
    from checks.workspace import ChangedFile, Workspace

    (tmp_path / "base").mkdir()
    (tmp_path / "head").mkdir()
    # A name longer than the file system allows: reading it fails with OSError (ENAMETOOLONG).
    too_long = ChangedFile("x" * 300 + ".py", "modified")
    ws = Workspace(tmp_path / "base", tmp_path / "head", "a", "b", (too_long,))
    result = HygieneGate().run(LayerContext(ws, Policy(), NoRunner("the hygiene gate"), image="never-used"))
    assert result.tool.status == "error"
    assert "cannot read the workspace" in result.tool.detail
    assert result.findings == ()


# One patch per rule added for verdict integrity: each must ask for a maintainer, not pass.
NEW_RULES: list[tuple[str, Files, Files]] = [
    (
        "pytest-plugin-loaded",
        {"setup.cfg": "[tool:pytest]\naddopts = -q\n"},
        {"setup.cfg": "[tool:pytest]\naddopts = -q -p tests.hooks\n"},
    ),
    (
        "pytest-plugin-loaded",
        {"tests/test_m.py": TESTS},
        {"tests/test_m.py": "pytest_plugins = ['tests.hooks']\n" + TESTS},
    ),
    ("test-config-edited", {"Makefile": "test:\n\tpytest\n"}, {"Makefile": "test:\n\tpytest -k 'not add'\n"}),
    (
        "assert-tautology",
        {"tests/test_m.py": TESTS},
        {"tests/test_m.py": TESTS.replace("assert 2 + 2 == 4", "assert 2 + 2 == 2 + 2")},
    ),
    (
        "expected-changed",
        {"tests/test_m.py": TESTS},
        {"tests/test_m.py": TESTS.replace("assert 2 + 2 == 4", "assert 2 + 2 == 5")},
    ),
    (
        "helper-weakened",
        {"tests/test_m.py": TESTS + "\n\ndef check(x):\n    assert x\n"},
        {"tests/test_m.py": TESTS + "\n\ndef check(x):\n    return None\n"},
    ),
    (
        "pytest-hook-added",
        {"src/m.py": "x = 1\n"},
        {"src/m.py": "x = 1\n\n\ndef pytest_runtest_makereport(item, call):\n    pass\n"},
    ),
    ("grader-probing", {"src/m.py": "x = 1\n"}, {"src/m.py": "import inspect\nx = inspect.stack()\n"}),
]


@pytest.mark.parametrize(
    ("rule", "base", "head"), NEW_RULES, ids=[f"{r[0]}-{i}" for i, r in enumerate(NEW_RULES)]
)
def test_new_rules_ask_a_maintainer(
    git_repo: GitRepo, tmp_path: Path, rule: str, base: Files, head: Files
) -> None:
    from checks.decide import decide
    from checks.report import BehaviourResult, QualityResult
    from checks.shape import run_shape

    git_repo.commit("base", {"README.md": "x\n", **base})
    git_repo.branch("pr")
    git_repo.commit("pr", head)
    ws = from_git(git_repo.path, "main", "pr", tmp_path / "ws")
    shape = run_shape(
        LayerContext(ws, Policy(), NoRunner("the hygiene gate"), image="never-used"), gates=["hygiene"]
    )
    assert rule in {f.rule for f in shape.findings}
    decision = decide(shape, BehaviourResult(status="passed"), QualityResult(), Policy())
    assert decision.conclusion == "action_required"
    assert any(rule in r for r in decision.reasons)
