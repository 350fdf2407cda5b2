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
  copy, and a library's *protocol method* the test's own class defines as
  a plain function (``__html__``, ``__html_format__``, ``__json__``: a
  library's protocol is its test's public face), called with plain values
  only (``ProtocolMethod``) - never one of Python's own special methods
  (``DATA_MODEL``: those reach a test's object through the operators) nor
  of ``NEVER_READ``; never ``__code__``, ``__globals__``, ``__closure__``,
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

import contextlib
import enum
import operator
import threading
import types
import weakref
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from typing import Any

from ..channel import codec, signatures
from ..channel.protocol import CAPABILITIES, FRAMED, GRADER_OPERATORS, OPERATORS, caps_of_type
from .aliases import Aliases, named_like_a_test
from .readahead import Lent

# ``unsealing``: an answer's value is being decoded (the test's own, each sealed value its value again);
# an operator's arguments are (no sealed value is its).
ANSWER: Any = object()
_NO_CALLABLE: Any = object()
_SEAL_OWNERS = 64  # callables one value is sealed for, at most (a default shared by many)
NEVER_HANDED = (types.ModuleType, types.FrameType, types.CodeType, types.TracebackType)
_FRAMED = (types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType)
_FRAME_PREFIXES = ("gi_", "cr_", "ag_")
# The special methods a test's class's description carries (``describe``): what the subject's
# ``inspect`` reads of a class, never one that changes how its objects compare or hash.
DESCRIBED_DUNDERS = frozenset({"__call__", "__init__"})
# Special methods that reach past an object's public face - its attributes by any name, its state as
# pickled, its construction, its class's machinery - never read as a protocol method (``protocol_method``).
NEVER_READ = frozenset({
    "__getattribute__", "__getattr__", "__setattr__", "__delattr__", "__dir__", "__dict__", "__class__",
    "__reduce__", "__reduce_ex__", "__getstate__", "__setstate__", "__getnewargs__", "__getnewargs_ex__",
    "__new__", "__init__", "__init_subclass__", "__class_getitem__", "__subclasshook__", "__set_name__",
    "__del__", "__get__", "__set__", "__delete__", "__copy__", "__deepcopy__", "__sizeof__", "__prepare__",
    "__instancecheck__", "__subclasscheck__", "__mro_entries__", "__subclasses__", "__weakref__",
    "__slots__", "__code__", "__globals__", "__closure__", "__defaults__", "__kwdefaults__", "__func__",
    "__self__", "__call__", "__post_init__",
})  # fmt: skip


# Python's own special methods: each reaches a test's object only as the grader's operators and stand-ins
# offer it (``repr`` and ``str`` with the suite's names aliased, comparisons without unsealing a default),
# never read as a protocol method and called as the test's own function.
_DUNDERS_OF = (
    object, type, int, float, complex, bool, str, bytes, bytearray, memoryview, list, tuple, dict, set,
    frozenset, range, slice, property, staticmethod, classmethod, types.FunctionType, types.MethodType,
    types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType, types.ModuleType, BaseException,
    operator,
)  # fmt: skip
DATA_MODEL = frozenset(
    {n for t in _DUNDERS_OF for n in dir(t) if n.startswith("__") and n.endswith("__")}
    | {
        "__enter__", "__exit__", "__aenter__", "__aexit__", "__await__", "__aiter__", "__anext__",
        "__missing__", "__length_hint__", "__fspath__", "__index__", "__round__", "__trunc__", "__floor__",
        "__ceil__",
        "__bool__", "__contains__", "__reversed__", "__set_name__", "__buffer__", "__release_buffer__",
        "__copy__", "__deepcopy__", "__post_init__", "__match_args__", "__signature__", "__wrapped__",
        "__call__", "__get__", "__set__", "__delete__", "__class_getitem__", "__mro_entries__", "__prepare__",
        "__instancecheck__", "__subclasscheck__", "__init_subclass__", "__iter__", "__next__", "__len__",
        "__getitem__", "__setitem__", "__delitem__", "__bytes__", "__format__", "__repr__", "__str__",
        "__hash__", "__sizeof__", "__dir__", "__complex__", "__int__", "__float__", "__del__",
        "__getattr__", "__getattribute__", "__setattr__", "__delattr__", "__annotations__", "__replace__",
        "__getinitargs__", "__getformat__", "__subclasses__", "__objclass__", "__text_signature__",
    }
    # Each binary operator's reflected and in-place forms, whichever types above happen to lack them.
    | {f"__{p}{n[2:]}" for n in dir(operator) if n.startswith("__") and n.endswith("__") for p in ("r", "i")}
)  # fmt: skip


_PLAIN = frozenset({type(None), bool, int, float, complex, str, bytes})


class ProtocolMethod:
    """A test's protocol method (``obj.__html__``) as the change calls it, and nothing more.

    Its arguments may be plain values and the change's own objects, never a sealed default or another
    of the test's objects (a protocol method that compares would otherwise be an oracle for a sealed
    value); its result must be one too, a string with the suite's names by alias (``__html__``
    returning ``repr(self)`` would otherwise name the test). Its function and object are never read.
    """

    __slots__ = ("_pg_handed", "_pg_method")

    def __init__(self, method: Callable[..., Any], handed: Handed) -> None:
        object.__setattr__(self, "_pg_method", method)
        object.__setattr__(self, "_pg_handed", handed)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        handed: Handed = object.__getattribute__(self, "_pg_handed")
        if not all(handed.plain_or_subject(v) for v in (*args, *kwargs.values())):
            raise TypeError("patchgate: a test's protocol method takes plain values and the change's objects")
        result = object.__getattribute__(self, "_pg_method")(*args, **kwargs)
        if type(result) is str:
            return handed.aliases.names_in(result)
        if not handed.plain_or_subject(result):
            raise TypeError("patchgate: a test's protocol method gave back what the change may not hold")
        return result

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"patchgate: the code under test may not set {name!r} of a test's method")


