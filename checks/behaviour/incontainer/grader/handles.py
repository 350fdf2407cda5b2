"""Handles: the grader's stand-ins for the subject's objects and modules; every use is a request.

A handle's class offers what the subject's type offers (``remote_class``):
a handle to a generator has no ``len()`` and is not callable; a handle to
a descriptor binds on a test's class. Equality and ordering between a
handle and a test's own value are never asked of the subject
(``NotImplemented``): an object of the change's own class that claims to
equal anything cannot learn or match the test's expected value.
"""

from __future__ import annotations

import contextlib
import inspect
import operator
import pickle
import sys
import types
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from typing import Any, Protocol

from ..channel import signatures
from ..channel.protocol import CAPABILITIES, OPERATORS, register_abcs
from . import iteration
from .errors import SubjectGone, SubjectTimeout

__all__ = ["Remote", "RemoteModule", "Requester", "SubjectGone", "SubjectTimeout", "remote_class"]


class Requester(Protocol):
    """The grader's end of the channel, as a handle uses it (``bridge.Bridge``)."""

    released: list[list[int]]
    batches: dict[int, iteration.Batch]

    def request(self, op: str, **fields: Any) -> Any: ...

    def encode(self, value: object) -> Any: ...

    def arguments(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]: ...

    def attribute_value(self, value: object) -> Any: ...


def is_handle(value: object) -> bool:
    """Whether ``value`` is one of our handles (by its exact type: nothing can claim to be one)."""
    return type(value) in _HANDLE_TYPES or type(value) is RemoteModule


def number(value: object) -> int:
    return int(object.__getattribute__(value, "_pg_id"))


def _bridge(value: object) -> Requester:
    bridge: Requester = object.__getattribute__(value, "_pg_bridge")
    return bridge


_TYPE_DICT = type.__dict__["__dict__"]


def _past_the_test(self: object, dunder: str) -> int | None:
    """The change's class whose own ``dunder`` a test's subclass reached past its own, or None.

    A special method of a handle's class is reached from a test's subclass that defines the same one
    only through ``super().__str__()`` or ``Base.__str__(self)``: asking the subject for ``str(obj)``
    would find the test's method again (and again). Then it is that class's own, as in one process.
    """
    kind = type(self)
    if kind in _OURS or "_pgc_made" in _TYPE_DICT.__get__(kind):
        return None  # a handle whose own class is ours or the change's: no test's class comes first
    order = kind.__mro__
    first = next((k for k in order if dunder in _TYPE_DICT.__get__(k)), None)
    if first is None or first in _OURS or "_pgc_made" in _TYPE_DICT.__get__(first):
        return None  # a handle's class or the change's class answers: an ordinary request
    below = order[order.index(first) + 1 :]
    made = next((k for k in below if "_pgc_made" in _TYPE_DICT.__get__(k)), None)
    return None if made is None else int(type.__getattribute__(made, "_pgc_id"))


_ORDINARY = object()


