"""The change's executable lines: what a suite should run for its verdict to say much.

A changed line counts when a statement starts on it, as coverage.py counts
them: a blank line, a comment, a docstring or the continuation of a longer
statement is not a line a test can run. Test files and files that do not
parse are left out (the shape layer reports the latter).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path

from checks.testinfra.files import is_test_path
from checks.workspace import Workspace
from sandbox.pyparse import parse_python

# A file larger than this is not parsed for coverage (the AST of a hostile file can be huge).
MAX_SOURCE_BYTES = 2 * 1024 * 1024


def statement_lines(source: str) -> frozenset[int]:
    """Return the lines a statement starts on, docstrings excluded; empty when the source does not parse."""
    try:
        tree = parse_python(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return frozenset()
    docstrings: set[int] = set()
    lines: set[int] = set()
    stack: list[ast.AST] = [tree]
    while stack:  # no recursion: a deeply nested file cannot exhaust the stack here
        node = stack.pop()
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and _is_docstring(body[0]):
            docstrings.add(id(body[0]))
        if isinstance(node, ast.stmt) and id(node) not in docstrings:
            lines.add(node.lineno)
        stack.extend(ast.iter_child_nodes(node))
    return frozenset(lines)


def _is_docstring(node: ast.stmt) -> bool:
    value = node.value if isinstance(node, ast.Expr) else None
    return isinstance(value, ast.Constant) and isinstance(value.value, str)


def executable_changes(ws: Workspace, head: Path | None = None) -> dict[str, list[int]]:
    """Return, per changed non-test Python file, the executable lines the change added or modified."""
    root = head or ws.head_dir
    out: dict[str, list[int]] = {}
    for changed in ws.python_files:
        if is_test_path(changed.path) or not changed.lines:
            continue
        path = root / changed.path
        try:
            if path.is_symlink() or path.stat().st_size > MAX_SOURCE_BYTES:
                continue
            source = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        hit = sorted(statement_lines(source) & changed.lines)
        if hit:
            out[changed.path] = hit
    return out


def total(lines: Mapping[str, list[int]]) -> int:
    """Return how many lines ``lines`` holds across its files."""
    return sum(len(v) for v in lines.values())