def protocol_method(cls: type, name: str, mirrorable: Callable[[type], bool]) -> bool:
    """Whether ``name`` is a library's protocol method of a test's class ``cls`` (``__html__``): a dunder
    Python's data model does not define, which the class (or a base of the suite's) defines itself as a
    plain function, outside ``NEVER_READ``."""
    if not (name.startswith("__") and name.endswith("__") and len(name) > 4):
        return False
    if name in NEVER_READ or name in DATA_MODEL:
        return False
    owner = next((k for k in type.__dict__["__mro__"].__get__(cls) if name in vars(k)), None)
    return owner is not None and mirrorable(owner) and type(vars(owner)[name]) is types.FunctionType


# What the change may set of a test's function (functools.update_wrapper, six._add_doc).
RENAMEABLE = frozenset({"__name__", "__qualname__", "__module__", "__doc__", "__annotations__"})
# Of those, the names: set from an alias, they are the suite's real name again (``_renamed``).
NAMES = frozenset({"__name__", "__qualname__", "__module__"})
# The special methods a stand-in offers for what a test's class offers (subject/standins.py).
OFFERED_DUNDERS = frozenset(CAPABILITIES.values()) | {"__ne__"}
# What a class's namespace holds of those (the rest are its type's: ``__name__``, ``__qualname__``).
CLASS_METADATA = frozenset({"__module__", "__doc__", "__annotations__"})
METADATA = frozenset({
    "__name__", "__qualname__", "__module__", "__doc__", "__annotations__", "__wrapped__",
    "__isabstractmethod__",
})  # fmt: skip


