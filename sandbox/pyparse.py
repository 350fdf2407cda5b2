"""Python source parsed on the host, one parse at a time in this process.

CPython 3.11's AST constructor keeps its recursion depth in per-interpreter
state, and a conversion that fails leaves it off by one: two threads parsing
at once (the shape gate's hygiene beside the behaviour layer reading a suite)
can meet ``SystemError: AST constructor recursion depth mismatch``
(python/cpython#106905), which a layer reports as an internal error, so the
check as ``neutral``. Every parse of the gate's host process goes through
:func:`parse_python`, which holds one lock; the in-container code runs in
processes of its own.
"""

from __future__ import annotations

import ast
import threading
from typing import Literal, overload

_PARSING = threading.Lock()


@overload
def parse_python(source: str | bytes, filename: str = ..., mode: Literal["exec"] = ...) -> ast.Module: ...
@overload
def parse_python(source: str | bytes, filename: str = ..., *, mode: Literal["eval"]) -> ast.Expression: ...
def parse_python(source: str | bytes, filename: str = "<unknown>", mode: str = "exec") -> ast.AST:
    """``ast.parse(source, filename, mode)``, never beside another parse of this process.

    Raises what ``ast.parse`` raises (SyntaxError, ValueError for null bytes, RecursionError and
    MemoryError for nesting past the parser): callers reading the change's files catch those.
    """
    with _PARSING:
        return ast.parse(source, filename=filename, mode=mode)
