"""Which bytecode instruction is taking an iterable whole: ``list(x)``, ``sorted(x)``, ``[*x]``...

A handle's items may come many to a request only where whatever asks for
them can run nothing between two items - no test code, no request of its
own - and always asks for all of them, so the subject runs the change's
iterator exactly as far as it would in one process. This module says
whether the instruction a test's frame is executing is one of those: the
C routine behind it materialises its operand into a list or tuple before
anything else is done with the items (``list_extend``,
``PySequence_Tuple``):

- ``list(x)``, ``tuple(x)`` and ``sorted(x)`` (with ``reverse``, and a
  ``key`` that is a lambda, a function of the test's - its calls run in
  frames of their own - or a built-in that iterates nothing), the callee
  named by a global or module-level name that resolves, now, to the
  built-in itself (a test's own ``list`` is never taken for it);
- ``"sep".join(x)`` on a string or bytes literal;
- ``[*x]``, ``(*x,)`` and ``a, *rest = x``.

Anything else - a ``for`` loop, a comprehension, ``set()``, ``sum()``,
``min()``, ``in``, ``zip()``, ``bytes()``, ``f(*x)`` (the callee runs under
the same instruction), a method named ``extend``, a branch inside the
call's arguments, a Python this module does not know - is not, and its
items keep coming one request each. The analysis reads only the code
object (``dis``) and the frame's global and built-in namespaces; it never
reads the frame's locals (that would keep a snapshot of them alive in the
test's frame). Which object the instruction is consuming is
``iteration.py``'s to confirm.
"""

from __future__ import annotations

import dis
import sys
import types
from dataclasses import dataclass
from typing import Any

# The instructions that materialise their operand whatever it is (CPython 3.11's list_extend), and the
# built-ins whose call does. Not CALL_FUNCTION_EX: ``f(*x)`` materialises x, but under the same
# instruction the callee runs too, and may take another of its arguments partly (bytearray.extend).
_WHOLE_OPCODES = frozenset({"LIST_EXTEND", "UNPACK_EX"})
_CALLEES: dict[str, object] = {"list": list, "tuple": tuple, "sorted": sorted}
_SORTED_KEYWORDS = frozenset({"key", "reverse"})
SUPPORTED = sys.version_info[:2] == (3, 11)

# What an instruction pops and pushes, for the walk back over a call's arguments (3.11); an
# instruction not listed ends the walk (the call is not recognised).
_FIXED: dict[str, tuple[int, int]] = {
    **dict.fromkeys(("LOAD_FAST", "LOAD_CONST", "LOAD_NAME", "LOAD_DEREF", "LOAD_CLASSDEREF", "LOAD_CLOSURE",
                     "PUSH_NULL"), (0, 1)),
    **dict.fromkeys(("LOAD_ATTR", "LIST_TO_TUPLE", "UNARY_NEGATIVE", "UNARY_POSITIVE", "UNARY_NOT",
                     "UNARY_INVERT", "GET_ITER"), (1, 1)),
    **dict.fromkeys(("BINARY_SUBSCR", "BINARY_OP", "COMPARE_OP", "IS_OP", "CONTAINS_OP"), (2, 1)),
    "LOAD_METHOD": (1, 2),
    "LIST_EXTEND": (1, 0),
    "KW_NAMES": (0, 0),
}  # fmt: skip


def _effect(ins: dis.Instruction) -> tuple[int, int] | None:
    fixed = _FIXED.get(ins.opname)
    if fixed is not None:
        return fixed
    arg = ins.arg or 0
    if ins.opname == "LOAD_GLOBAL":
        return 0, 1 + (arg & 1)
    if ins.opname in ("BUILD_LIST", "BUILD_TUPLE", "BUILD_SET", "BUILD_STRING", "BUILD_SLICE"):
        return arg, 1
    if ins.opname == "PRECALL":
        return 0, 0
    if ins.opname == "CALL":
        return arg + 2, 1
    if ins.opname == "MAKE_FUNCTION":  # a lambda: its code, and its defaults, closure... by the flags
        return 1 + bin(arg & 0xF).count("1"), 1
    return None


# A key function for sorted() that runs nothing under the call's own instruction but itself: the
# test's own function (its frame is another), or a built-in that iterates nothing.
_PLAIN_KEYS: tuple[object, ...] = (len, str, repr, abs, int, float, hash, id, ord, bool)


@dataclass(frozen=True)
class Call:
    """A call the code shows: the callee's name, how it is named, its keywords, sorted()'s key."""

    name: str
    module_level: bool = False
    keywords: frozenset[str] = frozenset()
    key: tuple[str, bool] | None = None  # a name (module level?) that the key is; None: no key or a lambda


# What the static part found: "whole" for an instruction that always materialises (or a literal's
# join), a Call to resolve at run time, None for anything else.
Shape = Call | str | None
_SHAPES: dict[tuple[types.CodeType, int], Shape] = {}
_MAX_SHAPES = 20_000


