"""Values as plain JSON, walked through exact built-in types; both trust domains use it.

``encode`` never asks a value how to describe itself: a ``timedelta``
subclass's ``days`` property, a list's ``__iter__`` or an ``int``'s
``__int__`` never decide what is written, the base type's own methods do.
What has no encoding is either refused (``Unserializable``, the cases'
rule: their results are compared on the host) or handed to ``ref``, which
returns a tag standing for the object (a handle the other side can use).

``decode`` builds values of known types only and resolves tags through a
callback; nothing is ever evaluated or unpickled.
"""

from __future__ import annotations

import argparse
import builtins
import collections
import datetime
import decimal
import fractions
import importlib
import json
import math
import pathlib
import sys
import types
import uuid
from collections.abc import Callable
from typing import Any

MAX_NODES = 100_000
MAX_DEPTH = 64
MESSAGE_CHARS = 300
TYPE = "__type__"

Ref = Callable[[object], dict[str, Any]]
Resolve = Callable[[dict[str, Any]], object]


class Unserializable(Exception):
    """The value has no plain-JSON encoding."""


def type_name(t: type) -> str:
    module = getattr(t, "__module__", "") or ""
    name = getattr(t, "__qualname__", "") or "?"
    return name if module == "builtins" else f"{module}.{name}"


def _field(cls: type, name: str, value: object) -> Any:
    # The base class's descriptor: a subclass property of the same name is ignored.
    return cls.__dict__[name].__get__(value, cls)


def _builtin_name(value: object) -> str | None:
    """Return the name of a built-in type or function (``ValueError``, ``len``), else None."""
    if type(value) is type:
        own = type.__dict__["__name__"].__get__(value)
    elif type(value) is types.BuiltinFunctionType:
        own = value.__name__
    else:
        return None
    if isinstance(own, str) and getattr(builtins, own, None) is value:
        return own
    return None


# Built-ins that run code, read files or reach any object's attributes: the grader never takes one
# by name from the subject (a test calling what the change returned would run them here).
UNSAFE_BUILTINS = frozenset({
    "eval", "exec", "compile", "__import__", "open", "breakpoint", "input", "globals", "locals", "vars",
    "getattr", "setattr", "delattr", "help", "exit", "quit",
})  # fmt: skip
_NAMEABLE = (
    type, types.FunctionType, types.BuiltinFunctionType, types.MethodDescriptorType,
    types.WrapperDescriptorType, types.ClassMethodDescriptorType,
)  # fmt: skip


# Standard-library modules whose classes the grader takes by name from the subject: value types
# and containers, whose construction runs no code of anyone's choosing (never os, subprocess, io...).
SAFE_CLASS_MODULES = frozenset({
    "builtins", "collections", "collections.abc", "datetime", "decimal", "fractions", "numbers", "typing",
    "enum", "uuid", "abc",
})  # fmt: skip


def stdlib_name(value: object) -> tuple[str, str] | None:
    """Return (module, qualname) naming a standard-library module, class or function, if it is one."""
    if type(value) is types.ModuleType:
        name = value.__name__
        stdlib = name.partition(".")[0] in sys.stdlib_module_names and sys.modules.get(name) is value
        return (name, "") if stdlib else None
    if not isinstance(value, _NAMEABLE):
        return None
    module = getattr(value, "__module__", None)
    if module is None:  # a method of a built-in type: str.lower
        module = getattr(getattr(value, "__objclass__", None), "__module__", None)
    qualname = getattr(value, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str):
        return None
    if module != "builtins" and module.partition(".")[0] not in sys.stdlib_module_names:
        return None
    found: object = sys.modules.get(module)
    for part in qualname.split("."):
        found = getattr(found, part, None)
    return (module, qualname) if found is value else None