class ClassNamespace(Mapping[str, Any]):
    """A test class's ``__dict__`` as the change may read it: its public names, read-only.

    What ``getattr`` of each public name already gives, as the class holds it (a descriptor reads
    ``owner.__dict__[name]`` to find itself: cachetools' cachedmethod when copied or pickled). A
    class is never written through it: a special method set there would change every instance.
    """

    def __init__(self, target: object, handed: Handed) -> None:
        self._target = target
        self._handed = handed

    def _names(self) -> Mapping[str, Any]:
        return vars(self._target)

    def _shown(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        if name == "__slots__":  # the names of its public slots, as dir() lists them
            return _public_slots(self._names().get(name))
        return not name.startswith("_") or name in CLASS_METADATA

    def __getitem__(self, name: str) -> Any:
        sent = name
        name = self._handed.aliases.restore(name) if isinstance(name, str) else name
        if not self._shown(name) or name not in self._names():
            raise KeyError(sent)  # as the subject named it: never a real name an alias stands for
        found = self._names()[name]
        if name in CLASS_METADATA:  # as ``getattr`` gives it: a suite's module as its alias
            module = (
                type.__dict__["__module__"].__get__(self._target) if isinstance(self._target, type) else None
            )
            return self._handed.aliases.attribute(module, name, found)
        return found

    def __iter__(self) -> Iterator[str]:
        # A test's name (``test_*``) goes as its alias, as ``dir()`` gives it.
        return iter([self._handed.aliases.name(k) for k in list(self._names()) if self._shown(k)])

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def copy(self) -> dict[str, Any]:
        """What ``mappingproxy.copy`` gives: a dict of the names shown (six's ``add_metaclass``)."""
        return {name: self[name] for name in self}


def _public_slots(slots: object) -> bool:
    """Whether a class's ``__slots__`` lists public names only, none a test's (``describe``)."""
    listed = [slots] if isinstance(slots, str) else slots if isinstance(slots, list | tuple) else None
    return listed is not None and all(
        type(n) is str and not n.startswith("_") and not named_like_a_test(n) for n in listed
    )


def namespace_owner(view: ClassNamespace) -> object:
    """The test's object a namespace view is of (the grader's use; no public name of the view gives it)."""
    return view._target


class PublicNamespace(ClassNamespace, MutableMapping[str, Any]):
    """A test object's ``__dict__`` as the change may use it: its public names, and the private
    names the change itself put there (the same rule as ``setattr``: a new name, never the test's)."""

    def _names(self) -> dict[str, Any]:
        return vars(self._target)

    def _shown(self, name: object) -> bool:
        return isinstance(name, str) and (not name.startswith("_") or self._handed.theirs(self._target, name))

    def __setitem__(self, name: str, value: Any) -> None:
        if not isinstance(name, str) or (name.startswith("_") and not self._handed.take(self._target, name)):
            raise KeyError(f"patchgate: the code under test may not set {name!r} of a test object")
        self._names()[name] = value

    def __delitem__(self, name: str) -> None:
        if not self._shown(name):
            raise KeyError(name)
        del self._names()[name]


def _mirrorable(cls: type, aliases: Aliases) -> bool:
    """Whether the plain class ``cls`` is of the suite's own files, and its bases too, down to
    ``object`` (``Handed.mirrorable``)."""
    mro = type.__dict__["__mro__"].__get__(cls)
    return (
        mro[-1] is object
        and len(mro) > 1
        and all(
            type(k) is type and aliases.suite_module(type.__dict__["__module__"].__get__(k)) for k in mro[:-1]
        )
    )


# Classes whose answer a run remembers, at most (past it, each is worked out again).
_MAX_MIRRORABLE = 4096


def describe(
    cls: type, aliases: Aliases, subjects: Callable[[object], bool], reach: Callable[[type], type]
) -> dict[str, Any]:
    """What the subject's class for the test's class ``cls`` holds: its suite bases, what its objects'
    type offers, and its public functions, static and class methods (the functions as handles).

    Only what ``getattr`` of a public name and ``dir()`` already give the subject, the function
    its objects' ``__call__`` already calls (``inspect.signature`` of a callable object reads it)
    and its ``__init__``, whose signature ``inspect.signature(cls)`` already gives (pluggy's
    ``varnames(cls)`` reads ``cls.__init__``),
    and the change's own objects the class holds (``cachetools.cachedmethod`` on a test's method,
    found again in ``owner.__dict__``); nothing else of the class's namespace (no test's value, no
    other dunder, no private name).
    """
    module = type.__dict__["__module__"].__get__(cls)
    namespace = []
    for name, value in list(vars(cls).items()):
        if not isinstance(name, str) or (name.startswith("_") and name not in DESCRIBED_DUNDERS):
            continue
        if type(value) in (staticmethod, classmethod):
            # With the wrapper itself: a marker set on it (pluggy's @hookimpl above @classmethod).
            if type(value.__func__) is types.FunctionType:
                namespace.append([aliases.name(name), type(value).__name__, value.__func__, value])
        elif type(value) is types.FunctionType:
            namespace.append([aliases.name(name), "function", value, None])
        elif subjects(value):  # the change's own object (its descriptor decorating a test's method)
            namespace.append([aliases.name(name), "value", value, None])
    doc = aliases.attribute(module, "__doc__", type.__dict__["__doc__"].__get__(cls))
    return {
        "bases": [reach(b) for b in cls.__bases__ if b is not object],
        "caps": caps_of_type(cls),
        "doc": doc if isinstance(doc, str) else None,
        "namespace": namespace,
        # Which special methods its objects offer (``caps``) the class defines itself: its namespace
        # there shows them, as ``vars(cls)`` does here (attrs asks whether a class has its own __eq__).
        "own": sorted(n for n in vars(cls) if n in OFFERED_DUNDERS),
    }


class Sealed:
    """A default value of a test's callable: the subject may pass it back to the suite's own code or to a
    callable whose signature sealed it (``_Call``), and return it to the test; never use it, nor hand it
    to anything else of the test's (``__dict__.setdefault`` would give it back)."""

    __slots__ = ("owners", "value")

    def __init__(self, value: object) -> None:
        self.value = value
        self.owners: list[object] = []

    def owned_by(self, target: object) -> bool:
        """Whether ``target`` (a call's callable, or a method of it) is one this value was sealed for."""
        func = getattr(target, "__func__", None) if type(target) is types.MethodType else None
        return any(owner is target or (func is not None and owner is func) for owner in self.owners)


class _Call:
    """A call of a test's callable the subject asked for, while its arguments are decoded: a sealed
    value is its value again if the callable is the suite's own code (pluggy hands a hookspec's
    default to the hook's implementations) or one it was sealed for; which were, to seal again one
    the call hands straight back."""

    __slots__ = ("suite", "target", "unsealed")

    def __init__(self, target: object, suite: bool) -> None:
        self.target, self.suite = target, suite
        self.unsealed: dict[int, Sealed] = {}


class SealedOwner(Sealed):
    """The object a test's method is bound to, the object itself not handed: passed back, and its
    ``repr`` read (the method's own ``repr`` shows it: ``<bound method C.f of <C ...>>``)."""

    __slots__ = ()


class Handed:
    """The objects the subject holds handles to, by number; the same object keeps its number."""

    def __init__(self, aliases: Aliases | None = None) -> None:
        # The names of the suite's own definitions reach the subject as aliases (aliases.py).
        self.aliases = aliases or Aliases()
        self.by_number: dict[int, object] = {}
        # Private attributes the subject itself put on a test's object (click's __click_params__ on a
        # test's function): its own to read again.
        self._theirs: dict[int, set[str]] = {}
        self._numbers: dict[int, int] = {}
        self._seals: dict[tuple[int, bool], Sealed] = {}
        # Classes (by id) the subject holds only as the class, or a base, of an object it was handed.
        self._hidden: set[int] = set()
        # A test class's own __init__, described to be read (its signature), never run by the change.
        self._inits: weakref.WeakSet[types.FunctionType] = weakref.WeakSet()
        # The callable whose request's arguments are being decoded (``unsealing``), per thread.
        self._unsealing = threading.local()
        self._mirrorable: weakref.WeakKeyDictionary[type, bool] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()
        # Items of a test's built-in iterators lent to the subject ahead of its next() (readahead.py),
        # encoded as they would cross alone (the bridge's encoder).
        self.lent = Lent()
        self.encode: Callable[[object], Any] = lambda value: value
        # What the subject puts in a test's object, decoded with a sealed default left sealed (bridge.py).
        self.decode_held: Callable[[Any], Any] = lambda data: data
        # Whether a value is the change's own object (a handle; the bridge's is_handle).
        self.subjects: Callable[[object], bool] = lambda value: False

    def keep(self, value: object) -> int:
        """Hold ``value`` for the subject; return its number."""
        with self._lock:
            number = self._numbers.get(id(value))
            if number is None:
                number = len(self.by_number) + 1
                self.by_number[number] = value
                self._numbers[id(value)] = number
            return number

    def holds(self, value: object) -> bool:
        """Whether the subject already holds ``value`` (it was handed, or named in an answer)."""
        number = self._numbers.get(id(value))
        return number is not None and self.by_number.get(number) is value

    def plain_or_subject(self, value: object, depth: int = 0) -> bool:
        """Whether ``value`` is a plain value (or a tuple of them) or the change's own object."""
        if type(value) in _PLAIN:
            return True
        if type(value) is tuple and depth < 4:
            return all(self.plain_or_subject(v, depth + 1) for v in value)
        return bool(self.subjects(value))

    def mirrorable(self, cls: object) -> bool:
        """Whether ``cls`` is a test's class the subject makes a class of its own for (``describe``).

        A plain class of the suite's own files (metaclass ``type``), whose bases are too, down to
        ``object``: never a class of a library or of the change, an exception class (mirrors.py), a
        built-in's subclass (a value subclass crosses by value) or one with a metaclass of its own.
        """
        if not isinstance(cls, type) or type(cls) is not type:
            return False
        found = self._mirrorable.get(cls)
        if found is None:
            found = _mirrorable(cls, self.aliases)
            if len(self._mirrorable) < _MAX_MIRRORABLE:
                self._mirrorable[cls] = found
        return found

    def reach(self, cls: type) -> type:
        """``cls`` goes to the subject as the class, or a base, of what it was handed: unless it was
        handed the class itself first, it may read and call it, never set or delete its attributes
        (a method set there would change every object of it)."""
        with self._lock:
            if not self.holds(cls):
                self._hidden.add(id(cls))
        return cls

    def seal(self, value: object, *, owner: bool = False, of: object = None) -> Sealed:
        """``value`` sealed, passed back only in a call of ``of`` (the callable whose default, or whose
        object, it is)."""
        with self._lock:
            found = self._seals.get((id(value), owner))  # a default's seal is never an owner's
            if found is None:
                found = self._seals[(id(value), owner)] = (SealedOwner if owner else Sealed)(value)
            if of is not None and not any(o is of for o in found.owners) and len(found.owners) < _SEAL_OWNERS:
                found.owners.append(of)
            return found

    def held(self, number: int) -> object:
        """The object a tag names, as held (a sealed default stays sealed)."""
        if number not in self.by_number:
            raise ValueError(f"no grader object number {number!r}")
        return self.by_number[number]

    def resolve(self, number: object) -> object:
        """The object a tag names, as an argument (a sealed default is its value again, in a call of
        its own callable only: ``unsealing``)."""
        if type(number) is not int or number not in self.by_number:
            raise ValueError(f"no grader object number {number!r}")
        value = self.by_number[number]
        if not isinstance(value, Sealed):
            return value
        target = getattr(self._unsealing, "target", None)
        if target is ANSWER:
            return value.value
        if type(target) is _Call and (target.suite or value.owned_by(target.target)):
            target.unsealed[id(value.value)] = value
            return value.value
        if target is not None:
            raise TypeError("patchgate: a test's default value is passed back to the test's own code only")
        return value  # anywhere else (an exception's arguments, a kept container's contents): sealed

    @contextlib.contextmanager
    def unsealing(self, target: object) -> Iterator[None]:
        """Decode a request's arguments for ``target``: a ``_Call`` (a sealed value is its value again
        where the callable is the suite's own code or one it was sealed for, refused elsewhere),
        ``_NO_CALLABLE`` (an operator's: refused), or ``ANSWER`` (an answer's value, the test's own:
        each its value again). Anywhere else a sealed value stays sealed."""
        before = getattr(self._unsealing, "target", None)
        self._unsealing.target = target
        try:
            yield
        finally:
            self._unsealing.target = before

    def target(self, data: object) -> object:
        """The object a request is about: only one the subject was handed, named by its number."""
        if not (isinstance(data, dict) and data.get(codec.TYPE) == "obj" and data.get("side") == "g"):
            raise TypeError("patchgate: the code under test may only use a test object it was handed")
        number = data.get("id")
        value = self.by_number.get(number) if isinstance(number, int) else None
        if value is None or isinstance(value, Sealed):
            raise TypeError("patchgate: the code under test may only use a test object it was handed")
        return value

    def serve(self, request: dict[str, Any], decode: Callable[[Any], Any]) -> Any:
        """Do what the subject asks of a handed object; raise what the object raises, or a refusal."""
        op = request.get("op")
        data = request.get("obj")
        number = data.get("id") if isinstance(data, dict) and data.get("side") == "g" else None
        owner = self.by_number.get(number) if type(number) is int else None
        if type(owner) is SealedOwner and op == "op" and request.get("name") == "repr":
            return self._aliased_text(owner.value, repr(owner.value))  # what the method's repr shows
        target = self.target(request.get("obj"))
        if op == "getattr":
            sent = str(request.get("name"))
            name = self.aliases.restore(sent)
            if name == "__dict__" and hasattr(target, "__dict__"):
                # What decorators copy (functools.update_wrapper) and caching descriptors write
                # (boltons cachedproperty): the public attributes, and only those, as a live view;
                # a class's, read-only.
                kind = ClassNamespace if isinstance(target, type) else PublicNamespace
                return kind(target, self)
            if name in ("__bases__", "__mro__") and isinstance(target, type):
                # A class's structure, as isinstance and issubclass already probe it (six's add_metaclass
                # rebuilds a class on its bases): each class in it reached to read, never to write.
                return tuple(self.reach(k) for k in getattr(target, name))
            theirs = name in self._theirs.get(id(target), ())
            # A test's metaclass prepares a class body's namespace, as a class statement asks it to (six's
            # with_metaclass asks it on the class statement's behalf).
            prepares = name == "__prepare__" and isinstance(target, type) and issubclass(target, type)
            # A protocol method of the test's class (``__html__``), bound to its object: as a public one.
            protocol = not isinstance(target, type) and protocol_method(type(target), name, self.mirrorable)
            refused = name.startswith("_") and name not in METADATA and not (theirs or prepares or protocol)
            if refused or (isinstance(target, _FRAMED) and name.startswith(_FRAME_PREFIXES)):
                # Private attributes, code, globals, closures, defaults or a generator's frame
                # would open the test's frames, globals and values.
                raise AttributeError(f"patchgate: the code under test may not read {name!r} of a test object")
            module, suite = self._owner(target)
            try:
                found = getattr(target, name)
            except AttributeError:
                if name == sent:
                    raise
                # An alias the change sent, restored: the error names what it sent, never the real
                # name (its text and its ``name`` would otherwise decode any alias).
                raise AttributeError(f"patchgate: no attribute {sent!r} of a test object") from None
            if protocol:
                return ProtocolMethod(found, self)
            if isinstance(target, BaseException) and name == "args" and type(found) is tuple:
                # A test's exception's arguments, as its text crosses: a test's name in them aliased.
                return tuple(self.aliases.names_in(a) if type(a) is str else a for a in found)
            return self.aliases.attribute(module, name, found, suite=suite)
        if op in ("setattr", "delattr"):
            name = str(request.get("name"))
            if id(target) in self._hidden or isinstance(target, enum.EnumType):
                # Reached only as an object's class: a method set there would change every object. A
                # test's enum is its members' class: ``value`` set there would be every member's value.
                raise AttributeError(f"patchgate: the code under test may not set {name!r} of a test's class")
            if op == "setattr" and name in RENAMEABLE and type(target) is types.FunctionType:
                return self._rename(target, name, self.decode_held(request.get("value")))
            if name.startswith("_") and not self.take(target, name):
                raise AttributeError(f"patchgate: the code under test may not set {name!r} of a test object")
            if op == "delattr":
                return delattr(target, name)
            setattr(target, name, self.decode_held(request.get("value")))
            return None
        if op == "call":
            if type(target) is types.FunctionType and target in self._inits:
                # Run on a test's object it would set that object's own private state afresh, with
                # the change's arguments (what ``_may_set`` refuses attribute by attribute).
                raise TypeError("patchgate: the code under test may not run a test class's __init__")
            call = _Call(target, self._suite_callable(target))
            with self.unsealing(call):
                args, kwargs = decode(request.get("args", [])), decode(request.get("kwargs", {}))
            if isinstance(target, type) and issubclass(target, type):
                args = self._class_statement(args)
            found = target(*args, **kwargs)  # type: ignore[operator]
            passed = call.unsealed.get(id(found))
            if passed is not None and passed.value is found:
                return passed  # a default it was given, handed straight back (an identity): sealed again
            if type(found) is str and self._describes_a_test(target):
                return self.aliases.names_in(found)
            return found
        if op == "signature":
            return signatures.describe(target, lambda value: self.seal(value, of=target))
        if op == "where":
            return self._where(target)
        if op == "describe":
            if not self.mirrorable(target):
                raise TypeError("patchgate: only a test's own plain class is described")
            init = vars(target).get("__init__")
            if type(init) is types.FunctionType:
                self._inits.add(init)
            return describe(target, self.aliases, self.subjects, self.reach)  # type: ignore[arg-type]
        if op == "take":
            number = request["obj"]["id"]  # target() checked it names an object we hold
            return self.lent.ahead(number, target, request.get("size"), self.encode)
        if op == "op":
            name = str(request.get("name"))
            if name not in GRADER_OPERATORS:
                raise TypeError(f"patchgate: operation {name!r} is not offered on a test's object")
            with self.unsealing(_NO_CALLABLE):
                args = decode(request.get("args", []))
            if name == "dir":  # its public names only
                return [self.aliases.name(n) for n in dir(target) if not n.startswith("_")]
            found = OPERATORS[name].apply(target, *args)
            if name in ("repr", "str") and isinstance(found, str):
                return self._aliased_text(target, found)
            return found
        raise ValueError(f"unknown request {op!r}")

    def _rename(self, target: types.FunctionType, name: str, value: object) -> None:
        """``functools.wraps`` on a test's function: its name, place and doc are the change's to set,
        as in one process - but never so a function of no suite module's becomes one of the suite's
        (what the suite's own functions may do, BOUND and kept results, is decided by it)."""
        if name in NAMES:
            value = self._renamed(name, value)
        if name == "__annotations__" and isinstance(value, Mapping) and type(value) is not dict:
            value = dict(value.items())  # the change's dict, held by handle: the function takes a copy
        if (
            name == "__module__"
            and self.aliases.suite_module(value)
            and not self.aliases.suite_module(target.__module__)
        ):
            raise AttributeError("patchgate: the code under test may not move a function into the suite")
        setattr(target, name, value)

    def _renamed(self, name: str, value: object) -> object:
        """A name the change gives a test's function, with the suite's names it read as aliases back.

        Only names it read: a name like a test's in clear is refused (the change never saw one, so it
        is a guess, and one read back as the alias of the running test would confirm it), whether or
        not it is one. The doc and annotations are not names: they keep what the change wrote, an
        alias too (restored, one would be read back in clear).
        """
        if not isinstance(value, str):
            return value
        if (
            self.aliases.names_a_test(value)
            or not self.aliases.whole_aliases(value)
            or self.aliases.names_a_file(value)  # restored, a suite file's path would read back in clear
        ):
            raise AttributeError(
                f"patchgate: the code under test may not name a test's function {name!r} like a test"
            )
        return self.aliases.restore(value)

    def _where(self, target: object) -> list[object] | None:
        """Where a test's function, method or running generator was defined, as its code says: the
        file by alias (restored where the change's text comes back: a warning's file, an error's
        text) and the first line (pluggy warns at a hook implementation's line and names a wrapper
        that yielded twice by its file and line). None for any function not of the suite's files:
        the grader's paths, a library's, never cross."""
        func = target.__func__ if type(target) is types.MethodType else target
        if isinstance(func, _FRAMED):
            code = getattr(func, f"{FRAMED[type(func)]}_code", None)
        else:
            code = func.__code__ if type(func) is types.FunctionType else None
        if type(code) is not types.CodeType:
            return None
        alias = self.aliases.file(code.co_filename)
        return None if alias is None else [alias, code.co_firstlineno]

    def _suite_callable(self, target: object) -> bool:
        """Whether calling ``target`` runs the suite's own code: a test's function or method, a test's
        own class, or an object of one (its ``__call__``)."""
        func = target.__func__ if type(target) is types.MethodType else target
        if type(func) is types.FunctionType:
            return self.aliases.suite_function(func)
        return self.mirrorable(func if isinstance(func, type) else type(func))

    def _describes_a_test(self, target: object) -> bool:
        """Whether ``target`` is a method of no suite's on a test's object: ``unittest.TestCase.id()``
        and ``shortDescription()`` of a test's case say its test's name, as its ``repr`` does."""
        if type(target) is not types.MethodType or self.aliases.suite_function(target.__func__):
            return False
        owner = type(target.__self__)
        return any(self.aliases.suite_module(type.__dict__["__module__"].__get__(k)) for k in owner.__mro__)

    def theirs(self, target: object, name: str) -> bool:
        """Whether the subject itself put the private attribute ``name`` on ``target``."""
        return name in self._theirs.get(id(target), ())

    def take(self, target: object, name: str) -> bool:
        """Let the subject set the private attribute ``name`` of ``target`` if it may (it is then theirs)."""
        if not self._may_set(target, name):
            return False
        with self._lock:
            self._theirs.setdefault(id(target), set()).add(name)
        return True

    def _may_set(self, target: object, name: str) -> bool:
        """A private attribute the subject may set on a test's object: a new one, on an object not a class.

        Never one the object already has (``__code__``, ``__defaults__``, ``__dict__``, a test's own
        ``_private``), and nothing on a class, where a special method would change every instance.
        """
        if name in self._theirs.get(id(target), ()):
            return True
        if isinstance(target, type):
            return False
        try:
            own = name in vars(target)
        except TypeError:  # no __dict__: nothing new can be set on it anyway
            return False
        return not own and not hasattr(type(target), name)

    def _class_statement(self, args: Any) -> Any:
        """A test's metaclass called as a class statement calls it, ``(name, bases, namespace)``: the
        class's name and its namespace's ``__module__`` and ``__qualname__`` are the suite's real names
        again where the change passed on their aliases (six's ``add_metaclass`` rebuilds a test's class
        from what it read of it). Only these: any other argument a test's callable gets stays as sent,
        so a test's callback that transforms a string never turns an alias into a real name for the
        change to read back (a sort key's ``s.lower()``)."""
        if not (isinstance(args, list) and len(args) == 3 and type(args[2]) is dict):
            return args
        name, bases, namespace = args
        # Its keys: a test's name (``test_x``) goes as its alias, as a subclass's namespace sends it.
        namespace = {self._whole_name(k): v for k, v in namespace.items()}
        for key in ("__module__", "__qualname__"):
            if key in namespace:
                namespace[key] = self._whole_name(namespace[key])
        return [self._whole_name(name), bases, namespace]

    def _whole_name(self, value: object) -> object:
        # A name made of whole aliases only (``_pgq1.<locals>.X``), never a file's: a path the change
        # named by alias must never become one a test's object opens.
        if (
            type(value) is not str
            or not self.aliases.whole_aliases(value)
            or self.aliases.names_a_file(value)
        ):
            return value
        return self.aliases.restore(value)

    def _owner(self, target: object) -> tuple[object, bool]:
        """The module ``target`` belongs to, and whether it is the suite's whatever it names (a running
        generator has no ``__module__``, a function's may be set; their code says where they were
        defined)."""
        module = getattr(target, "__module__", None)
        if isinstance(target, _FRAMED):
            code = getattr(target, f"{FRAMED[type(target)]}_code", None)
            return module, self.aliases.suite_file(getattr(code, "co_filename", None))
        if type(target) is types.FunctionType:
            # By its code, which the change cannot set: its __module__ it may (functools.wraps), and a
            # function moved out of the suite must not show its test's name unaliased.
            return module, self.aliases.suite_file(target.__code__.co_filename)
        return module, False

    def _aliased_text(self, target: object, text: str) -> str:
        """``repr`` of a test's function names its test (``<function test_x.<locals>.f at ...>``)."""
        module, suite = self._owner(target)
        for name in ("__qualname__", "__module__"):
            real = getattr(target, name, None)
            if isinstance(real, str) and real and real in text:
                alias = self.aliases.attribute(module, name, real, suite=suite)
                text = text.replace(real, alias) if isinstance(alias, str) else text
        # And any test's name it shows of another object (a TestCase's ``testMethod=test_x``: the
        # running test): a word named like a test is one, as the aliases name them.
        return self.aliases.names_in(text)
