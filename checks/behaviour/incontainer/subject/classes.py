"""The change's classes, described once for the grader; the grader's subclasses of them, made here.

The grader holds a local class for each class of the change it meets
(``grader/classes.py``), so ``type(x) is lib.Cls``, ``isinstance`` and a
test's ``class MyLexer(lib.RegexLexer)`` work as in one process. What it
needs of a class is told once, when the class first crosses: its name, its
bases (other classes of the change, crossing the same way), what its
instances offer (``protocol.caps``), which of its attributes are plain
functions (a method call is then one request: ``call_attr``), which
special methods the change itself defines, and - for a subclass of a
built-in value type (``str``, ``int``, ``tuple``...) - that base, so the
grader can hold the value itself and compare by it.

A test's subclass is made here with the test's methods as stand-ins: the
change's code calling ``self.method()`` calls back into the test.
"""

from __future__ import annotations

import datetime
import sys
import types
from collections.abc import Callable
from typing import Any

from ..channel.protocol import ARITHMETIC, CAPABILITIES, REFLECTED, caps_of_type

# Built-in value types whose subclasses the grader holds by value as well as by handle: immutable, so
# the value read when the object crosses stays true (tomlkit's String(str), sqlparse's token tuples).
VALUE_BASES: dict[type, str] = {
    int: "int", float: "float", complex: "complex", str: "str", bytes: "bytes", tuple: "tuple",
    frozenset: "frozenset", datetime.datetime: "datetime", datetime.date: "date", datetime.time: "time",
    datetime.timedelta: "timedelta",
}  # fmt: skip
# Mutable built-in containers: the grader compares a subclass of one with a test's value by its
# contents read at comparison time (``value``), never through the change's own ``__eq__``.
CONTAINER_BASES: dict[type, str] = {list: "list", dict: "dict", set: "set", bytearray: "bytearray"}
_DUNDERS = (
    frozenset(CAPABILITIES.values())
    | {"__repr__", "__str__", "__format__", "__bool__"}
    | {*ARITHMETIC, *REFLECTED}
)


def proxied(cls: type) -> bool:
    """Whether the grader holds a local class for ``cls``: a class of the change's (or any library's)."""
    module = getattr(cls, "__module__", None)
    if not isinstance(module, str) or module == "builtins":
        return False
    top = module.partition(".")[0]
    return top not in sys.stdlib_module_names and not issubclass(cls, BaseException)


def describe(cls: type, ref: Callable[[object], Any]) -> dict[str, Any]:
    """What the grader needs of ``cls`` the first time it crosses (``ref`` encodes its bases)."""
    mro = cls.__mro__
    value_base = next((name for base, name in VALUE_BASES.items() if issubclass(cls, base)), None)
    container = next((name for base, name in CONTAINER_BASES.items() if issubclass(cls, base)), None)
    own = [k for k in mro if k not in VALUE_BASES and k not in CONTAINER_BASES and k is not object]
    # (A standard-library base's C lookup - datetime.tzinfo lists its own - is the plain one.)
    plain_getattr = not any("__getattribute__" in vars(k) for k in own if proxied(k))
    methods = sorted({
        name for k in own for name, v in vars(k).items()
        if isinstance(v, types.FunctionType) and (not name.startswith("__") or name == "__init__")
        and _resolves_to(cls, name, v)
    }) if plain_getattr else []  # fmt: skip
    classmethods = sorted({
        name for k in own for name, v in vars(k).items()
        if isinstance(v, classmethod) and isinstance(v.__func__, types.FunctionType)
        and _resolves_to(cls, name, v)
    }) if plain_getattr else []  # fmt: skip
    return {
        "kind": "class",
        "name": cls.__name__,
        "classmethods": classmethods,
        "qualname": getattr(cls, "__qualname__", cls.__name__),
        "module": getattr(cls, "__module__", "") or "",
        "bases": [ref(b) for b in cls.__bases__ if proxied(b)],
        "caps": caps_of_type(cls),
        "methods": methods,
        "overrides": sorted({n for k in own for n in vars(k) if n in _DUNDERS}),
        "value": value_base,
        "container": container,
        # A tzinfo: the grader's class for it is one too, so its datetimes take it (and ask it).
        "tzinfo": issubclass(cls, datetime.tzinfo),
        "doc": cls.__doc__[:10_000] if isinstance(cls.__doc__, str) else None,
        # Its metaclass prepares a class body's namespace itself (an enum's; six's with_metaclass):
        # a test's class statement over it asks for that namespace here (``prepare``).
        "prepare": any(
            "__prepare__" in vars(k) for k in type.__dict__["__mro__"].__get__(type(cls)) if k is not type
        ),
        # What the class itself offers by its metaclass (an enum's: iterating, len, lookup by name).
        "metacaps": [] if type(cls) is type else caps_of_type(type(cls)),
    }