def _own_special(self: object, dunder: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """What the change's own ``dunder`` answers when a test's subclass reached past its own, else
    ``_ORDINARY`` (the caller asks the subject for the operation as usual)."""
    past = _past_the_test(self, dunder)
    if past is None:
        return _ORDINARY
    bridge = _bridge(self)
    encoded = bridge.arguments(args, kwargs)
    return bridge.request("call_on", cls=past, name=dunder, obj=number(self), **encoded)


def _ask(self: object, name: str, args: tuple[Any, ...]) -> Any:
    """The operation ``name`` on a handle: the subject applies it, or, reached past a test's own
    special method, the change's class's own one."""
    answer = _own_special(self, f"__{name}__", args, {})
    if answer is _ORDINARY:
        answer = _bridge(self).request("op", name=name, args=_bridge(self).encode([self, *args]))
    return answer


def _op(name: str) -> Callable[..., Any]:
    result = OPERATORS[name].result

    def apply(self: Remote, *args: Any) -> Any:
        answer = _ask(self, name, args)
        return answer if result is None else result(answer)

    apply.__name__ = f"__{name}__"
    return apply


def _reflected(name: str) -> Callable[..., Any]:
    def apply(self: Remote, other: Any) -> Any:
        return _bridge(self).request("op", name=name, args=_bridge(self).encode([other, self]))

    return apply


def _compare(name: str) -> Callable[..., Any]:
    def compare(self: Remote, other: object) -> Any:
        if not is_handle(other):
            # Never hand a test's expected value to the subject to agree with.
            return NotImplemented
        return _ask(self, name, (other,))

    return compare


_COMPARISONS: dict[str, Callable[[Any, Any], Any]] = {
    "eq": operator.eq, "ne": operator.ne, "lt": operator.lt,
    "le": operator.le, "gt": operator.gt, "ge": operator.ge,
}  # fmt: skip


def _contents_compare(name: str) -> Callable[..., Any]:
    """A mutable container of the subject's (a subclass of one, or one held by handle) against a value."""
    compare = _COMPARISONS[name]

    def apply(self: Any, other: object) -> Any:
        bridge: Requester = object.__getattribute__(self, "_pg_bridge")
        if is_handle(other):
            # Two of the change's own objects: theirs to decide.
            return bridge.request("op", name=name, args=bridge.encode([self, other]))
        # A test's own value: compared here with the contents as the base type reads them.
        contents: Any = bridge.request("value", obj=number(self))
        return compare(contents, other)

    return apply


CONTENTS_COMPARED = {f"__{n}__": _contents_compare(n) for n in _COMPARISONS}


class Remote:
    """A handle to one object of the subject; every use is a request.

    A handle's class offers what the object's type offers (``remote_class``):
    a handle to a generator has no ``len()`` and is not callable.
    """

    __slots__ = ("__weakref__", "_pg_bridge", "_pg_id", "_pg_seen")

    def __init__(self, bridge: Requester, number: int) -> None:
        object.__setattr__(self, "_pg_bridge", bridge)
        object.__setattr__(self, "_pg_id", number)
        object.__setattr__(self, "_pg_seen", 0)

    def __del__(self) -> None:
        # How many times this handle was received: the subject drops its object once every time it
        # sent it is accounted for (a handle collected late, with a newer one alive, releases only its own).
        with contextlib.suppress(Exception):  # interpreter shutdown
            bridge = _bridge(self)
            bridge.released.append([number(self), object.__getattribute__(self, "_pg_seen")])
            bridge.batches.pop(number(self), None)

    def __getattr__(self, name: str) -> Any:
        return _bridge(self).request("getattr", obj=number(self), name=name)

    def __setattr__(self, name: str, value: Any) -> None:
        bridge = _bridge(self)
        bridge.request("setattr", obj=number(self), name=name, value=bridge.attribute_value(value))

    def __delattr__(self, name: str) -> None:
        _bridge(self).request("delattr", obj=number(self), name=name)

    def __instancecheck__(self, instance: Any) -> bool:
        return bool(_reflected("isinstance")(self, instance))

    def __subclasscheck__(self, subclass: Any) -> bool:
        return bool(_reflected("issubclass")(self, subclass))

    def __length_hint__(self) -> Any:
        # No hint (the change's own __length_hint__ is never asked): list()'s call of it says that it
        # takes the iterator it just got whole (iteration.py).
        iterator = iteration.hinted(self, sys._getframe(1))
        if iterator is not None and is_handle(iterator):
            iteration.start(_bridge(self), number(iterator), sys._getframe(1))
        return NotImplemented

    __hash__ = _op("hash")
    __repr__ = _op("repr")
    __str__ = _op("str")
    __format__ = _op("format")

    def __reduce_ex__(self, protocol: Any) -> Any:
        # pickle.dumps(handle) pickles in the subject: our stream holds its bytes and how to load them
        # there again, never anything the grader would unpickle itself.
        data = _op("pickle")(self, protocol)
        if not isinstance(data, bytes):
            raise TypeError("patchgate: the code under test did not pickle its object")
        return _unpickle, (data,)

    def __copy__(self) -> Any:
        return _op("copy")(self)

    def __deepcopy__(self, memo: Any) -> Any:
        return _op("deepcopy")(self)

    __dir__ = _op("dir")
    __int__ = _op("int")
    __float__ = _op("float")
    __complex__ = _op("complex")
    __round__ = _op("round")
    __abs__ = _op("abs")
    __neg__ = _op("neg")
    __pos__ = _op("pos")
    __invert__ = _op("invert")
    __eq__ = _compare("eq")
    __ne__ = _compare("ne")
    __lt__ = _compare("lt")
    __le__ = _compare("le")
    __gt__ = _compare("gt")
    __ge__ = _compare("ge")


def _call(self: Remote, /, *args: Any, **kwargs: Any) -> Any:
    own = _own_special(self, "__call__", args, kwargs)
    if own is not _ORDINARY:
        return own
    bridge = _bridge(self)
    encoded = bridge.arguments(args, kwargs)
    return bridge.request("call", obj=number(self), **encoded)


def _iter(self: Remote) -> Any:
    iterator = _ask(self, "iter", ())
    iteration.noted(self, iterator, sys._getframe(1))
    return iterator


def _iter_self(self: Remote) -> Any:
    # A built-in iterator of the subject's (a generator, a list iterator): iter() is the object
    # itself there, and runs nothing of the change's.
    iteration.noted(self, self, sys._getframe(1))
    return self


def _next(self: Remote) -> Any:
    own = _own_special(self, "__next__", (), {})
    if own is not _ORDINARY:
        return own
    item = iteration.following(_bridge(self), number(self), sys._getframe(1))
    if item is not iteration.NOTHING:
        return item
    return _bridge(self).request("op", name="next", args=_bridge(self).encode([self]))


def _len(self: Remote) -> int:
    own = _own_special(self, "__len__", (), {})
    if own is not _ORDINARY:
        return int(own)
    frame = sys._getframe(1)
    iterator = iteration.hinted(self, frame)
    bridge = _bridge(self)
    if iterator is not None and is_handle(iterator):
        if number(iterator) not in bridge.batches:
            return int(iteration.length_and_start(bridge, number(self), number(iterator), frame))
        iteration.start(bridge, number(iterator), frame)
    return int(bridge.request("op", name="len", args=bridge.encode([self])))


def _exit(self: Remote, *exc: Any) -> Any:
    # The traceback and the grader's exception stay here; the subject sees that one was raised.
    kind, value, _ = exc
    builtin = kind is None or kind.__module__ == "builtins"
    return _op("exit")(self, kind if builtin else Exception, value, None)


# Capabilities a handle offers only when the subject's type does; Remote itself always defines the
# rest (int(), float(), hash and the comparisons: see above).
_SPECIAL: dict[str, dict[str, Any]] = {
    "call": {"__call__": _call},
    "iter": {"__iter__": _iter},
    "next": {"__next__": _next},
    "len": {"__len__": _len},
    "exit": {"__exit__": _exit},
    # A descriptor of the change's (a function, toolz.curry) binds on a test's class as in one process.
    "get": {"__get__": lambda self, instance, owner=None: _op("get")(self, instance, owner)},
}
_OFFERED: dict[str, dict[str, Any]] = {
    cap: _SPECIAL.get(cap) or {dunder: _op(cap)}
    for cap, dunder in CAPABILITIES.items()
    if cap not in ("int", "float", "hash", "lt", "le", "gt", "ge", "eq")
}
_CLASSES: dict[frozenset[str] | None, type[Remote]] = {}
_HANDLE_TYPES: set[type] = set()
_OURS: set[type] = {Remote}  # the handle classes this module makes (never a test's)


def remote_class(caps: object) -> type[Remote]:
    """The handle class for objects whose type offers ``caps`` (None: unknown, so everything)."""
    key = frozenset(c for c in caps if isinstance(c, str)) if isinstance(caps, list) else None
    found = _CLASSES.get(key)
    if found is None:
        wanted = set(_OFFERED) if key is None else key
        # x.__doc__ and x.__module__ are the subject's to say (x.__class__ stays a real class: isinstance
        # against an ABC reads it).
        namespace: dict[str, Any] = {
            "__slots__": (),
            **{n: _remote_attribute(n) for n in ("__doc__", "__module__")},
        }
        for cap in sorted(wanted & set(_OFFERED)):
            namespace.update(_OFFERED[cap])
        for cap in sorted(c[1:] for c in wanted if c.startswith("-") and c[1:] in _OFFERED):
            namespace.update(dict.fromkeys(_OFFERED[cap], None))
        if "selfiter" in wanted and "iter" in wanted:
            namespace["__iter__"] = _iter_self
        if "contents" in wanted:
            namespace.update(CONTENTS_COMPARED)
        if "method" in wanted:
            # A plain function of the subject's: ``inspect.isfunction`` and ``isinstance(x,
            # types.FunctionType)`` hold as in one process (``inspect.getmembers(lib, inspect.isfunction)``
            # in a test); its type stays the handle's, so C code and ``type(x) is`` still tell.
            namespace["__class__"] = property(lambda self: types.FunctionType)
        if "unhashable" in wanted:
            namespace["__hash__"] = None
        elif key is not None and "hash" not in key:
            namespace["__hash__"] = object.__hash__  # identity, as the subject's own type hashes
        found = _CLASSES[key] = type("Remote", (Remote,), namespace)
        _HANDLE_TYPES.add(found)
        _OURS.add(found)
        register_abcs(found, wanted)
    return found


def register_handle_type(cls: type) -> None:
    """Count ``cls``'s instances as handles (a local class of one of the subject's classes)."""
    _HANDLE_TYPES.add(cls)


_CURRENT: list[Requester] = []  # the bridge of this process (pickles load through it)


def _unpickle(data: bytes) -> Any:
    """Load, in the subject, an object the subject pickled (see ``Remote.__reduce_ex__``)."""
    if not _CURRENT:
        raise pickle.UnpicklingError("patchgate: no subject to load this object in")
    return _CURRENT[0].request("unpickle", data=_CURRENT[0].encode(data))


def remote_attribute(handle: object, name: str) -> Any:
    """The subject's ``getattr`` of ``name`` on the object ``handle`` stands for."""
    return _bridge(handle).request("getattr", obj=number(handle), name=name)


def _remote_attribute(name: str) -> property:
    return property(lambda self: remote_attribute(self, name))


def _remote_signature(self: Remote) -> inspect.Signature:
    return signatures.rebuild(_op("signature")(self))


Remote.__signature__ = property(_remote_signature)  # type: ignore[attr-defined]

for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "lshift", "rshift",
              "and", "or", "xor", "divmod"):  # fmt: skip
    setattr(Remote, f"__{_name}__", _op(_name))
    setattr(Remote, f"__r{_name}__", _reflected(_name))


