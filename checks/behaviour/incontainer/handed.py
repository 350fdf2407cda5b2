"""The grader's objects the subject was handed (a test's callbacks and doubles), and what it may do with them.

A test that passes a lambda, a class or a mock to the change's code hands
it over as a *handle*: the subject calls it, iterates it, reads its public
attributes, by request. What the subject may ask is this module's to
decide, and it is narrow on purpose:

- a request names its target by the number the grader gave it, never by
  any other encoding (a built-in named in a request is the subject's
  choice, not a test's object: ``exec`` must never be a target);
- ``_private`` and dunder attributes are refused, except a function's
  public metadata (``__name__``, ``__qualname__``, ``__module__``,
  ``__doc__``, ``__annotations__``, ``__wrapped__``), which decorators
  copy; never ``__code__``, ``__globals__``, ``__closure__``,
  ``__defaults__`` or ``__dict__``;
- a generator's frame (``gi_``/``cr_``/``ag_``) is refused, and no
  module, frame, code object or traceback is ever handed over;
- a signature is described with each default *sealed*: the subject can
  pass a sealed value back (a call that leaves the argument out), never
  read, call or compare it;
- what an object's type offers (call, len, iteration, item access,
  context management, ordering, hash and equality of its own) goes with
  its handle, so ``callable()``, ``len()`` and ``iter(x) is x`` answer on
  the subject's side as they would on ours.
"""

from __future__ import annotations

import collections.abc
import io
import numbers
import threading
import types
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any

from . import codec, signatures

NEVER_HANDED = (types.ModuleType, types.FrameType, types.CodeType, types.TracebackType)
_FRAMED = (types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType)
_FRAME_PREFIXES = ("gi_", "cr_", "ag_")
METADATA = frozenset({
    "__name__", "__qualname__", "__module__", "__doc__", "__annotations__", "__wrapped__",
    "__isabstractmethod__",
})  # fmt: skip
# What a type offers, by the special method that offers it (see the subject's GraderObject).
_CAPS = {
    "call": "__call__", "len": "__len__", "iter": "__iter__", "next": "__next__",
    "getitem": "__getitem__", "setitem": "__setitem__", "delitem": "__delitem__",
    "contains": "__contains__", "enter": "__enter__", "exit": "__exit__", "bool": "__bool__",
    "reversed": "__reversed__", "index": "__index__", "int": "__int__", "float": "__float__",
    "set_name": "__set_name__", "iadd": "__iadd__", "isub": "__isub__", "imul": "__imul__",
    "ior": "__ior__", "iand": "__iand__",
    "lt": "__lt__", "le": "__le__",
    "gt": "__gt__", "ge": "__ge__", "eq": "__eq__", "hash": "__hash__",
}  # fmt: skip
OPS: dict[str, Callable[..., Any]] = {
    "repr": repr, "str": str, "bool": bool, "len": len, "iter": iter, "next": next, "hash": hash,
    "getitem": lambda o, k: o[k], "contains": lambda o, x: x in o, "eq": lambda o, x: o == x,
    "setitem": lambda o, k, v: o.__setitem__(k, v), "delitem": lambda o, k: o.__delitem__(k),
    "lt": lambda o, x: o < x, "le": lambda o, x: o <= x, "gt": lambda o, x: o > x, "ge": lambda o, x: o >= x,
    "reversed": reversed, "index": lambda o: o.__index__(), "int": int, "float": float,
    "dir": lambda o: [n for n in dir(o) if not n.startswith("_")],
    "enter": lambda o: o.__enter__(), "exit": lambda o, a, b, c: o.__exit__(a, b, c),
}  # fmt: skip


class PublicNamespace(MutableMapping[str, Any]):
    """A test object's ``__dict__`` as the change may use it: its public names only."""

    def __init__(self, target: object) -> None:
        self._target = target

    def _names(self) -> dict[str, Any]:
        return vars(self._target)

    def __getitem__(self, name: str) -> Any:
        if not isinstance(name, str) or name.startswith("_"):
            raise KeyError(name)
        return self._names()[name]

    def __setitem__(self, name: str, value: Any) -> None:
        if not isinstance(name, str) or name.startswith("_"):
            raise KeyError(f"patchgate: the code under test may not set {name!r} of a test object")
        self._names()[name] = value

    def __delitem__(self, name: str) -> None:
        if not isinstance(name, str) or name.startswith("_"):
            raise KeyError(name)
        del self._names()[name]

    def __iter__(self) -> Iterator[str]:
        return iter([k for k in self._names() if isinstance(k, str) and not k.startswith("_")])

    def __len__(self) -> int:
        return sum(1 for _ in self)


class Sealed:
    """A default value of a test's callable: the subject may pass it back, never use it."""

    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value