def from_stdlib(data: dict[str, Any], *, safe_classes: bool = False) -> object:
    """Return the standard-library object a ``stdlib`` tag names: the receiving side's own.

    With ``safe_classes`` (the grader reading the subject) only a class of SAFE_CLASS_MODULES.
    """
    module, qualname = str(data.get("module")), str(data.get("qualname"))
    if module != "builtins" and module.partition(".")[0] not in sys.stdlib_module_names:
        raise ValueError(f"{module!r} is not a standard-library module")
    if safe_classes and module not in SAFE_CLASS_MODULES:
        raise ValueError(f"no class of {module!r} is taken by name")
    found: object = importlib.import_module(module) if not safe_classes else sys.modules.get(module)
    for part in qualname.split(".") if qualname else []:
        found = getattr(found, part)
    if safe_classes and not isinstance(found, type):
        raise ValueError(f"{module}.{qualname} is not a class")
    return found


class Encoder:
    """One encoding pass; ``extended`` adds the types only the pytest bridge knows.

    ``names`` is what may go by name: "all" (the grader: every built-in and
    standard-library class or function, which the subject takes as its
    own), or "safe" (the subject: built-ins but UNSAFE_BUILTINS; the rest
    of the standard library and those go as handles).
    """

    def __init__(
        self,
        ref: Ref | None = None,
        *,
        extended: bool = False,
        names: str = "safe",
        scrub: Callable[[dict[Any, Any]], dict[Any, Any]] | None = None,
        handle: Callable[[object], bool] | None = None,
    ) -> None:
        self.ref = ref
        self.extended = extended
        self.names = names
        # What a dict loses before it crosses (the grader: the runner's environment variables).
        self.scrub = scrub
        # The value itself as its built-in base type (a dict subclass's items), never a handle to it.
        self.as_value = False
        # What goes to ``ref`` whatever type it is (the grader: its handles, some of them value subclasses).
        self.handle = handle
        self.nodes = 0

    def __call__(self, value: object, depth: int = 0) -> Any:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise Unserializable(f"the value has more than {MAX_NODES} parts")
        if depth > MAX_DEPTH:
            raise Unserializable(f"the value is nested deeper than {MAX_DEPTH} levels (or is cyclic)")
        if self.ref is not None and self.extended and not (depth == 0 and self.as_value):
            tagged = self._special(value)
            if tagged is not None:
                return tagged
        return self._plain(value, depth)

    def _special(self, value: object) -> dict[str, Any] | None:
        """Tag what must never be copied: handles, modules, classes and functions, builtins by name."""
        if self.handle is not None and self.ref is not None and self.handle(value):
            return self.ref(value)
        name = _builtin_name(value)
        if name is not None and name not in UNSAFE_BUILTINS:
            return {TYPE: "builtin", "name": name}
        named = stdlib_name(value)
        safe = isinstance(value, type) and named is not None and named[0] in SAFE_CLASS_MODULES
        if named is not None and (self.names == "all" or safe):
            return {TYPE: "stdlib", "module": named[0], "qualname": named[1]}
        if type(value) in _PLAIN:
            return None
        if isinstance(value, (datetime.timedelta, datetime.date, datetime.time, decimal.Decimal)):
            return None
        if type(value) in (fractions.Fraction, uuid.UUID, slice, range) or type(value) in _PATHS:
            return None
        if value is Ellipsis or type(value) in _NAMESPACES:
            return None
        if _exact_builtin_subclass(value) or self.ref is None:
            return None
        return self.ref(value)

    def _plain(self, value: object, depth: int) -> Any:
        if value is None or type(value) is bool:
            return value
        if isinstance(value, int):
            return int.__int__(value)
        if isinstance(value, float):
            f = float.__float__(value)
            if math.isfinite(f):
                return f
            return {TYPE: "float", "value": "nan" if math.isnan(f) else ("inf" if f > 0 else "-inf")}
        if isinstance(value, str):
            return str.__str__(value)
        if isinstance(value, (bytes, bytearray)):
            return {TYPE: "bytes", "hex": bytes(memoryview(value)).hex()}
        if isinstance(value, complex):
            return {TYPE: "complex", "real": self(_field(complex, "real", value), depth + 1),
                    "imag": self(_field(complex, "imag", value), depth + 1)}  # fmt: skip
        if isinstance(value, list):
            return [self(v, depth + 1) for v in list.__iter__(value)]
        if isinstance(value, tuple):
            items = [self(v, depth + 1) for v in tuple.__iter__(value)]
            if self.extended and _is_namedtuple(type(value)):
                fields = [str(f) for f in tuple.__iter__(type(value)._fields)]  # type: ignore[attr-defined]
                return {TYPE: "namedtuple", "name": type(value).__name__, "fields": fields, "items": items}
            return {TYPE: "tuple", "items": items}
        if isinstance(value, dict):
            items = list(dict.items(value if self.scrub is None else self.scrub(value)))
            if all(type(k) is str for k, _ in items) and not any(k == TYPE for k, _ in items):
                return {k: self(v, depth + 1) for k, v in items}
            return {TYPE: "dict", "items": [[self(k, depth + 1), self(v, depth + 1)] for k, v in items]}
        if isinstance(value, (set, frozenset)):
            members = set.__iter__(value) if isinstance(value, set) else frozenset.__iter__(value)
            encoded = [self(v, depth + 1) for v in members]
            encoded.sort(key=lambda e: json.dumps(e, sort_keys=True))
            return {TYPE: "set" if isinstance(value, set) else "frozenset", "items": encoded}
        if isinstance(value, datetime.timedelta):
            days = _field(datetime.timedelta, "days", value)
            seconds = _field(datetime.timedelta, "seconds", value)
            micro = _field(datetime.timedelta, "microseconds", value)
            return {TYPE: "timedelta", "seconds": days * 86400 + seconds, "microseconds": micro}
        if isinstance(value, datetime.datetime):
            return {TYPE: "datetime", "iso": datetime.datetime.isoformat(value)}
        if isinstance(value, datetime.date):
            return {TYPE: "date", "iso": datetime.date.isoformat(value)}
        if isinstance(value, datetime.time):
            return {TYPE: "time", "iso": datetime.time.isoformat(value)}
        if isinstance(value, decimal.Decimal):
            return {TYPE: "decimal", "value": decimal.Decimal.__str__(value)}
        if self.extended:
            if type(value) is fractions.Fraction:
                return {TYPE: "fraction", "n": value.numerator, "d": value.denominator}
            if type(value) is uuid.UUID:
                return {TYPE: "uuid", "hex": value.hex}
            if type(value) in _PATHS:
                return {TYPE: "path", "kind": type(value).__name__, "path": str(value)}
            if type(value) is slice:
                parts = (value.start, value.stop, value.step)
                return {TYPE: "slice", "parts": [self(v, depth + 1) for v in parts]}
            if type(value) is range:
                return {TYPE: "range", "parts": [value.start, value.stop, value.step]}
            if value is Ellipsis:
                return {TYPE: "ellipsis"}
            if type(value) in _NAMESPACES:
                # Plain attribute bags of the standard library (argparse's parse_args(), SimpleNamespace)
                # compare by their attributes: they cross by value, read from their own __dict__.
                attrs = dict(object.__getattribute__(value, "__dict__"))
                bag = {str(k): self(v, depth + 1) for k, v in attrs.items() if type(k) is str}
                return {TYPE: "namespace", "kind": _NAMESPACES[type(value)], "items": bag}
        if self.ref is not None:
            return self.ref(value)
        raise Unserializable(f"a result of type {type_name(type(value))} has no JSON encoding")


