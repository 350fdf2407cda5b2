"""Which changed files are the change's tests: where base's runner looks, and imported by no code."""

from __future__ import annotations

from pathlib import Path

import pytest

from checks.testinfra.changetests import change_tests, imports, module_parts
from checks.workspace import ChangedFile, Workspace

IMPL = "def parse(text):\n    return int(text)\n"
TEST = "def test_parse():\n    assert True\n"


def workspace(tmp_path: Path, base: dict[str, str], head: dict[str, str | None]) -> Workspace:
    """Write base and head trees; every path of ``head`` changed (None: deleted)."""
    for root, files in (("base", base), ("head", {**base, **head})):
        for rel, text in files.items():
            if text is not None:
                (tmp_path / root / rel).parent.mkdir(parents=True, exist_ok=True)
                (tmp_path / root / rel).write_text(text)
    (tmp_path / "base").mkdir(exist_ok=True)
    (tmp_path / "head").mkdir(exist_ok=True)
    changed = tuple(
        ChangedFile(rel, "deleted" if text is None else "modified" if rel in base else "added")
        for rel, text in sorted(head.items())
    )
    return Workspace(tmp_path / "base", tmp_path / "head", "a", "b", changed)


BASE = {"src/shop/__init__.py": "", "src/shop/cart.py": "x = 1\n", "tests/test_cart.py": TEST}

# name, base beyond BASE, head, the change's tests
CASES: list[tuple[str, dict[str, str], dict[str, str | None], set[str]]] = [
    (
        "genuine tests stay tests",
        {},
        {
            "tests/test_new.py": TEST,
            "tests/helpers.py": "def helper():\n    return 1\n",  # in base's tests/
            "src/shop/cart_test.py": TEST,
            "conftest.py": "",
            "test_data.json": "{}",
            "src/shop/cart.py": "x = 2\n",
        },
        {"tests/test_new.py", "tests/helpers.py", "src/shop/cart_test.py", "conftest.py", "test_data.json"},
    ),
    (
        # rt13: the implementation moved to a module named like Django's tests and re-exported.
        "implementation in tests.py, re-exported",
        {},
        {"src/shop/tests.py": IMPL, "src/shop/cart.py": "from shop.tests import parse  # noqa: F401\n"},
        set(),
    ),
    (
        "a module named like tests that base does not have is code, imported or not",
        {},
        {"src/shop/tests.py": IMPL, "src/shop/view_tests.py": IMPL},
        set(),
    ),
    (
        "base's own tests.py, edited",
        {"src/shop/tests.py": TEST},
        {"src/shop/tests.py": TEST + "\n"},
        {"src/shop/tests.py"},
    ),
    (
        "base's own tests.py, imported by the change's code",
        {"src/shop/tests.py": TEST},
        {"src/shop/tests.py": IMPL, "src/shop/cart.py": "from .tests import parse  # noqa: F401\n"},
        set(),
    ),
    (
        "a module pytest collects, imported relatively",
        {},
        {"src/shop/test_impl.py": IMPL, "src/shop/cart.py": "from . import test_impl  # noqa: F401\n"},
        set(),
    ),
    (
        "imported by name at run time",
        {},
        {
            "src/shop/test_impl.py": IMPL,
            "src/shop/cart.py": "import importlib\nparse = importlib.import_module('shop.test_impl').parse\n",
        },
        set(),
    ),
    (
        "a test folder of the change's code, imported as a package",
        {"src/shop/tests/__init__.py": ""},
        {
            "src/shop/tests/__init__.py": IMPL,
            "src/shop/tests/test_x.py": TEST,
            "src/shop/cart.py": "import shop.tests\n",
        },
        {"src/shop/tests/test_x.py"},
    ),
    (
        "what imported code imports is code too",
        {},
        {
            "src/shop/test_impl.py": "from tests.helpers import parse  # noqa: F401\n",
            "tests/helpers.py": IMPL,
            "src/shop/cart.py": "from shop.test_impl import parse  # noqa: F401\n",
        },
        set(),
    ),
    (
        "a test importing a helper keeps it a test",
        {},
        {"tests/helpers.py": IMPL, "tests/test_new.py": "from tests.helpers import parse\n" + TEST},
        {"tests/helpers.py", "tests/test_new.py"},
    ),
    (
        "a helper in a test folder base lacks, with no test module beside it, is code",
        {},
        {"pkg/tests/helpers.py": IMPL, "testing/x.py": IMPL},
        set(),
    ),
    (
        "a new package's own tests folder",
        {},
        {"pkg/__init__.py": "", "pkg/tests/helpers.py": IMPL, "pkg/tests/test_pkg.py": TEST},
        {"pkg/tests/helpers.py", "pkg/tests/test_pkg.py"},
    ),
    ("a deleted test stays a test", {}, {"tests/test_cart.py": None}, {"tests/test_cart.py"}),
]


@pytest.mark.parametrize(("base", "head", "tests"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_change_tests(
    tmp_path: Path, base: dict[str, str], head: dict[str, str | None], tests: set[str]
) -> None:
    assert change_tests(workspace(tmp_path, {**BASE, **base}, head)) == tests


def test_a_renamed_test_is_decided_where_it_lands(tmp_path: Path) -> None:
    # Renamed out of tests/ into the package: code now, whatever it was called before.
    ws = workspace(tmp_path, BASE, {"src/shop/impl.py": IMPL})
    moved = ChangedFile("src/shop/impl.py", "renamed", old_path="tests/test_cart.py")
    assert change_tests(Workspace(ws.base_dir, ws.head_dir, "a", "b", (moved,))) == frozenset()


def test_imports_resolve_relative_names_and_parents(tmp_path: Path) -> None:
    source = (
        "import a.b.c\n"
        "from .. import up\n"
        "from .sib import name\n"
        "from ....... import out\n"  # climbs out of the tree: nothing
        "__import__('x.y')\n"
    )
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "sub" / "m.py").write_text(source)
    assert imports(tmp_path, "pkg/sub/m.py") == {
        ("a",), ("a", "b"), ("a", "b", "c"),
        ("pkg",), ("pkg", "up"),
        ("pkg", "sub"), ("pkg", "sub", "sib"), ("pkg", "sub", "sib", "name"),
        ("x",), ("x", "y"),
    }  # fmt: skip


def test_a_module_that_cannot_be_read_imports_nothing(tmp_path: Path) -> None:
    (tmp_path / "outside.py").write_text("import shop.tests\n")
    (tmp_path / "head").mkdir()
    (tmp_path / "head" / "link.py").symlink_to(tmp_path / "outside.py")
    (tmp_path / "head" / "broken.py").write_text("import shop.tests\ndef (:\n")
    assert imports(tmp_path / "head", "link.py") == set()
    assert imports(tmp_path / "head", "broken.py") == set()
    assert imports(tmp_path / "head", "missing.py") == set()


@pytest.mark.parametrize(
    ("path", "parts"),
    [
        ("src/shop/tests.py", ("src", "shop", "tests")),
        ("pkg/tests/__init__.py", ("pkg", "tests")),
        ("m.py", ("m",)),
    ],
)
def test_module_parts(path: str, parts: tuple[str, ...]) -> None:
    assert module_parts(path) == parts
