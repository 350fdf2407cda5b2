"""The grader-subject protocol in one table: its requests, the tags that name objects, its operators.

Both sides build their own tables from this module, so a reviewer reads the
vocabulary once:

- ``SUBJECT_SERVES`` / ``GRADER_SERVES``: the requests each side answers
  (``{"op": name, ...}``); the grader's list is narrow on purpose: it only
  ever acts on an object a test handed over (``grader/handed.py``);
- the tags (``codec.TYPE`` values) that stand for an object instead of
  carrying a value: ``obj`` (a handle, ``side`` ``s`` or ``g``), ``sexc`` /
  ``gexc`` (an exception raised on that side), ``stdlib`` / ``builtin``
  (named, and taken as the receiving side's own), ``environ`` (``os.environ``,
  each side's own), ``kept`` (a test's container handed to the change, one
  object on each side: ``kept.py``);
- ``OPERATORS``: each operator by its wire name, the function the serving
  side applies to its own object, and the special method that *offers* it
  when a type defines it (a capability: ``caps`` names what a type offers,
  and the other side's stand-in offers exactly that); ``GRADER_OPERATORS``
  is the subset the grader applies to a test's object.
"""

from __future__ import annotations

import collections
import collections.abc
import copy
import enum
import inspect
import io
import itertools
import numbers
import operator
import os
import pickle
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import signatures

# -- requests -----------------------------------------------------------------------------------

# The change's log records (the subject relays them as text, the grader makes them records again): how
# many one answer carries, beyond which a flood is cut and says so, and how much of each text field.
MAX_RECORDS = 1_000
RECORD_CHARS = 4_000

SUBJECT_SERVES = frozenset({
    "import", "reload", "unpickle", "names", "getattr", "setattr", "delattr", "call", "op",
    "case", "lines", "lines_report",
    # a differential check: the change's function on arguments sent by value
    "apply",
    # a method call in one request; super()'s; a container subclass's contents; a test's subclass
    "call_attr", "call_on", "call_classmethod", "value", "subclass", "prepare",
    # an iterator's items many to a request, for a consumer that takes them whole
    "take",
    # a codec the change registered, for a name the grader's standard library does not know
    "codec",
})  # fmt: skip
# Functions of the standard library through which code reads its surroundings - a terminal, a clock, the
# host, the user - and which a test replaces to stage them (``monkeypatch.setattr(os, "isatty", ...)``,
# ``mock.patch("time.sleep")``). A test's replacement crosses to the subject's module as the test's own
# callable (grader/ambient.py); nothing else of a module does. Never a function that acts on the world
# for its caller (``subprocess``, ``os.system``: the change would run commands as the grader), nor one
# the harness itself calls while it serves (``time.monotonic``, ``os.getpid``, ``locale``'s encoding).
AMBIENT_FUNCTIONS: dict[str, frozenset[str]] = {
    "os": frozenset({"isatty", "get_terminal_size", "cpu_count", "getlogin", "uname"}),
    "shutil": frozenset({"get_terminal_size", "which", "disk_usage"}),
    "time": frozenset({"time", "time_ns", "sleep", "localtime", "gmtime", "strftime", "ctime", "asctime"}),
    "platform": frozenset({
        "system", "machine", "platform", "release", "version", "node", "processor",
        "python_implementation", "python_version", "uname",
    }),
    "socket": frozenset({"gethostname", "getfqdn"}),
    "getpass": frozenset({"getuser", "getpass"}),
    "uuid": frozenset({"uuid1", "uuid4"}),
}  # fmt: skip
# What the subject tells of a codec the change registered (grader/registries.py): CodecInfo's callables.
CODEC_FIELDS = (
    "encode", "decode", "incrementalencoder", "incrementaldecoder", "streamreader", "streamwriter",
)  # fmt: skip
GRADER_SERVES = frozenset({
    "getattr", "setattr", "delattr", "call", "op", "signature", "take", "describe", "where",
})  # fmt: skip

# -- tags -----------------------------------------------------------------------------------------