def proxied_instance(value: object) -> bool:
    """Whether ``value`` crosses as a handle of its class's local class rather than as a plain value.

    A subclass of a built-in value type that a library defines (an int enum, tomlkit's items,
    sqlparse's token tuples) keeps its attributes and identity that way; a namedtuple crosses
    by value, its fields and all.
    """
    cls = type(value)
    if not proxied(cls) or (issubclass(cls, tuple) and hasattr(cls, "_fields")):
        return False
    return issubclass(cls, (*VALUE_BASES, *CONTAINER_BASES))


def _resolves_to(cls: type, name: str, value: object) -> bool:
    # The function the class's own lookup finds under ``name`` (not one a subclass overrides above it).
    for k in cls.__mro__:
        if name in vars(k):
            return vars(k)[name] is value
    return False


def call_classmethod(cls: type, name: str, bind: type, args: Any, kwargs: Any) -> Any:
    """Call ``cls``'s class method ``name`` with ``bind`` as its class (what super() does)."""
    for klass in cls.__mro__:
        found = vars(klass).get(name)
        if isinstance(found, classmethod):
            return found.__func__(bind, *args, **kwargs)
    raise AttributeError(f"{cls.__name__} has no class method {name!r}")


def metaclass_of(bases: tuple[type, ...]) -> type:
    """The metaclass a class statement over ``bases`` calls: the most derived of theirs."""
    winner: type = type
    for base in bases:
        meta = type(base)
        if issubclass(meta, winner):
            winner = meta
        elif not issubclass(winner, meta):
            raise TypeError(
                "metaclass conflict: the metaclass of a derived class must be a (non-strict) subclass "
                "of the metaclasses of all its bases"
            )
    return winner


def prepare(request: dict[str, Any], decode: Callable[[Any], Any]) -> object:
    """The namespace the metaclass of a test's class statement over the change's classes prepares."""
    bases = tuple(b for b in (decode(x) for x in request.get("bases") or []) if isinstance(b, type))
    return metaclass_of(bases).__prepare__(str(request.get("name")), bases)


def make_subclass(request: dict[str, Any], decode: Callable[[Any], Any]) -> object:
    """Make the subject's side of a test's subclass of classes of the change, as its class statement
    would: by the bases' metaclass, which may make something else of it (six's ``with_metaclass``
    hands the namespace to the test's own metaclass)."""
    bases = tuple(b for b in (decode(x) for x in request.get("bases") or []) if isinstance(b, type))
    meta = metaclass_of(bases)
    if "prepared" in request:  # the namespace the metaclass prepared here, the class body run into it
        return meta(str(request.get("name")), bases, decode(request["prepared"]))
    namespace: dict[str, Any] = {}
    for name, entry in dict(request.get("namespace") or {}).items():
        if not isinstance(entry, dict):
            continue
        value = decode(entry.get("value"))
        wrap = {"classmethod": classmethod, "staticmethod": staticmethod}.get(str(entry.get("as")))
        if entry.get("as") == "property":
            parts = value if isinstance(value, list) and len(value) == 3 else [None, None, None]
            namespace[str(name)] = property(*parts)
        else:
            namespace[str(name)] = wrap(value) if wrap is not None else value
    namespace["__module__"] = str(request.get("module") or "?")
    namespace["__qualname__"] = str(request.get("qualname") or request.get("name"))
    return meta(str(request.get("name")), bases or (object,), namespace)