_COMPARISONS = ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__")
_NAMESPACES: dict[type, str] = {argparse.Namespace: "argparse", types.SimpleNamespace: "simple"}
_PATHS = (pathlib.PosixPath, pathlib.PurePosixPath)
_PLAIN = (type(None), bool, int, float, str, bytes, bytearray, complex, list, tuple, dict, set, frozenset)
_BASES = (int, float, str, bytes, list, tuple, dict, set, frozenset)


def _exact_builtin_subclass(value: object) -> bool:
    """Return True for a subclass of a built-in value type that adds no behaviour of its own.

    An IntEnum member, a namedtuple or an OrderedDict crosses as its base
    value; a subclass that overrides comparison keeps its identity (a handle).
    """
    t = type(value)
    if not isinstance(value, _BASES) or isinstance(value, bool):
        return False
    for klass in t.__mro__:
        if klass in _BASES or klass is object:
            break
        if isinstance(value, _MUTABLE) and set(vars(klass)) - _PLAIN_CLASS and not _stdlib_class(klass):
            return False  # BarrelList: its own methods act on the original, which a copy would not be
        compares = any(name in vars(klass) for name in _COMPARISONS)
        if compares and not (klass.__module__ in ("enum", "collections") or _is_namedtuple(klass)):
            return False
    return True


