"""The subject's classes as real local classes: ``type(x) is lib.Cls``, subclassing, one request per call.

Each class of the change that crosses gets one local class here
(``subject/classes.py`` describes it once): its instances' handles are of
that class, so identity, ``isinstance`` and ``issubclass`` between the
change's own classes are answered locally, as in one process. Its
attributes live in the subject: a class attribute, a class method, an
instantiation is a request (``RemoteClass``).

- **Methods.** Each plain function of the class (when the class has no
  ``__getattribute__`` of its own) is a local descriptor, so ``h.method(x)``
  is one request (``call_attr``: the attribute is read and called in the
  subject, in that order, as in one process) instead of two, and
  ``super().method(x)`` from a test's subclass calls that class's own
  function (``call_on``). Used as a value (passed on, compared), the bound
  method is read from the subject like any attribute (members.py).
- **A test's subclass** (``class MyLexer(lib.RegexLexer)``) is made in the
  subject too, with the test's methods as stand-ins: the change's code
  calling ``self.method()`` runs the test's method, and instances made by
  either side are handles of the test's class.
- **Value subclasses** (``str``, ``int``, ``tuple``... of the change's:
  tomlkit's items, sqlparse's token types) are held as that value *and* a
  handle: the grader compares, hashes and slices them as their base value
  (read by the base type's own methods, never the change's ``__eq__``),
  every other attribute is the subject's, and one remote object is one
  local object (``is`` holds).
- **Container subclasses** (``list``, ``dict``, ``set``) compare with a
  test's own value by their contents read at that moment, as the base type
  reads them: the change's ``__eq__`` is never handed a test's value.
"""

from __future__ import annotations

import datetime
import threading
import types
from collections.abc import Callable, Mapping
from typing import Any

from ..channel.protocol import ARITHMETIC, OPERATORS, REFLECTED
from . import handles
from .aliases import Aliases
from .handles import Requester, remote_class
from .members import RemoteClassMethod, RemoteMethod, class_id, own_dict, request_of

VALUE_TYPES: dict[str, type] = {
    "int": int, "float": float, "complex": complex, "str": str, "bytes": bytes, "tuple": tuple,
    "frozenset": frozenset, "datetime": datetime.datetime, "date": datetime.date, "time": datetime.time,
    "timedelta": datetime.timedelta,
}  # fmt: skip
# Special methods a value subclass's own class may define that still go to the subject (the change's
# ``__contains__`` on a token type); comparison and hashing never do (see the module's docstring).
_ROUTED = (
    {op.dunder: name for name, op in OPERATORS.items() if op.dunder}
    | ARITHMETIC
    | {
        "__repr__": "repr",
        "__str__": "str",
        "__format__": "format",
    }
)
_VALUE_OWN = {"__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__hash__", "__init__"}
MAX_VALUES = 200_000
# What a class body holds that is the class's machinery, not its attributes.
_CLASS_OWN = frozenset(
    {"__module__", "__qualname__", "__dict__", "__weakref__", "__slots__", "__classcell__"}
)
_DATE_FIELDS: dict[type, tuple[str, ...]] = {
    datetime.datetime: ("year", "month", "day", "hour", "minute", "second", "microsecond", "tzinfo"),
    datetime.date: ("year", "month", "day"),
    datetime.time: ("hour", "minute", "second", "microsecond", "tzinfo"),
}


