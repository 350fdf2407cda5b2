"""pytest plugins loaded from Python code, and hook functions that can rewrite a test's outcome.

``pytest_plugins = ["tests.hooks"]`` in a test module or conftest makes
pytest import a module whose hooks (``pytest_runtest_makereport``...) can
turn any failure into a pass. The name can be bound many ways (assigned,
appended to, set through ``globals()`` or ``setattr`` with a computed
name), so every mention counts, not one spelling. Configuration files load
plugins too: `checks.testinfra.plugins`.
"""

from __future__ import annotations

import ast

from checks.shape.hygiene.pysource import dotted
from checks.shape.hygiene.statements import Hit, located, own_key

_PLUGINS_NAME = "pytest_plugins"
# Environment variables pytest reads plugins and options from.
_PLUGIN_ENV = frozenset({"PYTEST_PLUGINS", "PYTEST_ADDOPTS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD"})
# Calls that write a module's namespace under a name the code computes.
_NAMESPACE_CALLS = frozenset({"globals", "vars", "locals"})
# Hooks through which a plugin can change what a test reports, or whether it runs at all.
OUTCOME_HOOKS = frozenset(
    {
        "pytest_runtest_makereport",
        "pytest_runtest_protocol",
        "pytest_runtest_call",
        "pytest_runtest_setup",
        "pytest_runtest_teardown",
        "pytest_runtest_logreport",
        "pytest_pyfunc_call",
        "pytest_report_teststatus",
        "pytest_collection_modifyitems",
        "pytest_collect_file",
        "pytest_pycollect_makeitem",
        "pytest_ignore_collect",
        "pytest_sessionfinish",
        "pytest_configure",
        "pytest_load_initial_conftests",
        "pytest_cmdline_main",
        "pytest_plugin_registered",
        "pytest_assertrepr_compare",
    }
)


def plugin_loads(tree: ast.Module) -> list[Hit]:
    """Return each statement that loads, or may load, a pytest plugin."""
    hits: list[Hit] = []
    for place in located(tree):
        seen: set[str] = set()
        for node in place.nodes:
            what = _load(node)
            if what is not None and what not in seen:
                seen.add(what)
                hits.append(place.hit(what))
    return hits


def hook_definitions(tree: ast.Module) -> list[Hit]:
    """Return each definition of an outcome-changing pytest hook; its key is the whole function."""
    hits: list[Hit] = []
    for place in located(tree):
        stmt = place.stmt
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef) and stmt.name in OUTCOME_HOOKS:
            start = min([stmt.lineno, *(d.lineno for d in stmt.decorator_list)])
            # Any edit to a hook's body changes what it does to outcomes.
            key = own_key(stmt) + ast.dump(ast.Module(body=stmt.body, type_ignores=[]))
            hits.append(Hit(start, stmt.end_lineno or stmt.lineno, f"defines pytest hook `{stmt.name}`", key))
    return hits


def _load(node: ast.AST) -> str | None:
    if (
        (isinstance(node, ast.Name) and node.id == _PLUGINS_NAME)
        or (isinstance(node, ast.Global | ast.Nonlocal) and _PLUGINS_NAME in node.names)
        or (isinstance(node, ast.Attribute) and node.attr == _PLUGINS_NAME)
    ):
        return "sets or changes `pytest_plugins`"
    if isinstance(node, ast.Attribute) and node.attr == "pluginmanager":
        return "registers plugins through pytest's `pluginmanager`"
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        if node.value == _PLUGINS_NAME:
            return "names `pytest_plugins` in a string (setattr, globals())"
        if node.value in _PLUGIN_ENV:
            return f"names pytest's `{node.value}` environment variable"
    if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store) and _namespace(node.value):
        # `globals()["pytest_" + "plugins"] = [...]`: a computed name could be pytest_plugins.
        return "writes module globals under a computed name"
    func = node.func if isinstance(node, ast.Call) else None
    if isinstance(func, ast.Attribute) and func.attr in ("update", "setdefault") and _namespace(func.value):
        return "writes module globals under a computed name"
    if isinstance(node, ast.Call) and dotted(node.func) == "setattr" and node.args:
        target, *rest = node.args
        if rest and not isinstance(rest[0], ast.Constant) and _module_object(target):
            return "writes module globals under a computed name"
    return None


def _namespace(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and dotted(node.func) in _NAMESPACE_CALLS


def _module_object(node: ast.expr) -> bool:
    # `setattr(sys.modules[__name__], name, ...)`
    return isinstance(node, ast.Subscript) and dotted(node.value) == "sys.modules"