OBJ = "obj"  # a handle: {"__type__": "obj", "side": SUBJECT | GRADER, "id": n, ...}
SUBJECT_EXC = "sexc"  # an exception the subject raised, handed to a test's callback
GRADER_EXC = "gexc"  # an exception a test's callback raised, handed to the subject
STDLIB = "stdlib"  # a standard-library module, class or function, by name
BUILTIN = "builtin"  # a built-in, by name
ENVIRON = "environ"  # os.environ: each side's own (the test's changes reach the subject's by request)
# The harness's own files (this package): a frame there is neither the change's nor the test's.
HARNESS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
BOUND = "bound"  # a test's function bound to an object on the subject's side, bound the same on the grader's
KEPT = "kept"  # a test's container kept in step on both sides, by the grader's number (kept.py)
SUBJECT, GRADER = "s", "g"

# -- operators ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Operator:
    """One operator: what the serving side applies, and the special method that offers it."""

    apply: Callable[..., Any]
    # A capability: offered on the other side's stand-in only when the object's type defines it.
    dunder: str | None = None
    # What the asking side's stand-in makes of the answer (``len()`` must return an int).
    result: Callable[[Any], Any] | None = None


def _exit(o: Any, a: Any, b: Any, c: Any) -> Any:
    return type(o).__exit__(o, a, b, c)


OPERATORS: dict[str, Operator] = {
    # Offered by every object (the stand-ins always define these).
    "repr": Operator(repr, result=str), "str": Operator(str, result=str), "dir": Operator(dir),
    "format": Operator(format, result=str), "complex": Operator(complex), "bytes": Operator(bytes),
    "abs": Operator(abs), "round": Operator(round), "divmod": Operator(divmod),
    "neg": Operator(operator.neg), "pos": Operator(operator.pos), "invert": Operator(operator.invert),
    "ne": Operator(operator.ne),
    "add": Operator(operator.add), "sub": Operator(operator.sub), "mul": Operator(operator.mul),
    "truediv": Operator(operator.truediv), "floordiv": Operator(operator.floordiv),
    "mod": Operator(operator.mod), "pow": Operator(pow), "matmul": Operator(operator.matmul),
    "lshift": Operator(operator.lshift), "rshift": Operator(operator.rshift),
    "and": Operator(operator.and_), "or": Operator(operator.or_), "xor": Operator(operator.xor),
    "isinstance": Operator(isinstance), "issubclass": Operator(issubclass), "callable": Operator(callable),
    "signature": Operator(signatures.describe),
    "pickle": Operator(pickle.dumps), "copy": Operator(copy.copy), "deepcopy": Operator(copy.deepcopy),
    "vars_get": Operator(lambda o, k: vars(o)[k]), "vars_keys": Operator(lambda o: list(vars(o))),
    # Capabilities: offered only where the object's type defines the special method.
    "len": Operator(len, "__len__", int), "bool": Operator(bool, "__bool__", bool),
    "hash": Operator(hash, "__hash__", int), "iter": Operator(iter, "__iter__"),
    "next": Operator(next, "__next__"), "reversed": Operator(reversed, "__reversed__"),
    "int": Operator(int, "__int__", int), "float": Operator(float, "__float__", float),
    "index": Operator(operator.index, "__index__", int),
    "contains": Operator(operator.contains, "__contains__", bool),
    "getitem": Operator(operator.getitem, "__getitem__"),
    "setitem": Operator(operator.setitem, "__setitem__"),
    "delitem": Operator(operator.delitem, "__delitem__"),
    "lt": Operator(operator.lt, "__lt__"), "le": Operator(operator.le, "__le__"),
    "gt": Operator(operator.gt, "__gt__"), "ge": Operator(operator.ge, "__ge__"),
    "eq": Operator(operator.eq, "__eq__"),
    "enter": Operator(lambda o: type(o).__enter__(o), "__enter__"), "exit": Operator(_exit, "__exit__"),
    "call": Operator(lambda o, *a, **k: o(*a, **k), "__call__"),
    "set_name": Operator(lambda o, c, n: type(o).__set_name__(o, c, n), "__set_name__"),
    "get": Operator(lambda o, i, c: type(o).__get__(o, i, c), "__get__"),
    "iadd": Operator(operator.iadd, "__iadd__"), "isub": Operator(operator.isub, "__isub__"),
    "imul": Operator(operator.imul, "__imul__"), "ior": Operator(operator.ior, "__ior__"),
    "iand": Operator(operator.iand, "__iand__"),
    # A path-like object: os.PathLike's structural check reads the special method.
    "fspath": Operator(os.fspath, "__fspath__"),
    # A base that is not a class (``typing.Generic[T]``): what a class statement puts in its place.
    "mro_entries": Operator(lambda o, b: type(o).__mro_entries__(o, b), "__mro_entries__"),
}  # fmt: skip
CAPABILITIES: dict[str, str] = {name: op.dunder for name, op in OPERATORS.items() if op.dunder}
# Arithmetic every object is asked for (no capability): by the special method a class of the change may
# define, and its reflected twin (``__radd__``: the operator with the two sides swapped).
_BINARY = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "lshift", "rshift", "and",
           "or", "xor")  # fmt: skip