class RemoteClass(type):
    """The metaclass of the local classes: whatever a class is asked that is not local goes to the subject."""

    @classmethod
    def __prepare__(mcs, name: str, bases: tuple[type, ...], /, **kwargs: Any) -> Any:
        """A class body's namespace: the one the change's metaclass prepares, where it prepares one."""
        parent = next((b for b in bases if isinstance(b, RemoteClass) and _prepares(b)), None)
        if parent is None:
            return {}
        return type.__getattribute__(parent, "_pgc_registry").prepare(name, bases)

    def __new__(mcs, name: str, bases: tuple[type, ...], namespace: Any, **kwargs: Any) -> Any:
        registry: Classes | None = kwargs.pop("_pgc_registry", None)
        parent = next((b for b in bases if isinstance(b, RemoteClass)), None) if registry is None else None
        if parent is not None and isinstance(namespace, Prepared):
            # The body ran into the subject's namespace: the class is the subject's, made there.
            return type.__getattribute__(parent, "_pgc_registry").made_there(name, bases, namespace)
        cls = super().__new__(mcs, name, bases, namespace, **kwargs)
        if parent is not None:
            # A test's own subclass of classes of the change: its counterpart is made in the subject,
            # by their metaclass, which may make something else of the class statement.
            made = type.__getattribute__(parent, "_pgc_registry").subclass(cls, bases, namespace)
            if made is not cls:
                _keeps_the_body(made, namespace)
                cell = namespace.get("__classcell__")
                if cell is not None:  # super() in the body's methods: the class the statement gives
                    cell.cell_contents = made
                return made
        return cls

    @property
    def __module__(cls) -> str:  # type: ignore[override]
        """The class's module (``type``'s own getter would hand out the ``_Module`` of a library's class)."""
        found = own_dict(cls).get("__module__")
        return found.module if isinstance(found, _Module) else str(found)

    @property  # type: ignore[misc]
    def __dict__(cls) -> Any:  # type: ignore[override]
        """A library's class's namespace is the subject's, a test's subclass's its own.

        monkeypatch and mock.patch read ``Cls.__dict__`` to know what to put back: ours alone would
        say a static method of the subject's class is not its own, and the undo would delete it.
        """
        own = own_dict(cls)
        if "_pgc_made" not in own:
            return own
        return request_of(cls, "getattr", obj=class_id(cls), name="__dict__")

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("_pgc_") or name in ("__wrapped__", "__signature__", "__test__"):
            raise AttributeError(name)
        return request_of(cls, "getattr", obj=class_id(cls), name=name)

    def __setattr__(cls, name: str, value: Any) -> None:
        if name.startswith(("_pgc_", "__")):
            type.__setattr__(cls, name, value)
            return
        # monkeypatch.setattr(lib.Cls, "method", fake): the subject's class changes; our own method of
        # that name, if any, goes, so that a later lookup finds what the subject now holds.
        bridge: Requester = type.__getattribute__(cls, "_pgc_bridge")
        bridge.request("setattr", obj=class_id(cls), name=name, value=bridge.attribute_value(value))
        if isinstance(own_dict(cls).get(name), RemoteMethod):
            type.__delattr__(cls, name)

    def __delattr__(cls, name: str) -> None:
        request_of(cls, "delattr", obj=class_id(cls), name=name)
        if isinstance(own_dict(cls).get(name), RemoteMethod):
            type.__delattr__(cls, name)

    def __call__(cls, /, *args: Any, **kwargs: Any) -> Any:
        bridge: Requester = type.__getattribute__(cls, "_pgc_bridge")
        encoded = bridge.arguments(args, kwargs)
        return bridge.request("call", obj=class_id(cls), **encoded)

    def __repr__(cls) -> str:
        return str(
            request_of(cls, "op", name="repr", args=[{"__type__": "obj", "side": "s", "id": class_id(cls)}])
        )

    def __instancecheck__(cls, instance: Any) -> bool:
        if type.__instancecheck__(cls, instance):
            return True
        # A class the subject's registered as a virtual subclass (an ABC of the change's): its word.
        if handles.is_handle(instance):
            bridge: Requester = type.__getattribute__(cls, "_pgc_bridge")
            args = bridge.encode([instance, cls])
            return bool(bridge.request("op", name="isinstance", args=args))
        return False


def _metacaps(cls: type) -> frozenset[str]:
    """What the subject's metaclass of ``cls`` offers the class itself (``_make``)."""
    mro = type.__dict__["__mro__"].__get__(cls)
    found: frozenset[str] = next(
        (own_dict(k)["_pgc_metacaps"] for k in mro if "_pgc_metacaps" in own_dict(k)), frozenset()
    )
    return found


