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
import json
import math
import pathlib
import re
import sys
import types
import uuid
from collections.abc import Callable
from typing import Any

from .byname import UNSAFE_BUILTINS, builtin_name, safe_class, stdlib_name

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
        # How many parts a value may have (a differential check's timed results may have more).
        self.max_nodes = MAX_NODES
        # A container kept in step on both sides goes by its number (``kept.py``); None: nothing is kept.
        self.kept: Callable[[object, Encoder, int], dict[str, Any] | None] | None = None
        # What a pass that is abandoned (a later part could not be encoded) must take back.
        self.undo: list[Callable[[], None]] = []
        # What the other side is given of a string (the grader: one it restored, as the subject wrote it).
        self.strings: Callable[[str], str] | None = None
        # Which tzinfo of an aware datetime or time goes by ``ref`` (the other side's own object, asked
        # its offset there) rather than as the fixed offset it gives now: the change's own tzinfo.
        self.tz_ref: Callable[[object], bool] | None = None

    def __call__(self, value: object, depth: int = 0) -> Any:
        self.nodes += 1
        if self.nodes > self.max_nodes:
            raise Unserializable(f"the value has more than {self.max_nodes} parts")
        if depth > MAX_DEPTH:
            raise Unserializable(f"the value is nested deeper than {MAX_DEPTH} levels (or is cyclic)")
        if self.kept is not None and type(value) in _KEEPABLE:
            tag = self.kept(value, self, depth)
            if tag is not None:
                return tag
        if self.strings is not None and type(value) is str:
            return _str(self.strings(value))
        exact = _EXACT.get(id(type(value)))  # by identity: a metaclass's __eq__ or __hash__ is not asked
        if exact is not None and (self.extended or exact[1]):
            # Exactly a value type (never a handle: each side's ``handle`` claims classes of its own).
            return exact[0](self, value, depth)
        if self.ref is not None and self.extended and not (depth == 0 and self.as_value):
            tagged = self._special(value)
            if tagged is not None:
                return tagged
        return self._plain(value, depth)

    def _special(self, value: object) -> dict[str, Any] | None:
        """Tag what must never be copied: handles, modules, classes and functions, builtins by name."""
        if self.handle is not None and self.ref is not None and self.handle(value):
            return self.ref(value)
        name = builtin_name(value)
        if name is not None and name not in UNSAFE_BUILTINS:
            return {TYPE: "builtin", "name": name}
        named = stdlib_name(value)
        safe = isinstance(value, type) and named is not None and safe_class(named)
        if named is not None and (self.names == "all" or safe):
            return {TYPE: "stdlib", "module": named[0], "qualname": named[1]}
        t = type(value)
        base = _value_base(t)
        if base is t or base in _SUBCLASSES_BY_VALUE or id(t) in _EXTENDED_IDS:
            return None  # a value (a datetime subclass's too); other subclasses only when plain
        if _exact_builtin_subclass(value) or self.ref is None:
            return None
        return self.ref(value)

    def _plain(self, value: object, depth: int) -> Any:
        t = type(value)
        base = _value_base(t)
        if base is not None:
            return _BY_BASE[base](self, value, depth)
        if self.extended and id(t) in _EXTENDED_IDS:
            return _EXTENDED[t](self, value, depth)
        if self.ref is not None:
            return self.ref(value)
        raise Unserializable(f"a result of type {type_name(t)} has no JSON encoding")


_MRO = type.__dict__["__mro__"].__get__  # the real one: a metaclass's ``__mro__`` property is not asked


def _value_base(t: type) -> type | None:
    """The nearest of ``_BY_BASE`` in ``t``'s real MRO (bool before int, datetime before date)."""
    for klass in _MRO(t):
        if id(klass) in _BASE_IDS:
            return klass  # type: ignore[no-any-return]
    return None


_SURROGATES = re.compile("[\ud800-\udfff]")


def plain_text(text: str) -> bool:
    """Whether ``text`` crosses as a JSON string exactly: not when it holds a surrogate code point,
    which JSON's escapes cannot tell apart (two lone surrogates read back as one astral character)."""
    return text.isascii() or _SURROGATES.search(text) is None


def _str(text: str) -> Any:
    if plain_text(text):
        return text
    return {TYPE: "str", "utf32": text.encode("utf-32-le", "surrogatepass").hex()}


def _encode_float(e: Encoder, value: Any, depth: int) -> Any:
    f = float.__float__(value)
    if math.isfinite(f):
        return f
    return {TYPE: "float", "value": "nan" if math.isnan(f) else ("inf" if f > 0 else "-inf")}


def _tuple(e: Encoder, value: Any, depth: int) -> Any:
    items = [e(v, depth + 1) for v in tuple.__iter__(value)]
    if e.extended and _is_namedtuple(type(value)):
        fields = [str(f) for f in tuple.__iter__(type(value)._fields)]
        return {TYPE: "namedtuple", "name": type(value).__name__, "fields": fields, "items": items}
    return {TYPE: "tuple", "items": items}