ARITHMETIC: dict[str, str] = {f"__{n}__": n for n in (*_BINARY, "neg", "pos", "abs", "invert")}
REFLECTED: dict[str, str] = {f"__r{n}__": n for n in _BINARY}
# What the grader applies to a test's object at the subject's request: reading and using it, never
# pickling, copying, reading its namespace or describing anything but its public names.
GRADER_OPERATORS = frozenset({
    "repr", "str", "bool", "len", "iter", "next", "hash", "getitem", "contains", "eq", "setitem",
    "delitem", "lt", "le", "gt", "ge", "reversed", "index", "int", "float", "dir", "enter", "exit",
    "fspath", "mro_entries",
})  # fmt: skip

# The ABCs whose membership is registered, not structural: a stand-in is registered with the ones its
# object belongs to (toolz tells a Mapping from an iterable of mappings this way).
ABCS: dict[str, type] = {
    "Mapping": collections.abc.Mapping, "MutableMapping": collections.abc.MutableMapping,
    "Sequence": collections.abc.Sequence, "MutableSequence": collections.abc.MutableSequence,
    "Set": collections.abc.Set, "MutableSet": collections.abc.MutableSet,
    "IOBase": io.IOBase, "TextIOBase": io.TextIOBase, "BufferedIOBase": io.BufferedIOBase,
    "RawIOBase": io.RawIOBase, "Number": numbers.Number, "Real": numbers.Real, "Integral": numbers.Integral,
}  # fmt: skip
_BY_TYPE: dict[type, list[str]] = {}
_MAX_TYPES = 10_000
# Mutable built-in containers, when one crosses by handle (kept on a test's object, or cyclic).
CONTENTS = (list, dict, set, bytearray)
# Built-in iterators over a built-in sequence: the grader lends a test's one's items ahead, read off the
# sequence without advancing it (``seqiter``; grader/readahead.py).
SEQUENCE_ITERATORS = frozenset({
    type(iter([])), type(iter(())), type(iter(range(0))), type(iter(range(1 << 64))), type(iter("")),
    type(iter("\u0100")), type(iter(b"")), type(iter(bytearray())), type(reversed([])),
})  # fmt: skip
# Built-in iterators whose ``iter()`` is the object itself and runs nothing: the other side's stand-in
# answers it without a request (``selfiter``).
SELF_ITERATORS = SEQUENCE_ITERATORS | frozenset({
    types.GeneratorType, type(iter({})), type(iter({}.values())),
    type(iter({}.items())), type(iter(set())), type(reversed({})),
    type(iter(collections.deque())), type(reversed(collections.deque())), type(iter(lambda: 0, 0)),
    map, filter, zip, enumerate, reversed, itertools.chain, itertools.islice, itertools.count,
    itertools.cycle, itertools.repeat, itertools.accumulate, itertools.compress, itertools.dropwhile,
    itertools.takewhile, itertools.filterfalse, itertools.starmap, itertools.zip_longest,
    itertools.groupby, itertools.pairwise, itertools.product, itertools.permutations,
    itertools.combinations, itertools.combinations_with_replacement,
})  # fmt: skip
# Capabilities ``caps`` reports from the special method alone; ``get`` and ``method`` are told apart below.
_OFFERED_BY_DUNDER = {name: dunder for name, dunder in CAPABILITIES.items() if name != "get"}