def _class_operator(name: str) -> Callable[..., Any]:
    dunder, result = OPERATORS[name].dunder, OPERATORS[name].result

    def apply(cls: type, *args: Any) -> Any:
        if name not in _metacaps(cls):
            if name == "getitem" and hasattr(cls, "__class_getitem__"):  # ``lib.Box[int]``, as Python
                return cls.__class_getitem__(*args)
            # As the class's own metaclass answers where it defines no such method.
            raise TypeError(f"{dunder} of class {type.__dict__['__name__'].__get__(cls)!r}: not offered")
        return _ask_class(cls, name, args, result)

    apply.__name__ = str(dunder)
    return apply


def _ask_class(cls: type, name: str, args: tuple[Any, ...], result: Callable[[Any], Any] | None) -> Any:
    bridge: Requester = type.__getattribute__(cls, "_pgc_bridge")
    answer = bridge.request("op", name=name, args=bridge.encode([cls, *args]))
    return answer if result is None else result(answer)


def _class_bool(cls: type) -> bool:
    # A class is true, unless its metaclass says otherwise (by ``__bool__``, or ``__len__`` without it).
    offered = _metacaps(cls)
    if "bool" in offered:
        return bool(_ask_class(cls, "bool", (), bool))
    if "len" in offered:
        return bool(_ask_class(cls, "len", (), int))
    return True


# What a metaclass may offer a class itself that the local classes answer (``RemoteMetaclassed``).
CLASS_PROTOCOL = frozenset({"iter", "len", "getitem", "contains", "reversed", "bool"})


class RemoteMetaclassed(RemoteClass):
    """The local classes of the change's classes whose metaclass offers a protocol of the class itself
    (an enum's): ``list(Colour)``, ``len``, ``Colour["RED"]``, ``in``, ``reversed`` and truth are the
    subject's class's, asked there; one the metaclass does not offer raises, as in one process (a
    subscript falls back to ``__class_getitem__``), and such a class is true."""

    __iter__ = _class_operator("iter")
    __len__ = _class_operator("len")
    __getitem__ = _class_operator("getitem")
    __contains__ = _class_operator("contains")
    __reversed__ = _class_operator("reversed")
    __bool__ = _class_bool


_BODY_KINDS = (types.FunctionType, classmethod, staticmethod, property)


def _body(namespace: Mapping[str, Any]) -> dict[str, Any]:
    """The functions a test's class body binds (as methods, class and static methods, properties)."""
    return {k: v for k, v in dict(namespace).items() if isinstance(v, _BODY_KINDS) and isinstance(k, str)}


def _keeps_the_body(made: object, namespace: Mapping[str, Any]) -> None:
    """Refuse what the change's metaclass made of a test's class statement unless it keeps the body's
    functions, each the test's very object: a class of the change's, or one whose methods it swapped,
    would let the test's own code - its assertions - never run."""
    body = _body(namespace)
    if not body:
        return
    own = type.__dict__["__dict__"].__get__(made) if isinstance(made, type) else {}
    for key, value in body.items():
        found = own.get(key)
        same = found is value or (
            type(found) is type(value)
            and not isinstance(value, property | types.FunctionType)
            and getattr(found, "__func__", None) is getattr(value, "__func__", None)
        )
        if not same:
            raise TypeError(
                f"patchgate: the code under test's metaclass did not keep the test's {key!r} in its class"
            )


def _prepares(cls: type) -> bool:
    """Whether the change's metaclass of ``cls`` prepares a class body's namespace itself."""
    return any(own_dict(k).get("_pgc_prepare") is True for k in type.__dict__["__mro__"].__get__(cls))


def _value_op(name: str) -> Callable[..., Any]:
    def apply(self: Any, *args: Any) -> Any:
        bridge: Requester = object.__getattribute__(self, "_pg_bridge")
        return bridge.request("op", name=name, args=bridge.encode([self, *args]))

    apply.__name__ = f"__{name}__"
    return apply


