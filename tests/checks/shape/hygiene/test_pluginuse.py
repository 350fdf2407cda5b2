"""checks.shape.hygiene.pluginuse: pytest plugins loaded from Python, and hooks that can rewrite outcomes."""

from __future__ import annotations

import ast

import pytest

from checks.shape.hygiene.pluginuse import hook_definitions, plugin_loads
from tests.checks.shape.conftest import Files, Found, Gate, found

LOADS: list[tuple[str, str, list[str]]] = [
    ("a plain list", "pytest_plugins = ['tests.hooks']\n", ["sets or changes `pytest_plugins`"]),
    (
        "a computed list",
        "import os\npytest_plugins = [m[:-3] for m in os.listdir('hooks')]\n",
        ["sets or changes `pytest_plugins`"],
    ),
    ("appended to", "pytest_plugins.append('tests.hooks')\n", ["sets or changes `pytest_plugins`"]),
    ("annotated", "pytest_plugins: list[str] = ['x']\n", ["sets or changes `pytest_plugins`"]),
    (
        "through globals()",
        "globals()['pytest_plugins'] = ['x']\n",
        [
            "names `pytest_plugins` in a string (setattr, globals())",
            "writes module globals under a computed name",
        ],
    ),
    (
        "through globals() and a built name",
        "globals()['pytest_' + 'plugins'] = ['x']\n",
        ["writes module globals under a computed name"],
    ),
    (
        "through globals().update",
        "globals().update({k: v})\n",
        ["writes module globals under a computed name"],
    ),
    (
        "through setattr on the module",
        "import sys\nsetattr(sys.modules[__name__], name, ['x'])\n",
        ["writes module globals under a computed name"],
    ),
    (
        "on another module",
        "import conftest\nconftest.pytest_plugins = ['x']\n",
        ["sets or changes `pytest_plugins`"],
    ),
    (
        "the plugin manager",
        "def pytest_configure(config):\n    config.pluginmanager.register(Hooks())\n",
        ["registers plugins through pytest's `pluginmanager`"],
    ),
    (
        "the environment",
        "import os\nos.environ['PYTEST_PLUGINS'] = 'tests.hooks'\n",
        ["names pytest's `PYTEST_PLUGINS` environment variable"],
    ),
]


@pytest.mark.parametrize(("source", "expected"), [c[1:] for c in LOADS], ids=[c[0] for c in LOADS])
def test_plugin_loads(source: str, expected: list[str]) -> None:
    assert sorted(h.what for h in plugin_loads(ast.parse(source))) == sorted(expected)


def test_ordinary_code_loads_no_plugin() -> None:
    source = "import pytest\nplugins = ['a']\nsetattr(obj, name, 1)\nsetattr(m, 'x', 1)\nd = globals()['x']\n"
    assert plugin_loads(ast.parse(source)) == []


def test_outcome_hooks_and_their_bodies() -> None:
    source = (
        "def pytest_runtest_makereport(item, call):\n    return None\n\n\n"
        "def pytest_addoption(parser):\n    pass\n\n\n"
        "class P:\n    def pytest_collection_modifyitems(self, items):\n        items.clear()\n"
    )
    hits = hook_definitions(ast.parse(source))
    assert [(h.line, h.end_line, h.what) for h in hits] == [
        (1, 2, "defines pytest hook `pytest_runtest_makereport`"),
        (10, 11, "defines pytest hook `pytest_collection_modifyitems`"),
    ]
    edited = hook_definitions(ast.parse(source.replace("return None", "return 1")))
    assert edited[0].key != hits[0].key and edited[1].key == hits[1].key


HOOKS = "def pytest_runtest_makereport(item, call):\n    outcome = yield\n    rep = outcome.get_result()\n"

GATE_CASES: list[tuple[str, Files, Files, Found]] = [
    (
        "a test module unchanged in its plugins",
        {"tests/test_a.py": "def test_a():\n    assert 1\n"},
        {"tests/test_a.py": "def test_a():\n    assert 2 > 1\n"},
        [],
    ),
    (
        "pytest_plugins added to a test module",
        {"tests/test_a.py": "def test_a():\n    assert f()\n"},
        {
            "tests/test_a.py": "pytest_plugins = ['tests.hooks']\n\n\ndef test_a():\n    assert f()\n",
            "tests/hooks.py": HOOKS,
        },
        [("pytest-plugin-loaded", "tests/test_a.py", 1), ("pytest-hook-added", "tests/hooks.py", 1)],
    ),
    (
        "hostile: a plugin list computed at import time",
        {"tests/test_a.py": "def test_a():\n    assert f()\n"},
        {
            "tests/test_a.py": "import os\n\npytest_plugins = [p[:-3] for p in os.listdir('h')]\n\n\n"
            "def test_a():\n    assert f()\n"
        },
        [("pytest-plugin-loaded", "tests/test_a.py", 3)],
    ),
    (
        "plugin already loaded at base, file edited elsewhere",
        {"tests/test_a.py": "pytest_plugins = ['tests.hooks']\n\n\ndef test_a():\n    assert f()\n"},
        {"tests/test_a.py": "pytest_plugins = ['tests.hooks']\n\n\ndef test_a():\n    assert f() is True\n"},
        [],
    ),
    (
        "a hook in a conftest is test-config-edited only",
        {},
        {"tests/conftest.py": HOOKS},
        [("test-config-edited", "tests/conftest.py", 1)],
    ),
    (
        "a hook's body edited in a plugin module",
        {"src/plug.py": HOOKS},
        {"src/plug.py": HOOKS + "    rep.outcome = 'passed'\n"},
        [("pytest-hook-added", "src/plug.py", 1)],
    ),
]


@pytest.mark.parametrize(
    ("base", "head", "expected"), [c[1:] for c in GATE_CASES], ids=[c[0] for c in GATE_CASES]
)
def test_the_gate_reports_plugin_loads(gate: Gate, base: Files, head: Files, expected: Found) -> None:
    result = gate(base, head)
    assert sorted(found(result)) == sorted(expected)
    for f in result.findings:
        assert f.needs_maintainer