# What a plain function's code makes of a call (its ``co_flags``): said with its handle, so that
# ``inspect.isgeneratorfunction`` answers on the other side as it would on the owner's.
# A running generator, coroutine or async generator: the prefix of its code attribute (``gi_code``),
# which the other side answers with a stand-in code object of the same name (never the real one).
# A test's enum made in the subject (grader/enums.py, subject/enums.py): the standard library's
# families it may derive from, by the name that crosses, most derived first; its mixin types; the
# mixin's built-in methods it may take as its own (``Mode.__str__ = str.__str__``); and how many
# members it may have (past that it crosses as before).
ENUM_FAMILIES: dict[str, type[enum.Enum]] = {
    "IntFlag": enum.IntFlag, "Flag": enum.Flag, "IntEnum": enum.IntEnum, "StrEnum": enum.StrEnum,
    "Enum": enum.Enum,
}  # fmt: skip
ENUM_MIXINS: dict[str, type] = {"int": int, "str": str, "float": float}
ENUM_PLAIN_METHODS = ("__str__", "__format__", "__repr__")
ENUM_MAX_MEMBERS = 256
FRAMED = {types.GeneratorType: "gi", types.CoroutineType: "cr", types.AsyncGeneratorType: "ag"}
CODE_KINDS = {"genfunc": inspect.CO_GENERATOR, "corofunc": inspect.CO_COROUTINE,
              "asyncgenfunc": inspect.CO_ASYNC_GENERATOR}  # fmt: skip


def caps(value: object) -> list[str]:
    """Name what ``value``'s type offers beyond a plain object's, for the other side's stand-in.

    A plain function's also says what kind of code it runs (``CODE_KINDS``).
    """
    found = caps_of_type(type(value))
    if type(value) is types.FunctionType:
        flags = value.__code__.co_flags
        found = [*found, *(kind for kind, flag in CODE_KINDS.items() if flags & flag)]
    return found


def caps_of_type(t: type) -> list[str]:
    """Name what instances of ``t`` offer beyond a plain object's.

    Besides capability names: ``-name`` (the type sets that special method
    to None: ``__iter__ = None`` is not iterable, even with ``__getitem__``),
    ``unhashable``, ``contents`` (a mutable built-in container), ``abc:Name``
    (registered ABCs it belongs to), ``get`` (a descriptor), ``method``
    (a plain function: it binds as a method), ``selfiter`` (a built-in
    iterator: ``iter()`` is the object itself, ``SELF_ITERATORS``) and
    ``seqiter`` (one over a built-in sequence, ``SEQUENCE_ITERATORS``).
    """
    found = _BY_TYPE.get(t)
    if found is None:
        found = [cap for cap, name in _OFFERED_BY_DUNDER.items() if _offers(t, name)]
        found += [f"-{cap}" for cap, name in _OFFERED_BY_DUNDER.items() if _says_none(t, name)]
        if _owner(t, "__hash__") is None:
            found.append("unhashable")
        found += [f"abc:{name}" for name, abc in ABCS.items() if issubclass(t, abc)]
        if _offers(t, "__get__"):
            found.append("get")
        if t in CONTENTS:
            found.append("contents")  # compared with a test's value by its contents, read by value
        if t is types.FunctionType:
            found.append("method")  # binds as a method when the change keeps it on a class
        if t in SELF_ITERATORS:
            found.append("selfiter")
        if t in SEQUENCE_ITERATORS:
            found.append("seqiter")
        if t in FRAMED:
            found.append(f"code:{FRAMED[t]}")
        if len(_BY_TYPE) < _MAX_TYPES:
            _BY_TYPE[t] = found
    return found


def register_abcs(cls: type, offered: frozenset[str] | set[str]) -> None:
    """Register a stand-in class with the ABCs its object belongs to (``abc:Name`` in its caps)."""
    for cap in offered:
        abc = ABCS.get(cap[4:]) if cap.startswith("abc:") else None
        if abc is not None:
            abc.register(cls)  # type: ignore[attr-defined]


def _owner(t: type, name: str) -> object:
    """The class attribute ``name`` as the type's own MRO has it (never its metaclass's)."""
    for klass in t.__mro__:
        if name in vars(klass):
            return vars(klass)[name]
    return None


def _says_none(t: type, name: str) -> bool:
    return any(name in vars(k) for k in t.__mro__) and _owner(t, name) is None


def _offers(t: type, name: str) -> bool:
    found = _owner(t, name)
    return found is not None and found is not vars(object).get(name)