def _value_reflected(name: str) -> Callable[..., Any]:
    def apply(self: Any, other: Any) -> Any:
        bridge: Requester = object.__getattribute__(self, "_pg_bridge")
        return bridge.request("op", name=name, args=bridge.encode([other, self]))

    apply.__name__ = f"__r{name}__"
    return apply


class _Module:
    """A local class's ``__module__``: the class's module on the class (RemoteClass.__module__), the
    subject's word on an instance (toolz's ``curry`` keeps the module of what it wraps, and a test may
    set it: ``f.__module__ = "newmodule"``)."""

    def __init__(self, module: str) -> None:
        self.module = module

    def __get__(self, instance: object, owner: type | None = None) -> Any:
        if instance is None:
            return self.module
        return handles.remote_attribute(instance, "__module__")


class _Doc:
    """A local class's ``__doc__``: the class's docstring on the class, the subject's word on an instance
    (toolz's ``curry`` sets the curried function's docstring on itself)."""

    def __init__(self, doc: str | None) -> None:
        self.doc = doc

    def __get__(self, instance: object, owner: type | None = None) -> Any:
        if instance is None:
            return self.doc
        return handles.remote_attribute(instance, "__doc__")


def _value_getattr(self: Any, name: str) -> Any:
    if name.startswith("_pg_"):
        raise AttributeError(name)
    bridge: Requester = object.__getattribute__(self, "_pg_bridge")
    return bridge.request("getattr", obj=handles.number(self), name=name)


def _value_setattr(self: Any, name: str, value: Any) -> None:
    if name.startswith("_pg_"):
        object.__setattr__(self, name, value)
        return
    bridge: Requester = object.__getattribute__(self, "_pg_bridge")
    bridge.request("setattr", obj=handles.number(self), name=name, value=bridge.attribute_value(value))