def whole(frame: types.FrameType) -> bool:
    """Whether ``frame``'s current instruction takes the iterable it is handed whole, in C."""
    if not SUPPORTED:
        return False
    key = (frame.f_code, frame.f_lasti)
    if key in _SHAPES:
        shape = _SHAPES[key]
    else:
        shape = _shape(frame.f_code, frame.f_lasti)
        if len(_SHAPES) < _MAX_SHAPES:
            _SHAPES[key] = shape
    if not isinstance(shape, Call):
        return shape == "whole"
    callee = _lookup(frame, shape.name, module_level=shape.module_level)
    if callee is None or callee is not _CALLEES.get(shape.name):
        return False
    if callee is not sorted:
        return not shape.keywords
    if not shape.keywords <= _SORTED_KEYWORDS:
        return False
    if shape.key is None:
        return True
    function = _lookup(frame, shape.key[0], module_level=shape.key[1])
    return isinstance(function, types.FunctionType) or any(function is k for k in _PLAIN_KEYS)


def _lookup(frame: types.FrameType, name: str, *, module_level: bool) -> object:
    """What ``name`` names for the frame now: its namespace (module level), globals, built-ins."""
    namespaces = [frame.f_globals, frame.f_builtins]
    if module_level:
        if frame.f_code.co_flags & 0x1:  # CO_OPTIMIZED: no LOAD_NAME in a function's code
            return None
        namespaces.insert(0, frame.f_locals)  # a module's or class body's own mapping, no snapshot
    for namespace in namespaces:
        if type(namespace) is not dict:  # a class body's own mapping type could run code on lookup
            return None
        if name in namespace:
            return namespace[name]
    return None


def _shape(code: types.CodeType, lasti: int) -> Shape:
    instructions = list(dis.get_instructions(code))
    at = next((i for i, ins in enumerate(instructions) if ins.offset == lasti), None)
    if at is None:
        return None
    current = instructions[at]
    if current.opname in _WHOLE_OPCODES:
        return "whole"
    if current.opname == "CALL":
        at -= 1
        if at < 0 or instructions[at].opname != "PRECALL" or instructions[at].arg != current.arg:
            return None
    elif current.opname != "PRECALL":  # a specialised PRECALL makes the call itself
        return None
    count = instructions[at].arg or 0
    last = at - 1
    names: tuple[str, ...] = ()
    if last >= 0 and instructions[last].opname == "KW_NAMES":
        index = instructions[last].arg or 0
        found = code.co_consts[index] if index < len(code.co_consts) else None
        if not (isinstance(found, tuple) and all(isinstance(n, str) for n in found)):
            return None
        names, last = found, last - 1
    # Where each argument's instructions start, last argument first.
    starts: list[int] = []
    end = last
    for _ in range(count):
        first = _arguments_start(instructions, end, 1)
        if first is None:
            return None
        starts.append(first)
        end = first - 1
    if count - len(names) != 1 or not starts:
        return None
    if any(ins.is_jump_target for ins in instructions[starts[-1] : at + 1]):
        return None  # a branch inside the arguments: not one straight expression
    keywords = dict(zip(names, reversed(starts[: len(names)]), strict=True))
    key = None
    if "key" in keywords:
        key = _key(instructions, keywords["key"], keywords, last)
        if key == "unknown":
            return None
    return _callee(instructions, starts[-1] - 1, frozenset(names), key if isinstance(key, tuple) else None)


def _key(instructions: list[dis.Instruction], first: int, keywords: dict[str, int], last: int) -> Any:
    """sorted()'s key argument: (name, module level) for a name, "lambda", or "unknown"."""
    after = sorted(i for i in keywords.values() if i > first)
    stop = after[0] - 1 if after else last
    region = instructions[first : stop + 1]
    if len(region) == 1 and region[0].opname in ("LOAD_GLOBAL", "LOAD_NAME"):
        return (str(region[0].argval), region[0].opname == "LOAD_NAME")
    if region and region[-1].opname == "MAKE_FUNCTION":
        return "lambda"
    return "unknown"


def _arguments_start(instructions: list[dis.Instruction], last: int, count: int) -> int | None:
    """Walk back from ``last`` over ``count`` stack values; return the index of the first argument."""
    need, k = count, last
    while need > 0:
        if k < 0:
            return None
        effect = _effect(instructions[k])
        if effect is None:
            return None
        pops, pushes = effect
        if pushes > need:
            return None
        need += pops - pushes
        k -= 1
    return k + 1


def _callee(instructions: list[dis.Instruction], k: int, keywords: frozenset[str], key: Any) -> Shape:
    if k < 0:
        return None
    ins = instructions[k]
    if ins.opname == "LOAD_GLOBAL" and (ins.arg or 0) & 1 and isinstance(ins.argval, str):
        return Call(ins.argval, keywords=keywords, key=key)
    if ins.opname == "LOAD_NAME" and k >= 1 and instructions[k - 1].opname == "PUSH_NULL":
        return Call(str(ins.argval), module_level=True, keywords=keywords, key=key)
    literal = instructions[k - 1] if k >= 1 else None
    if (
        ins.opname == "LOAD_METHOD"
        and ins.argval == "join"
        and not keywords
        and literal is not None
        and literal.opname == "LOAD_CONST"
        and type(literal.argval) in (str, bytes)
    ):
        return "whole"
    return None