def _dict(e: Encoder, value: Any, depth: int) -> Any:
    items = list(dict.items(value if e.scrub is None else e.scrub(value)))
    if e.strings is not None:
        items = [(e.strings(k) if type(k) is str else k, v) for k, v in items]
    if all(type(k) is str and plain_text(k) for k, _ in items) and not any(k == TYPE for k, _ in items):
        return {k: e(v, depth + 1) for k, v in items}
    return {TYPE: "dict", "items": [[e(k, depth + 1), e(v, depth + 1)] for k, v in items]}


def _members(kind: type[set[Any]] | type[frozenset[Any]]) -> Encode:
    def encode(e: Encoder, value: Any, depth: int) -> Any:
        encoded = [e(v, depth + 1) for v in kind.__iter__(value)]
        encoded.sort(key=lambda x: json.dumps(x, sort_keys=True))
        return {TYPE: kind.__name__, "items": encoded}

    return encode


def _timedelta(e: Encoder, value: Any, depth: int) -> Any:
    days = _field(datetime.timedelta, "days", value)
    seconds = _field(datetime.timedelta, "seconds", value)
    micro = _field(datetime.timedelta, "microseconds", value)
    return {TYPE: "timedelta", "seconds": days * 86400 + seconds, "microseconds": micro}


def _folded(kind: type[datetime.datetime] | type[datetime.time], value: Any) -> dict[str, Any]:
    # Its ISO text, and PEP 495's fold, which the text does not hold (the later of a repeated hour).
    tagged = {TYPE: kind.__name__, "iso": kind.isoformat(value)}
    return {**tagged, "fold": 1} if _field(kind, "fold", value) else tagged


def _dated(kind: type[datetime.datetime] | type[datetime.time]) -> Encode:
    """An aware datetime or time whose tzinfo is the change's (``Encoder.tz_ref``) goes as its naive
    text and its tzinfo by reference, rebuilt on the other side with that side's own object: its text
    would ask the tzinfo its offset, which for a handle is a request encoding the datetime again."""

    def encode(e: Encoder, value: Any, depth: int) -> Any:
        tz = _field(kind, "tzinfo", value)
        ref, by_ref = e.ref, e.tz_ref
        if tz is None or type(tz) is datetime.timezone or ref is None or by_ref is None or not by_ref(tz):
            return _folded(kind, value)
        return {**_folded(kind, kind.replace(value, tzinfo=None)), "tz": ref(tz)}

    return encode


def _unfolded(
    kind: type[datetime.datetime] | type[datetime.time],
    data: dict[str, Any],
    resolve: Resolve | None,
    depth: int,
) -> Any:
    found = kind.fromisoformat(str(data["iso"]))
    if "tz" in data:
        tz = decode(data["tz"], resolve, depth + 1)
        if not isinstance(tz, datetime.tzinfo) or found.tzinfo is not None:
            raise ValueError("a datetime's tzinfo must be a tzinfo, with a naive text")
        found = found.replace(tzinfo=tz)
    return found.replace(fold=1) if data.get("fold") == 1 else found


def _timezone(e: Encoder, value: Any, depth: int) -> Any:
    # Its constructor's own arguments (an offset, and a name only when it was given one).
    offset, *name = datetime.timezone.__getinitargs__(value)  # type: ignore[attr-defined]
    span = _timedelta(e, offset, depth)
    tagged = {TYPE: "timezone", "seconds": span["seconds"], "microseconds": span["microseconds"]}
    return {**tagged, "name": str.__str__(name[0])} if name else tagged


def _decode_timedelta(data: dict[str, Any], *_: object) -> datetime.timedelta:
    try:
        return datetime.timedelta(seconds=int(data["seconds"]), microseconds=int(data["microseconds"]))
    except OverflowError as exc:  # past timedelta's range: not a value we can build
        raise ValueError(str(exc)) from None


def _decode_timezone(data: dict[str, Any], *_: object) -> datetime.timezone:
    offset, name = _decode_timedelta(data), data.get("name")
    return datetime.timezone(offset) if name is None else datetime.timezone(offset, str(name))


def _namespace_bag(e: Encoder, value: Any, depth: int) -> Any:
    # Plain attribute bags of the standard library (argparse's parse_args(), SimpleNamespace)
    # compare by their attributes: they cross by value, read from their own __dict__.
    attrs = dict(object.__getattribute__(value, "__dict__"))
    bag = {str(k): e(v, depth + 1) for k, v in attrs.items() if type(k) is str}
    return {TYPE: "namespace", "kind": _NAMESPACES[type(value)], "items": bag}


Encode = Callable[[Encoder, Any, int], Any]

