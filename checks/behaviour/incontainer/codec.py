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

import builtins
import datetime
import decimal
import fractions
import json
import math
import pathlib
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


class Encoder:
    """One encoding pass; ``extended`` adds the types only the pytest bridge knows."""

    def __init__(self, ref: Ref | None = None, *, extended: bool = False) -> None:
        self.ref = ref
        self.extended = extended
        self.nodes = 0

    def __call__(self, value: object, depth: int = 0) -> Any:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise Unserializable(f"the value has more than {MAX_NODES} parts")
        if depth > MAX_DEPTH:
            raise Unserializable(f"the value is nested deeper than {MAX_DEPTH} levels (or is cyclic)")
        if self.ref is not None and self.extended:
            tagged = self._special(value)
            if tagged is not None:
                return tagged
        return self._plain(value, depth)

    def _special(self, value: object) -> dict[str, Any] | None:
        """Tag what must never be copied: handles, modules, classes and functions, builtins by name."""
        name = _builtin_name(value)
        if name is not None:
            return {TYPE: "builtin", "name": name}
        if type(value) in _PLAIN:
            return None
        if isinstance(value, (datetime.timedelta, datetime.date, datetime.time, decimal.Decimal)):
            return None
        if type(value) in (fractions.Fraction, uuid.UUID) or type(value) in _PATHS:
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
            return {TYPE: "tuple", "items": [self(v, depth + 1) for v in tuple.__iter__(value)]}
        if isinstance(value, dict):
            items = list(dict.items(value))
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
        if self.ref is not None:
            return self.ref(value)
        raise Unserializable(f"a result of type {type_name(type(value))} has no JSON encoding")


_COMPARISONS = ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__")
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
        compares = any(name in vars(klass) for name in _COMPARISONS)
        if compares and not (klass.__module__ in ("enum", "collections") or _is_namedtuple(klass)):
            return False
    return True


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


def _float(data: dict[str, Any], *_: object) -> float:
    return float({"nan": "nan", "inf": "inf", "-inf": "-inf"}[str(data.get("value"))])


def _path(data: dict[str, Any], *_: object) -> pathlib.PurePath:
    kind = {"PosixPath": pathlib.PosixPath, "PurePosixPath": pathlib.PurePosixPath}[str(data.get("kind"))]
    return kind(str(data["path"]))


def _builtin(data: dict[str, Any], *_: object) -> object:
    name = str(data.get("name"))
    if name.startswith("_") or not hasattr(builtins, name):
        raise ValueError(f"no built-in named {name!r}")
    return getattr(builtins, name)


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
    "builtin": _builtin,
}