_MUTABLE = (list, dict, set)
_PLAIN_CLASS = frozenset({"__module__", "__qualname__", "__doc__", "__dict__", "__weakref__", "__slots__",
                          "__init__", "__annotations__", "__orig_bases__", "__parameters__"})  # fmt: skip


def _stdlib_class(klass: type) -> bool:
    return str(klass.__module__).partition(".")[0] in sys.stdlib_module_names


def _is_namedtuple(klass: type) -> bool:
    return issubclass(klass, tuple) and hasattr(klass, "_fields")


def encode(value: object) -> Any:
    """Encode a case's result as plain JSON, or raise Unserializable saying why not."""
    return Encoder()(value)


def describe(exc: BaseException) -> dict[str, Any]:
    """Describe an exception by its real type (never its ``__class__``) and first message line."""
    t = type(exc)
    return {
        "type": type_name(t),
        "mro": [c.__name__ for c in t.__mro__] + [type_name(c) for c in t.__mro__],
        "message": first_line(exc),
    }


def exception_text(exc: BaseException) -> str:
    """Return ``str(exc)`` as a real str, whatever a hostile ``__str__`` does."""
    try:
        return str.__str__(str(exc))
    except BaseException:  # a hostile __str__ may raise anything
        return "<the exception's message could not be read>"


def first_line(exc: BaseException) -> str:
    lines = exception_text(exc).strip().splitlines()
    return (lines[0] if lines else "")[:MESSAGE_CHARS]


def decode(data: Any, resolve: Resolve | None = None, depth: int = 0) -> Any:
    """Build the value ``data`` encodes; tags other than values go to ``resolve``."""
    if depth > MAX_DEPTH:
        raise ValueError("the value is nested too deeply")
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if isinstance(data, list):
        return [decode(v, resolve, depth + 1) for v in data]
    if not isinstance(data, dict):
        raise ValueError(f"not an encoded value: {type(data).__name__}")
    kind = data.get(TYPE)
    if kind is None:
        return {k: decode(v, resolve, depth + 1) for k, v in data.items()}
    if not isinstance(kind, str):
        raise ValueError("a tag must be a string")
    make = _DECODERS.get(kind)
    if make is not None:
        return make(data, resolve, depth)
    if resolve is None:
        raise ValueError(f"unknown tag {kind!r}")
    return resolve(data)


def _items(data: dict[str, Any], resolve: Resolve | None, depth: int) -> list[Any]:
    items = data.get("items")
    if not isinstance(items, list):
        raise ValueError("a collection needs a list of items")
    return [decode(v, resolve, depth + 1) for v in items]


def _parts(data: dict[str, Any], resolve: Resolve | None, depth: int) -> list[Any]:
    parts = data.get("parts")
    if not isinstance(parts, list) or len(parts) != 3:
        raise ValueError("a slice or range needs three parts")
    return [decode(v, resolve, depth + 1) for v in parts]


def _float(data: dict[str, Any], *_: object) -> float:
    return float({"nan": "nan", "inf": "inf", "-inf": "-inf"}[str(data.get("value"))])


