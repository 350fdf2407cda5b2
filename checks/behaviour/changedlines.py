"""The change's executable lines: what a suite should run for its verdict to say much.

A changed line counts when a statement starts on it, as coverage.py counts
them: a blank line, a comment, a docstring or the continuation of a longer
statement is not a line a test can run. The change's tests are left out
(``checks.testinfra.changetests``): not a file merely named like a test, such
as ``pkg/tests.py`` when ``pkg/parse.py`` imports the code from it.

A file is parsed from its bytes, as Python reads a module (a UTF-8 BOM, a
PEP 263 coding cookie), so its lines are the ones coverage.py reports. Where
a changed file's statements cannot be worked out - a symlink or other file
that is not regular, one past ``MAX_SOURCE_BYTES``, one that does not decode
or parse - every changed line of it counts (fail closed: what the change's
author made unreadable to us still has to be run to count as run), and the
file is named with why, for the report.
"""

from __future__ import annotations

import ast
import io
import stat
import tokenize
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from checks.testinfra.changetests import change_tests
from checks.workspace import Workspace
from sandbox.pyparse import parse_python

# A file larger than this is not parsed (the AST of a hostile file can be huge).
MAX_SOURCE_BYTES = 2 * 1024 * 1024


@dataclass(frozen=True)
class ChangedLines:
    """The change's executable lines per file, and the files whose every changed line was counted."""

    lines: dict[str, list[int]] = field(default_factory=dict)
    # path -> why its statements could not be worked out (its changed lines all count).
    unread: dict[str, str] = field(default_factory=dict)
    # Of ``lines``, those inside a function's body: they run only when the function is called, where
    # the rest (a ``def``, a decorator, a class body, a module's top level) run when it is imported -
    # no evidence that a suite ran the change. An unread file's lines all count here too.
    bodies: dict[str, list[int]] = field(default_factory=dict)

    def notes(self) -> list[str]:
        """Return one line per unread file, for the report."""
        return [f"{path}: {why}; every changed line counted" for path, why in sorted(self.unread.items())]


def statement_lines(source: str | bytes) -> frozenset[int] | None:
    """Return the lines a statement starts on, docstrings excluded; None when the source does not parse.

    Bytes are decoded as Python decodes a module (BOM, coding cookie); a string is taken as decoded.
    """
    found = statements(source)
    return found[0] if found is not None else None


def statements(source: str | bytes) -> tuple[frozenset[int], frozenset[int]] | None:
    """Return the lines a statement starts on, and those of them inside a function's body (run only
    when it is called); None when the source does not parse."""
    try:
        tree = parse_python(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    docstrings: set[int] = set()
    lines: set[int] = set()
    bodies: set[int] = set()
    # (node, inside a function's body): a def's decorators, defaults and annotations run where the def
    # does; its body when it is called.
    stack: list[tuple[ast.AST, bool]] = [(tree, False)]
    while stack:  # no recursion: a deeply nested file cannot exhaust the stack here
        node, inside = stack.pop()
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and _is_docstring(body[0]):
            docstrings.add(id(body[0]))
        if isinstance(node, ast.stmt) and id(node) not in docstrings:
            lines.add(node.lineno)
            if inside:
                bodies.add(node.lineno)
        called = (
            {id(c) for c in node.body} if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) else ()
        )
        stack.extend((child, inside or id(child) in called) for child in ast.iter_child_nodes(node))
    return frozenset(lines), frozenset(bodies)


def _is_docstring(node: ast.stmt) -> bool:
    value = node.value if isinstance(node, ast.Expr) else None
    return isinstance(value, ast.Constant) and isinstance(value.value, str)


def read_module(path: Path) -> bytes | str:
    """Return the bytes of the module at ``path``, or why they are not read (a sentence)."""
    try:
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode):
            return "a symlink, not read"
        if not stat.S_ISREG(info.st_mode):
            return "not a regular file"
        if info.st_size > MAX_SOURCE_BYTES:
            return f"over {MAX_SOURCE_BYTES // (1024 * 1024)} MiB, not parsed"
        return path.read_bytes()
    except OSError as exc:
        return f"could not be read ({type(exc).__name__})"


def executable_changes(ws: Workspace, head: Path | None = None) -> ChangedLines:
    """Return, per changed Python file but the change's tests, the executable lines it added or modified."""
    root = head or ws.head_dir
    lines: dict[str, list[int]] = {}
    bodies: dict[str, list[int]] = {}
    unread: dict[str, str] = {}
    tests = change_tests(ws)
    for changed in ws.python_files:
        if changed.path in tests or not changed.lines:
            continue
        data = read_module(root / changed.path)
        found = statements(data) if isinstance(data, bytes) else None
        if found is None:
            unread[changed.path] = data if isinstance(data, str) else _why_not_parsed(data)
            lines[changed.path] = bodies[changed.path] = sorted(changed.lines)
        elif hit := sorted(found[0] & changed.lines):
            lines[changed.path] = hit
            if called := sorted(found[1] & changed.lines):
                bodies[changed.path] = called
    return ChangedLines(lines, unread, bodies)


def _why_not_parsed(data: bytes) -> str:
    # Fixed words only: the parser's message can quote the change's own text (a cookie's name).
    return "does not parse" if decodes(data) else "does not decode (its coding cookie, or UTF-8)"


def decodes(data: bytes) -> bool:
    """Say whether ``data`` decodes as Python decodes a module: its BOM or coding cookie, else UTF-8."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        data.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError):
        return False
    return True


def total(lines: Mapping[str, list[int]]) -> int:
    """Return how many lines ``lines`` holds across its files."""
    return sum(len(v) for v in lines.values())