def caps(value: object) -> list[str]:
    """Name what ``value``'s type offers beyond a plain object's, for the other side's stand-in."""
    t = type(value)
    found = _BY_TYPE.get(t)
    if found is None:
        found = [cap for cap, name in _CAPS.items() if _offers(t, name)]
        # A class that sets __iter__ = None is not iterable, even with __getitem__.
        found += [f"-{cap}" for cap, name in _CAPS.items() if _says_none(t, name)]
        if _owner(t, "__hash__") is None:
            found.append("unhashable")
        found += [f"abc:{name}" for name, abc in ABCS.items() if isinstance(value, abc)]
        if _offers(t, "__get__"):
            found.append("get")
        if t is types.FunctionType:
            found.append("method")  # binds as a method when the change keeps it on a class
        if len(_BY_TYPE) < _MAX_TYPES:
            _BY_TYPE[t] = found
    return found


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


# The ABCs whose membership is registered, not structural: a stand-in is registered with the ones its
# object belongs to (toolz tells a Mapping from an iterable of mappings this way).
ABCS: dict[str, type] = {
    "Mapping": collections.abc.Mapping, "MutableMapping": collections.abc.MutableMapping,
    "Sequence": collections.abc.Sequence, "MutableSequence": collections.abc.MutableSequence,
    "Set": collections.abc.Set, "MutableSet": collections.abc.MutableSet,
    "IOBase": io.IOBase, "Number": numbers.Number, "Real": numbers.Real, "Integral": numbers.Integral,
}  # fmt: skip
_BY_TYPE: dict[type, list[str]] = {}
_MAX_TYPES = 10_000


class Handed:
    """The objects the subject holds handles to, by number; the same object keeps its number."""

    def __init__(self) -> None:
        self.by_number: dict[int, object] = {}
        self._numbers: dict[int, int] = {}
        self._seals: dict[int, Sealed] = {}
        self._lock = threading.Lock()

    def keep(self, value: object) -> int:
        """Hold ``value`` for the subject; return its number."""
        with self._lock:
            number = self._numbers.get(id(value))
            if number is None:
                number = len(self.by_number) + 1
                self.by_number[number] = value
                self._numbers[id(value)] = number
            return number

    def seal(self, value: object) -> Sealed:
        with self._lock:
            found = self._seals.get(id(value))
            if found is None:
                found = self._seals[id(value)] = Sealed(value)
            return found

    def resolve(self, number: object) -> object:
        """The object a tag names, as an argument (a sealed default is its value again)."""
        if type(number) is not int or number not in self.by_number:
            raise ValueError(f"no grader object number {number!r}")
        value = self.by_number[number]
        return value.value if type(value) is Sealed else value

    def target(self, data: object) -> object:
        """The object a request is about: only one the subject was handed, named by its number."""
        if not (isinstance(data, dict) and data.get(codec.TYPE) == "obj" and data.get("side") == "g"):
            raise TypeError("patchgate: the code under test may only use a test object it was handed")
        number = data.get("id")
        value = self.by_number.get(number) if isinstance(number, int) else None
        if value is None or type(value) is Sealed:
            raise TypeError("patchgate: the code under test may only use a test object it was handed")
        return value

    def serve(self, request: dict[str, Any], decode: Callable[[Any], Any]) -> Any:
        """Do what the subject asks of a handed object; raise what the object raises, or a refusal."""
        op = request.get("op")
        target = self.target(request.get("obj"))
        if op == "getattr":
            name = str(request.get("name"))
            if name == "__dict__" and hasattr(target, "__dict__") and not isinstance(target, type):
                # What decorators copy (functools.update_wrapper) and caching descriptors write
                # (boltons cachedproperty): the public attributes, and only those, as a live view.
                return PublicNamespace(target)
            refused = name.startswith("_") and name not in METADATA
            if refused or (isinstance(target, _FRAMED) and name.startswith(_FRAME_PREFIXES)):
                # Private attributes, code, globals, closures, defaults or a generator's frame
                # would open the test's frames, globals and values.
                raise AttributeError(f"patchgate: the code under test may not read {name!r} of a test object")
            return getattr(target, name)
        if op in ("setattr", "delattr"):
            name = str(request.get("name"))
            if name.startswith("_"):
                raise AttributeError(f"patchgate: the code under test may not set {name!r} of a test object")
            if op == "delattr":
                return delattr(target, name)
            return setattr(target, name, decode(request.get("value")))
        if op == "call":
            return target(*decode(request.get("args", [])), **decode(request.get("kwargs", {})))  # type: ignore[operator]
        if op == "signature":
            return signatures.describe(target, self.seal)
        if op == "op":
            fn = OPS.get(str(request.get("name")))
            if fn is None:
                what = request.get("name")
                raise TypeError(f"patchgate: operation {what!r} is not offered on a test's object")
            return fn(target, *decode(request.get("args", [])))
        raise ValueError(f"unknown request {op!r}")