def _path(data: dict[str, Any], *_: object) -> pathlib.PurePath:
    kind = {"PosixPath": pathlib.PosixPath, "PurePosixPath": pathlib.PurePosixPath}[str(data.get("kind"))]
    return kind(str(data["path"]))


def _builtin(data: dict[str, Any], *_: object) -> object:
    name = str(data.get("name"))
    if name in UNSAFE_BUILTINS or not hasattr(builtins, name):
        raise ValueError(f"no built-in named {name!r} is taken by name")
    return getattr(builtins, name)


_NAMEDTUPLES: dict[tuple[str, tuple[str, ...]], type] = {}
_MAX_NAMEDTUPLES = 1000


def _namedtuple(data: dict[str, Any], resolve: Resolve | None, depth: int) -> tuple[Any, ...]:
    fields = data.get("fields")
    if not isinstance(fields, list) or not all(isinstance(f, str) for f in fields):
        raise ValueError("a namedtuple needs a list of field names")
    key = (str(data.get("name")), tuple(fields))
    items = _items(data, resolve, depth)
    cls = _NAMEDTUPLES.get(key)
    if cls is None:
        if len(_NAMEDTUPLES) >= _MAX_NAMEDTUPLES:
            return tuple(items)
        # namedtuple checks every name is an identifier that is not a keyword; the class is a global
        # of this module, so a test can pickle what it was given.
        cls = _NAMEDTUPLES[key] = collections.namedtuple(*key)
        cls.__qualname__ = f"_namedtuple_{len(_NAMEDTUPLES)}"
        cls.__module__ = __name__
        globals()[cls.__qualname__] = cls
    if len(items) != len(fields):
        raise ValueError("a namedtuple's items do not match its fields")
    return cls(*items)  # type: ignore[no-any-return]


def _namespace(data: dict[str, Any], resolve: Resolve | None, depth: int) -> object:
    kind = {"argparse": argparse.Namespace, "simple": types.SimpleNamespace}[str(data.get("kind"))]
    items = data.get("items")
    if not isinstance(items, dict):
        raise ValueError("a namespace needs a mapping of attributes")
    return kind(**{str(k): decode(v, resolve, depth + 1) for k, v in items.items() if str(k).isidentifier()})


_DECODERS: dict[str, Callable[[dict[str, Any], Resolve | None, int], Any]] = {
    "float": _float,
    "bytes": lambda d, *_: bytes.fromhex(str(d["hex"])),
    "complex": lambda d, r, n: complex(decode(d["real"], r, n + 1), decode(d["imag"], r, n + 1)),
    "tuple": lambda d, r, n: tuple(_items(d, r, n)),
    "set": lambda d, r, n: set(_items(d, r, n)),
    "frozenset": lambda d, r, n: frozenset(_items(d, r, n)),
    "dict": lambda d, r, n: {decode(k, r, n + 1): decode(v, r, n + 1) for k, v in d["items"]},
    "timedelta": lambda d, *_: datetime.timedelta(
        seconds=int(d["seconds"]), microseconds=int(d["microseconds"])
    ),
    "datetime": lambda d, *_: datetime.datetime.fromisoformat(str(d["iso"])),
    "date": lambda d, *_: datetime.date.fromisoformat(str(d["iso"])),
    "time": lambda d, *_: datetime.time.fromisoformat(str(d["iso"])),
    "decimal": lambda d, *_: decimal.Decimal(str(d["value"])),
    "fraction": lambda d, *_: fractions.Fraction(int(d["n"]), int(d["d"])),
    "uuid": lambda d, *_: uuid.UUID(hex=str(d["hex"])),
    "path": _path,
    "namedtuple": _namedtuple,
    "slice": lambda d, r, n: slice(*_parts(d, r, n)),
    "range": lambda d, r, n: range(*(int(v) for v in _parts(d, None, n))),
    "ellipsis": lambda *_: Ellipsis,
    "namespace": _namespace,
    "builtin": _builtin,
}
