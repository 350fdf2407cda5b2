"""The pytest plugins a configuration loads: ``-p`` in addopts and ``pytest11`` entry points.

A plugin can rewrite any test's outcome, so the hygiene gate names each one
a change starts (or stops) loading. Python modules load plugins too
(``pytest_plugins``): see `checks.shape.hygiene.pluginuse`. Pure: text in, names out.
"""

from __future__ import annotations

import ast
import shlex
import warnings

from sandbox.pyparse import parse_python

# Short pytest options that take a value: in `-kfoo` or `-k foo` a `p` is not the plugin option.
_VALUED_SHORT = frozenset("kmcorWn")


def addopts_plugins(addopts: str, where: str) -> list[str]:
    """Return ``-p NAME`` (as written, ``no:`` included) for every plugin option in an addopts string."""
    try:
        tokens = shlex.split(addopts, comments=False)
    except ValueError:  # an unbalanced quote: pytest would split it some way, so look at every word
        tokens = addopts.split()
    out: list[str] = []
    for i, token in enumerate(tokens):
        if not token.startswith("-") or token.startswith("--"):
            continue
        # argparse reads `-qp xdist` and `-qpxdist` as -q then -p with a value.
        for j, flag in enumerate(token[1:], start=1):
            if flag == "p":
                value = token[j + 1 :] or (tokens[i + 1] if i + 1 < len(tokens) else "")
                out.append(f"`-p {value}` ({where})")
                break
            if flag in _VALUED_SHORT:
                break
    return out


def entry_point_plugins(spec: str) -> list[str]:
    """Return each ``name = module`` line of a setup.cfg ``pytest11`` entry-point value."""
    lines = (" ".join(line.split()) for line in spec.splitlines())
    return [f"pytest11 entry point {line}" for line in lines if line and not line.startswith("#")]


def setup_py_plugins(data: bytes) -> list[str] | None:
    """Return what a setup.py says about entry points, as comparable text; None when it does not compile.

    Entry points reach ``setup()`` in too many ways to evaluate, so what is
    compared is every ``entry_points=`` argument, every dict with a
    ``"pytest11"`` key and every string mentioning pytest11, with the
    module-level assignments of the names an ``entry_points=`` argument uses.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = parse_python(data)
        return _entry_points(tree)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _entry_points(tree: ast.Module) -> list[str]:
    found: list[str] = []
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "entry_points":
            found.append(f"entry_points={ast.unparse(node.value)}")
            names |= {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.Dict) and any(
            isinstance(k, ast.Constant) and k.value == "pytest11" for k in node.keys
        ):
            found.append(f"pytest11 entry points {ast.unparse(node)}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and "pytest11" in node.value:
            found.append(f"pytest11 entry points {node.value!r}")
    for stmt in tree.body:
        targets: list[ast.expr] = []
        if isinstance(stmt, ast.Assign):
            targets = stmt.targets
        elif isinstance(stmt, ast.AnnAssign | ast.AugAssign):
            targets = [stmt.target]
        if any(isinstance(t, ast.Name) and t.id in names for t in targets):
            found.append(f"entry points from {ast.unparse(stmt)}")
    return found
