"""Reading the PR's Python source safely: no file may crash the gate that reads it."""

from __future__ import annotations

import ast
import collections
import io
import tokenize
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path

from sandbox.pyparse import parse_python

# Larger files are not parsed (hostile input can be huge); the gate says so in a notice.
MAX_SOURCE_BYTES = 2 * 1024 * 1024


class SourceTooLarge(Exception):
    """A file is over MAX_SOURCE_BYTES and was not examined."""


def read_source(root: Path, rel: str | None) -> bytes | None:
    """Return the bytes of regular file ``rel`` under ``root``; None when absent or a symlink."""
    if rel is None:
        return None
    path = root / rel
    # Symlinks are never followed: what a link points at is not this file's content.
    if path.is_symlink() or not path.is_file():
        return None
    if path.stat().st_size > MAX_SOURCE_BYTES:
        raise SourceTooLarge(rel)
    return path.read_bytes()


def parse_module(data: bytes) -> ast.Module | None:
    """Parse Python source; None when it does not compile (the loads gate reports that)."""
    try:
        with warnings.catch_warnings():
            # Invalid escape sequences in the PR's strings are not our warnings to raise.
            warnings.simplefilter("ignore")
            return parse_python(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def decode_source(data: bytes) -> str:
    """Decode source by its PEP 263 cookie, replacing bytes that do not decode."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError:
        encoding = "utf-8"
    try:
        return data.decode(encoding, "replace")
    except LookupError:
        return data.decode("utf-8", "replace")


def comments(text: str) -> list[tuple[int, int, str]]:
    """Return (line, column, text) of every real comment token; stops quietly where tokenizing fails."""
    out: list[tuple[int, int, str]] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                out.append((tok.start[0], tok.start[1], tok.string))
    except (tokenize.TokenError, SyntaxError, ValueError, RecursionError):
        pass
    return out


def dotted(node: ast.expr) -> str | None:
    """Return ``a.b.c`` for a Name/Attribute chain, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = dotted(node.value)
        return None if inner is None else f"{inner}.{node.attr}"
    return None


# The fields that hold statements: a module's or a compound statement's bodies, a try's handlers and a
# match's cases (an ExceptHandler and a match_case hold bodies in turn). A lambda's or a conditional
# expression's ``body`` is one expression, never a list.
STATEMENT_FIELDS = frozenset({"body", "orelse", "finalbody", "handlers", "cases"})


def statements(tree: ast.Module) -> Iterator[ast.AST]:
    """Yield ``tree``, its statements, handlers and match cases in ``ast.walk``'s order, never
    descending into an expression (four nodes in five of a module, and no statement is ever inside one).

    A statement's parent is always a statement, a handler or a case, so among these nodes the
    breadth-first order is the full walk's: the same depths, the same parents, the same fields in order.
    """
    todo: collections.deque[ast.AST] = collections.deque([tree])
    while todo:
        node = todo.popleft()
        yield node
        for name in node._fields:
            if name in STATEMENT_FIELDS:
                value = getattr(node, name, None)
                if isinstance(value, list):  # a lambda's or a conditional's body is one expression
                    todo.extend(v for v in value if isinstance(v, ast.AST))


def import_aliases(tree: ast.Module) -> dict[str, str]:
    """Map local names to the absolute dotted names they were imported as."""
    return aliases_of(statements(tree))  # imports are statements: in ast.walk's order, a later one wins


def aliases_of(nodes: Iterable[ast.AST]) -> dict[str, str]:
    """``import_aliases`` over ``nodes`` in their order (a later import of a name wins)."""
    out: dict[str, str] = {}
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    out[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    out[top] = top
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                out[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return out


def resolve(name: str, aliases: dict[str, str]) -> str:
    """Rewrite the first part of a dotted name through the module's imports."""
    first, dot, rest = name.partition(".")
    return aliases.get(first, first) + dot + rest