class RemoteModule(types.ModuleType):
    """A module of the repository as the grader sees it: its attributes live in the subject."""

    def __init__(self, name: str, handle: Remote, names: list[str]) -> None:
        super().__init__(name)
        object.__setattr__(self, "_pg_handle", handle)
        object.__setattr__(self, "_pg_id", number(handle))
        object.__setattr__(self, "_pg_bridge", _bridge(handle))
        object.__setattr__(self, "__all__", names)

    def __getattr__(self, name: str) -> Any:
        handle = object.__getattribute__(self, "_pg_handle")
        if not (name.startswith("__") and name.endswith("__")):
            return getattr(handle, name)
        if name in _MODULE_OWN:
            raise AttributeError(name)
        # Other dunders (__version__, __file__) are the module's; the import machinery and inspect
        # probe them with hasattr, so a subject that is gone means "no such attribute".
        try:
            return getattr(handle, name)
        except (SubjectGone, SubjectTimeout):
            raise AttributeError(name) from None

    @property
    def __dict__(self) -> Mapping[str, Any]:  # type: ignore[override]
        # The module's namespace is the subject's: monkeypatch and mock.patch read it to restore.
        return _Namespace(object.__getattribute__(self, "_pg_handle"))

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("__") and name.endswith("__"):
            object.__setattr__(self, name, value)
            return
        child = f"{self.__name__}.{name}"
        submodule = isinstance(value, types.ModuleType)
        if submodule and (value.__name__ == child or sys.modules.get(child) is value):
            if type(value) is not RemoteModule:
                # Base's test support, imported here (names.Support): the package reads it here too.
                object.__setattr__(self, name, value)
            # The grader's import system naming a submodule on its package: the subject's own import
            # already did what it does (a package that binds a function under its submodule's name,
            # slugify.slugify, keeps it).
            return
        setattr(object.__getattribute__(self, "_pg_handle"), name, value)

    def __delattr__(self, name: str) -> None:
        # A dunder held here (one a test set, as __setattr__ keeps them: doctest's __test__) goes here;
        # anything else is the subject's to delete.
        if name.startswith("__") and name.endswith("__") and name in _MODULE_DICT.__get__(self):
            object.__delattr__(self, name)
            return
        delattr(object.__getattribute__(self, "_pg_handle"), name)

    def __dir__(self) -> list[str]:
        # The subject's dir() of the module: a module-level __dir__ (PEP 562 lazy attributes, six.moves)
        # lists what it offers, as in one process; its star-import names when the subject is gone.
        try:
            return [str(n) for n in dir(object.__getattribute__(self, "_pg_handle"))]
        except (SubjectGone, SubjectTimeout):
            return list(object.__getattribute__(self, "__all__"))


_MODULE_DICT = vars(types.ModuleType)["__dict__"]  # a module's own namespace, never RemoteModule's property
_MODULE_OWN = frozenset({"__builtins__", "__getattr__", "__wrapped__", "__path__", "__test__", "__class__"})


class _Namespace(MutableMapping[str, Any]):
    """A module's namespace in the subject, read and written by request (``del mod.__dict__[name]``,
    as six's tests clean up after themselves, is the module's ``delattr``)."""

    def __init__(self, handle: Remote) -> None:
        self._handle = handle

    def __getitem__(self, name: str) -> Any:
        return _op("vars_get")(self._handle, name)

    def __iter__(self) -> Iterator[str]:
        return iter(_op("vars_keys")(self._handle))

    def __len__(self) -> int:
        return len(_op("vars_keys")(self._handle))

    def __setitem__(self, name: str, value: Any) -> None:
        setattr(self._handle, name, value)

    def __delitem__(self, name: str) -> None:
        if name not in self:
            raise KeyError(name)
        delattr(self._handle, name)

    def copy(self) -> dict[str, Any]:
        """A plain dict of the namespace, as ``dict.copy`` gives (doctest: the globals of its examples)."""
        return {name: self[name] for name in self}