class Classes:
    """This run's local classes, by the subject's number for each class."""

    def __init__(self, bridge: Requester, aliases: Aliases) -> None:
        self.bridge = bridge
        self.aliases = aliases
        self.by_number: dict[int, type] = {}
        self.values: dict[int, object] = {}
        self._lock = threading.RLock()

    def resolve(self, number: int, tag: dict[str, Any], decode: Callable[[Any], Any]) -> type:
        """The local class for the subject's class ``number`` (made the first time, from ``tag``)."""
        with self._lock:
            found = self.by_number.get(number)
            if found is not None:
                return found
            if "name" not in tag:
                raise ValueError(f"patchgate: class number {number} was never described")
            made: type = self._make(number, tag, decode)
            self.by_number[number] = made
            return made

    def _make(self, number: int, tag: dict[str, Any], decode: Callable[[Any], Any]) -> type:
        bases = tuple(b for b in (decode(x) for x in tag.get("bases") or []) if isinstance(b, RemoteClass))
        value = VALUE_TYPES.get(str(tag.get("value")))
        namespace: dict[str, Any] = {
            "_pgc_made": True,  # a library's class (a test's subclass is made elsewhere, without it)
            "_pgc_prepare": tag.get("prepare") is True,
            "__module__": str(tag.get("module") or "?"),
            "__qualname__": str(tag.get("qualname") or tag.get("name")),
            "__doc__": tag.get("doc") if isinstance(tag.get("doc"), str) else None,
        }
        for name in tag.get("methods") or []:
            # The subject's list, so never a special method but __init__ (super().__init__): a local
            # __eq__ of the subject's would hand it a test's expected value.
            if (
                isinstance(name, str)
                and name.isidentifier()
                and (not name.startswith("__") or name == "__init__")
            ):
                namespace[name] = RemoteMethod(name)
        for name in tag.get("classmethods") or []:
            if isinstance(name, str) and name.isidentifier() and not name.startswith("__"):
                namespace[name] = RemoteClassMethod(name)
        if value is not None:
            # Held as the value itself: the base type's own comparison, hash and methods, but for the
            # special methods the change's class defines, and every other attribute is the subject's.
            namespace["__getattr__"] = _value_getattr
            namespace["__setattr__"] = _value_setattr
            for dunder in tag.get("overrides") or []:
                if dunder in _ROUTED and dunder not in _VALUE_OWN:
                    namespace[dunder] = _value_op(_ROUTED[dunder])
                elif dunder in REFLECTED:  # ``"x" + token``: the change's __radd__, the two sides swapped
                    namespace[dunder] = _value_reflected(REFLECTED[dunder])
            parents: tuple[type, ...] = tuple(b for b in bases if issubclass(b, value)) or (value,)
        else:
            namespace["__slots__"] = ()
            namespace["__doc__"] = _Doc(namespace["__doc__"])
            namespace["__module__"] = _Module(namespace["__module__"])
            if tag.get("container") in ("list", "dict", "set"):
                namespace.update(handles.CONTENTS_COMPARED)
            offered = remote_class(tag.get("caps"))
            # After the bases: one that offers the same is already in their order (a consistent MRO).
            parents = (*bases, offered) if not any(issubclass(b, offered) for b in bases) else bases
            if tag.get("tzinfo") is True and not any(issubclass(b, datetime.tzinfo) for b in parents):
                # The change's tzinfo is one here too: a test's datetime takes it (C checks the type),
                # and asks it its offset, name and DST - each a request, as ``utcoffset`` is its method.
                parents = (*parents, datetime.tzinfo)
        metacaps = tag.get("metacaps")
        offers = frozenset(c for c in metacaps if c in CLASS_PROTOCOL) if isinstance(metacaps, list) else None
        if offers:
            namespace["_pgc_metacaps"] = offers
            meta: type = RemoteMetaclassed
        else:
            meta = RemoteClass
        cls: type = meta(str(tag.get("name") or "Remote"), parents, namespace, _pgc_registry=self)
        self._bind(cls, number)
        return cls

    def _bind(self, cls: type, number: int) -> None:
        type.__setattr__(cls, "_pgc_id", number)
        type.__setattr__(cls, "_pgc_bridge", self.bridge)
        type.__setattr__(cls, "_pgc_registry", self)
        handles.register_handle_type(cls)

    def instance(self, cls: type, number: int, tag: dict[str, Any], decode: Callable[[Any], Any]) -> object:
        """A handle of class ``cls`` for the subject's object ``number`` (a value subclass: its value too)."""
        base = next((b for b in cls.__mro__ if b in VALUE_TYPES.values()), None)
        if base is None:
            handle: object = object.__new__(cls)
            for slot, value in (("_pg_bridge", self.bridge), ("_pg_id", number), ("_pg_seen", 0)):
                object.__setattr__(handle, slot, value)
            return handle
        with self._lock:
            found = self.values.get(number)
            if found is None:
                found = _value_instance(base, cls, decode(tag.get("value")))
                for slot, value in (("_pg_bridge", self.bridge), ("_pg_id", number), ("_pg_seen", 0)):
                    object.__setattr__(found, slot, value)
                if len(self.values) < MAX_VALUES:  # one remote object, one local one: `is` holds
                    self.values[number] = found
            return found

    def prepare(self, name: str, bases: tuple[type, ...]) -> Any:
        """The namespace the change's metaclass prepares for a test's class statement over ``bases``: a
        test's own mapping (its metaclass's, asked back), or the subject's, written through ``Prepared``."""
        remote = [b for b in bases if isinstance(b, RemoteClass)]
        found = self.bridge.request("prepare", name=self.aliases.name(name), bases=self.bridge.encode(remote))
        return Prepared(found, self.aliases) if handles.is_handle(found) else found

    def made_there(self, name: str, bases: tuple[type, ...], namespace: Prepared) -> Any:
        """The class the change's metaclass makes of a class body run into its own namespace."""
        remote = [b for b in bases if isinstance(b, RemoteClass)]
        with self._lock:
            before = set(self.by_number)
        found = self.bridge.request(
            "subclass", name=self.aliases.name(name), bases=self.bridge.encode(remote),
            prepared=self.bridge.encode(namespace.handle),
        )  # fmt: skip
        made = found["made"] if isinstance(found, dict) and "made" in found else found
        fresh = isinstance(made, RemoteClass) and own_dict(made).get("_pgc_id") not in before
        if not fresh:
            _keeps_the_body(made, namespace)
            return made
        # A class the subject made of the body: the test's own functions are its methods here, as a
        # test's subclass's are - what the change's metaclass put in their place there never runs
        # for the test.
        for key, value in _body(namespace).items():
            type.__setattr__(made, key, value)
        cell = namespace.get("__classcell__")
        if cell is not None:
            cell.cell_contents = made
        return made

    def subclass(self, cls: type, bases: tuple[type, ...], namespace: dict[str, Any]) -> Any:
        """Make a test's subclass ``cls`` in the subject too, and bind it to the class made there; what
        the metaclass made instead, where it made something else."""
        remote = [b for b in bases if isinstance(b, RemoteClass)]
        # The test's own other bases (mixins) reach the subject as the methods they give the class.
        given: dict[str, Any] = {}
        for base in reversed(
            [b for b in cls.__mro__[1:] if not isinstance(b, RemoteClass) and b is not object]
        ):
            given.update({k: v for k, v in own_dict(base).items() if not k.startswith("__")})
        given.update(namespace)
        encode = self.bridge.encode
        entries: dict[str, Any] = {}
        for name, value in given.items():
            if name in (
                "__module__",
                "__qualname__",
                "__dict__",
                "__weakref__",
                "__slots__",
                "__classcell__",
            ):
                continue
            if isinstance(value, classmethod | staticmethod):
                entries[self.aliases.name(name)] = {
                    "as": type(value).__name__,
                    "value": encode(value.__func__),
                }
            elif isinstance(value, property):
                entries[self.aliases.name(name)] = {
                    "as": "property",
                    "value": encode([value.fget, value.fset, value.fdel]),
                }
            else:
                try:
                    entries[self.aliases.name(name)] = {"value": encode(value)}
                except TypeError:  # a module or frame in the class body: never handed over
                    continue
        # The test's names reach the subject as aliases (aliases.py): test_x.<locals>.Shout names its test.
        module = cls.__module__
        number = self.bridge.request(
            "subclass", name=self.aliases.name(cls.__name__),
            qualname=self.aliases.attribute(module, "__qualname__", cls.__qualname__),
            module=self.aliases.attribute(module, "__module__", module),
            bases=encode(remote), namespace=entries,
        )  # fmt: skip
        if isinstance(number, dict) and "made" in number:
            return number["made"]
        if not isinstance(number, int):
            raise TypeError("patchgate: the code under test did not make the subclass")
        with self._lock:
            self.by_number[number] = cls
        self._bind(cls, number)
        return cls