# Each value type by the nearest of these in its MRO, read through that class's own methods (never
# the value's). A subclass that reaches here crosses as its base (``_special`` decides which may).
_BY_BASE: dict[type, Encode] = {
    type(None): lambda e, v, d: None,
    bool: lambda e, v, d: bool.__bool__(v),
    int: lambda e, v, d: int.__int__(v),
    float: _encode_float,
    str: lambda e, v, d: _str(str.__str__(v)),
    bytes: lambda e, v, d: {TYPE: "bytes", "hex": bytes(memoryview(v)).hex()},
    bytearray: lambda e, v, d: {TYPE: "bytes", "hex": bytes(memoryview(v)).hex()},
    complex: lambda e, v, d: {TYPE: "complex", "real": e(_field(complex, "real", v), d + 1),
                              "imag": e(_field(complex, "imag", v), d + 1)},
    list: lambda e, v, d: [e(x, d + 1) for x in list.__iter__(v)],
    tuple: _tuple,
    dict: _dict,
    set: _members(set),
    frozenset: _members(frozenset),
    datetime.timedelta: _timedelta,
    datetime.datetime: _dated(datetime.datetime),
    datetime.date: lambda e, v, d: {TYPE: "date", "iso": datetime.date.isoformat(v)},
    datetime.time: _dated(datetime.time),
    datetime.timezone: _timezone,  # not subclassable: exactly the standard library's
    decimal.Decimal: lambda e, v, d: {TYPE: "decimal", "value": decimal.Decimal.__str__(v)},
}  # fmt: skip
# Subclasses of these cross as their value whatever they add (others only if ``_exact_builtin_subclass``).
_SUBCLASSES_BY_VALUE = frozenset({datetime.timedelta, datetime.datetime, datetime.date, datetime.time,
                                  decimal.Decimal})  # fmt: skip
_NAMESPACES: dict[type, str] = {argparse.Namespace: "argparse", types.SimpleNamespace: "simple"}
# Exactly these types, and only for the pytest bridge (``extended``).
_EXTENDED: dict[type, Encode] = {
    fractions.Fraction: lambda e, v, d: {TYPE: "fraction", "n": v.numerator, "d": v.denominator},
    uuid.UUID: lambda e, v, d: {TYPE: "uuid", "hex": v.hex},
    pathlib.PosixPath: lambda e, v, d: {TYPE: "path", "kind": "PosixPath", "path": str(v)},
    pathlib.PurePosixPath: lambda e, v, d: {TYPE: "path", "kind": "PurePosixPath", "path": str(v)},
    slice: lambda e, v, d: {TYPE: "slice", "parts": [e(x, d + 1) for x in (v.start, v.stop, v.step)]},
    range: lambda e, v, d: {TYPE: "range", "parts": [v.start, v.stop, v.step]},
    type(Ellipsis): lambda e, v, d: {TYPE: "ellipsis"},
    **{kind: _namespace_bag for kind in _NAMESPACES},
}  # fmt: skip
# Both tables by the type's identity, with whether the type is a plain one (not only the bridge's).
_EXACT = {id(t): (f, t in _BY_BASE) for t, f in [*_BY_BASE.items(), *_EXTENDED.items()]}
_EXTENDED_IDS = frozenset(id(t) for t in _EXTENDED)
_BASE_IDS = frozenset(id(t) for t in _BY_BASE)

_COMPARISONS = ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__")
_BASES = (int, float, str, bytes, list, tuple, dict, set, frozenset)


def _exact_builtin_subclass(value: object) -> bool:
    """Return True for a subclass of a built-in value type that adds no behaviour of its own.

    An IntEnum member, a namedtuple or an OrderedDict crosses as its base
    value; a subclass that overrides comparison keeps its identity (a handle).
    """
    base = _value_base(type(value))
    if base not in _BASES:
        return False
    for klass in _MRO(type(value)):
        if klass in _BASES or klass is object:
            break
        if base in _MUTABLE and set(vars(klass)) - _PLAIN_CLASS and not _stdlib_class(klass):
            return False  # BarrelList: its own methods act on the original, which a copy would not be
        compares = any(name in vars(klass) for name in _COMPARISONS)
        if compares and not (klass.__module__ in ("enum", "collections") or _is_namedtuple(klass)):
            return False
    return True


_MUTABLE = (list, dict, set)
_KEEPABLE = frozenset({list, dict, set, bytearray, collections.defaultdict})


def encode_base(encoder: Encoder, value: object, depth: int = 0) -> Any:
    """``value`` (exactly a list, dict, set, bytearray or defaultdict) as its base type writes it,
    whatever hooks say of it."""
    return _BY_BASE[_value_base(type(value)) or type(value)](encoder, value, depth + 1)


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
    "str": lambda d, *_: bytes.fromhex(str(d["utf32"])).decode("utf-32-le", "surrogatepass"),
    "bytes": lambda d, *_: bytes.fromhex(str(d["hex"])),
    "complex": lambda d, r, n: complex(decode(d["real"], r, n + 1), decode(d["imag"], r, n + 1)),
    "tuple": lambda d, r, n: tuple(_items(d, r, n)),
    "set": lambda d, r, n: set(_items(d, r, n)),
    "frozenset": lambda d, r, n: frozenset(_items(d, r, n)),
    "dict": lambda d, r, n: {decode(k, r, n + 1): decode(v, r, n + 1) for k, v in d["items"]},
    "timedelta": _decode_timedelta,
    "datetime": lambda d, r, n: _unfolded(datetime.datetime, d, r, n),
    "date": lambda d, *_: datetime.date.fromisoformat(str(d["iso"])),
    "time": lambda d, r, n: _unfolded(datetime.time, d, r, n),
    "timezone": _decode_timezone,
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