class Prepared(dict):  # type: ignore[type-arg]
    """A class body's namespace the change's metaclass prepared (an enum's): each name the body binds is
    written there too, a suite's module and qualified name as their aliases, as a subclass sends them.

    A dict itself, for the class statement (``LOAD_NAME`` reads the body's own names back here).
    """

    def __init__(self, handle: Any, aliases: Aliases) -> None:
        super().__init__()
        self.handle = handle
        self._aliases = aliases

    def __setitem__(self, name: str, value: Any) -> None:
        super().__setitem__(name, value)
        if name == "__module__" and isinstance(value, str):
            value = self._aliases.attribute(value, "__module__", value)
        elif name == "__qualname__" and isinstance(value, str):
            value = self._aliases.attribute(self.get("__module__"), "__qualname__", value)
        self.handle[self._aliases.name(name)] = value

    def __delitem__(self, name: str) -> None:
        super().__delitem__(name)
        del self.handle[self._aliases.name(name)]


def _value_instance(base: type, cls: type, value: object) -> object:
    new: Any = base.__new__
    if isinstance(value, datetime.timedelta) and base is datetime.timedelta:
        return new(cls, value.days, value.seconds, value.microseconds)
    if base in _DATE_FIELDS:
        return new(cls, *(getattr(value, p) for p in _DATE_FIELDS[base]))
    return new(cls, value)
