"""Stand-ins, in the subject, for the grader's objects the change's code was handed.

A test's callback, class or double reaches the change's code as a
``GraderObject``: each use is a request the grader answers (see
``handed.py`` for what it refuses). A stand-in offers exactly what the
object's type offers (``caps``): a plain function is callable and binds as
a method, a list iterator iterates and has no ``len()``; an object that
keeps the default identity equality and hash compares and hashes here, by
identity, without a request. The same grader object always has the same
stand-in while one is alive, so ``iter(it) is it`` holds.
"""

from __future__ import annotations

import abc
import copyreg
import functools
import inspect
import pickle
import types
import weakref
from collections.abc import Callable
from typing import Any, Protocol

from ..channel import signatures
from ..channel.protocol import CAPABILITIES, FRAMED, GRADER_OPERATORS, OPERATORS, register_abcs
from .readahead import ReadAhead


class Caller(Protocol):
    readahead: ReadAhead

    def callback(self, kind: str, *parts: Any) -> Any: ...


class GraderObject:
    # A grader's object the change's code was given (a callback, a test double): used by request.

    __slots__ = ("__weakref__", "_pg_agent", "_pg_id")

    def __init__(self, agent: Caller, number: int) -> None:
        object.__setattr__(self, "_pg_agent", agent)
        object.__setattr__(self, "_pg_id", number)

    def _op(self, name: str, *args: Any) -> Any:
        return self._pg_agent.callback("op", name, self, *args)

    def __getattr__(self, name: str) -> Any:
        return self._pg_agent.callback("getattr", self, name)

    def __setattr__(self, name: str, value: Any) -> None:
        self._pg_agent.callback("setattr", self, name, value)

    def __delattr__(self, name: str) -> None:
        self._pg_agent.callback("delattr", self, name)

    def __repr__(self) -> str:
        return str(self._op("repr"))

    def __str__(self) -> str:
        return str(self._op("str"))

    def __dir__(self) -> list[str]:
        return [str(n) for n in self._op("dir")]

    def __reduce_ex__(self, protocol: Any) -> Any:
        # The change pickles what it was handed: the pickle, loaded here again, names the same object.
        return _restore, (object.__getattribute__(self, "_pg_id"),)


def _attribute(name: str) -> property:
    # What a class attribute of ours would answer (__doc__, __module__) is the grader object's to say.
    return property(lambda self: self._pg_agent.callback("getattr", self, name))


def _signature(self: GraderObject) -> inspect.Signature:
    return signatures.rebuild(self._pg_agent.callback("signature", self))


def _function_class(self: GraderObject) -> type:
    # A test's plain function says it is one: inspect.isfunction, and so isgeneratorfunction, ask
    # ``__class__`` (type() still tells a stand-in, and our own code asks type()).
    return types.FunctionType


_CODE_KINDS = {
    "genfunc": ("def", "    yield\n"), "corofunc": ("async def", "    pass\n"),
    "asyncgenfunc": ("async def", "    yield\n"),
}  # fmt: skip
_STUB_FILE = "<patchgate: a test's function>"
_STARS: dict[inspect._ParameterKind, str] = {
    inspect.Parameter.VAR_POSITIONAL: "*", inspect.Parameter.VAR_KEYWORD: "**",
}  # fmt: skip


def _stub_code(self: GraderObject, kind: str | None) -> types.CodeType:
    """A code object with the test function's name, parameters and kind, and an empty body.

    What inspection reads of ``__code__`` (``co_flags``, ``co_argcount``, ``co_varnames``, the name):
    never the test's own code, which stays on the grader's side.
    """
    sig = _signature(self)
    name = self._pg_agent.callback("getattr", self, "__name__")
    kinds = inspect.Parameter
    values = list(sig.parameters.values())
    params: list[str] = []
    starred = False
    for i, p in enumerate(values):
        if p.kind is kinds.KEYWORD_ONLY and not starred:
            params.append("*")
        starred = starred or p.kind in (kinds.KEYWORD_ONLY, kinds.VAR_POSITIONAL)
        params.append(_STARS.get(p.kind, "") + p.name)
        if p.kind is kinds.POSITIONAL_ONLY and (i + 1 == len(values) or values[i + 1].kind is not p.kind):
            params.append("/")
    return _placed(self, _empty_code(kind, name, params))


def _empty_code(kind: str | None, name: object, params: list[str]) -> types.CodeType:
    """The code object of ``def name(params)`` of that kind with an empty body, in our stub file."""
    keyword, body = _CODE_KINDS.get(kind or "", ("def", "    pass\n"))
    try:
        made = compile(f"{keyword} {name}({', '.join(params)}):\n{body}", _STUB_FILE, "exec")
    except (SyntaxError, TypeError, ValueError):  # a name that is a keyword, not an identifier
        made = compile(f"{keyword} function(*args, **kwargs):\n{body}", _STUB_FILE, "exec")
    return next(c for c in made.co_consts if isinstance(c, types.CodeType))


def _placed(self: GraderObject, code: types.CodeType) -> types.CodeType:
    """``code`` with the file (by alias) and first line the grader's function says of itself, when it
    is the suite's: pluggy warns at a hook implementation's line and names a wrapper that yielded
    twice by its file and line. Anything else keeps our stub file."""
    where = self._pg_agent.callback("where", self)
    if not (isinstance(where, list) and len(where) == 2):
        return code
    filename, line = where
    if type(filename) is not str or type(line) is not int or not 0 < line < 2**31:
        return code
    return code.replace(co_filename=filename, co_firstlineno=line)


_FRAMED_KINDS = {"gi": "genfunc", "cr": "corofunc", "ag": "asyncgenfunc"}


def _running_code(self: GraderObject, kind: str) -> types.CodeType:
    """A running generator's ``gi_code`` (pluggy names a wrapper that yielded twice by it): its
    function's name, and nothing of the test's code."""
    return _placed(self, _empty_code(kind, self._pg_agent.callback("getattr", self, "__name__"), []))


_FRAMED_TYPES = {prefix: kind for kind, prefix in FRAMED.items()}  # "gi" -> GeneratorType


def _framed_class(self: GraderObject, kind: str) -> type:
    return _FRAMED_TYPES[kind]


def _bind(self: GraderObject, instance: object, owner: object = None) -> Any:
    return self if instance is None else types.MethodType(self, instance)  # type: ignore[arg-type]


def _next_lent(self: GraderObject) -> Any:
    # A test's iterator over a built-in sequence: from the items the grader lent ahead (readahead.py).
    return self._pg_agent.readahead.next(self, object.__getattribute__(self, "_pg_id"))


def _exit(self: GraderObject, kind: Any, value: Any, traceback: Any) -> Any:
    # The exception's class and the exception as a handle; never our traceback.
    return self._op("exit", kind, value, None)


def _op(name: str) -> Callable[..., Any]:
    result = OPERATORS[name].result

    def apply(self: GraderObject, *args: Any) -> Any:
        answer = self._op(name, *args)
        return answer if result is None else result(answer)

    apply.__name__ = f"__{name}__"
    return apply


# What a stand-in offers is what the grader serves on a test's object, where its type offers it.
_SPECIAL: dict[str, dict[str, Callable[..., Any]]] = {
    "call": {
        "__call__": lambda self, /, *a, **k: self._pg_agent.callback("call", self, a, k),
        "__signature__": property(_signature),  # type: ignore[dict-item]
    },
    "exit": {"__exit__": _exit},
    "eq": {"__eq__": _op("eq"), "__ne__": lambda s, o: not s._op("eq", o)},
    "method": {"__get__": _bind},
}
_METHODS: dict[str, dict[str, Callable[..., Any]]] = {
    **{cap: {dunder: _op(cap)} for cap, dunder in CAPABILITIES.items() if cap in GRADER_OPERATORS},
    **_SPECIAL,
}


class StandinType(abc.ABCMeta):
    """The type of a stand-in class: ``type(x).__module__`` is the grader object's class's module.

    An ``ABCMeta``, as ``GraderClass`` is: a class the change makes over a test object's class and an
    ABC (``type("t", (type(obj), Sized), {})``) has no metaclass conflict there either.

    A stand-in's own ``__module__`` and ``__doc__`` are the grader object's (a test function's module
    is its own, not ``function``'s): properties in the class's namespace. Read on the class itself,
    ``type``'s getter would hand out those property objects; these say what the class says.
    """

    @property
    def __module__(cls) -> str:  # type: ignore[override]
        return str(type.__getattribute__(cls, "_pg_module"))

    @property
    def __doc__(cls) -> None:  # type: ignore[override]
        return None


_CLASSES: dict[tuple[frozenset[str], tuple[str, ...]], type[GraderObject]] = {}
# Stand-in classes kept at most: past it, objects of classes not met yet share a plainly named one.
MAX_CLASSES = 4096
_PLAIN_NAMES = ("GraderObject", "GraderObject", "patchgate")


def _type_names(names: object) -> tuple[str, ...]:
    """The grader's name, qualified name and module of the object's class; ours when it sent none."""
    ok = isinstance(names, list) and len(names) == 3 and all(type(n) is str and n for n in names)
    if not ok or not str(names[0]).isidentifier():  # type: ignore[index]
        return _PLAIN_NAMES
    return tuple(names)  # type: ignore[arg-type]


def standin_class(caps: object, names: object = None) -> type[GraderObject]:
    """The stand-in class for objects whose type offers ``caps`` (names from ``protocol.caps``), named
    as the grader's class ``names`` is (``[name, qualname, module]``)."""
    listed = caps if isinstance(caps, list) else []
    wanted = frozenset(c for c in listed if isinstance(c, str))
    named = _type_names(names)
    if (wanted, named) not in _CLASSES and len(_CLASSES) >= MAX_CLASSES:
        named = _PLAIN_NAMES
    found = _CLASSES.get((wanted, named))
    if found is None:
        namespace: dict[str, Any] = {"__slots__": (), "__doc__": _attribute("__doc__"),
                                     "__module__": _attribute("__module__"), "__qualname__": named[1],
                                     "_pg_module": named[2], **_offered(wanted)}  # fmt: skip
        made: type[GraderObject] = StandinType(named[0], (GraderObject,), namespace)  # type: ignore[assignment]
        found = _CLASSES[(wanted, named)] = made
        register_abcs(found, wanted)
    return found


def _offered(wanted: frozenset[str]) -> dict[str, Any]:
    """The special methods of a stand-in class whose objects' type offers ``wanted``."""
    namespace: dict[str, Any] = {}
    for cap in sorted(wanted):
        namespace.update(_METHODS.get(cap, {}))
        if cap.startswith("-"):
            namespace.update(dict.fromkeys(_METHODS.get(cap[1:], {}), None))
    if "method" in wanted:  # a plain function of the test's
        kind = next((k for k in sorted(wanted) if k in _CODE_KINDS), None)
        namespace["__class__"] = property(_function_class)
        namespace["__code__"] = property(functools.partial(_stub_code, kind=kind))
        namespace["__defaults__"] = property(_defaults)
        namespace["__kwdefaults__"] = property(_kwdefaults)
    for prefix, kind in _FRAMED_KINDS.items():
        if f"code:{prefix}" in wanted:
            namespace[f"{prefix}_code"] = property(functools.partial(_running_code, kind=kind))
            # A test's generator says it is one, as a test's function does: inspect.isgenerator asks
            # ``__class__`` (xmltodict.parse iterates a generator of chunks it is given).
            namespace["__class__"] = property(functools.partial(_framed_class, kind=prefix))
    if "selfiter" in wanted and "iter" in wanted:
        namespace["__iter__"] = lambda self: self  # a built-in iterator is its own: no request
    if "seqiter" in wanted and "next" in wanted:
        namespace["__next__"] = _next_lent
    if "eq" in wanted and "hash" not in wanted:
        namespace["__hash__"] = GraderObject.__hash__  # defining __eq__ would drop it
    if "unhashable" in wanted:
        namespace["__hash__"] = None
    return namespace


_ABC_STATE = frozenset({"__abstractmethods__", "_abc_impl"})


class GraderClass(abc.ABCMeta):
    """A test's class, here a class of its own (``kind: "tclass"``): what static introspection reads.

    Its metaclass is an ``ABCMeta``: a class statement of the change's over a test's class and an ABC
    (decorator's dispatch over ``type("t", (cls, Sized), {})``, six's ``with_metaclass(ABCMeta, ...)``)
    would otherwise be a metaclass conflict, where one process has none (a plain class's metaclass is
    ``type``). The ABC machinery's own state (``_abc_impl``) is read here, never asked of the grader.

    A library that looks a class up without running it (pluggy's ``inspect.getattr_static`` over
    ``dir(cls)``, ``vars(cls)``, ``isinstance``/``issubclass`` against it, ``type(x) is cls``) needs
    a real class, with the test class's public functions, static and class methods in its namespace
    (as handles of the test's functions) and its suite bases as bases. The test's objects of that
    class are its instances. Everything else is still asked of the grader: a public attribute read on
    the class or on one of its objects, a call of the class (a new object, made there), ``repr`` and
    ``dir``. The namespace is as the class was when it first crossed.
    """

    def __getattribute__(cls, name: str) -> Any:
        agent = _agent_of(cls)
        if agent is not None:
            if not name.startswith(("__", "_pg_")) and name not in _ABC_STATE:
                return agent.callback("getattr", cls, name)
            view = _VIEWS.get(name)
            if view is not None:
                return view(cls)
        return type.__getattribute__(cls, name)

    def __setattr__(cls, name: str, value: Any) -> None:
        if name in _ABC_STATE:  # the ABC machinery's own bookkeeping of this class: ours, never the test's
            type.__setattr__(cls, name, value)
            return
        agent = _agent_of(cls)
        if agent is not None:
            agent.callback("setattr", cls, name, value)  # the grader's rules, the grader's class
        if agent is None or not name.startswith("_"):
            type.__setattr__(cls, name, value)

    def __delattr__(cls, name: str) -> None:
        agent = _agent_of(cls)
        if agent is not None:
            agent.callback("delattr", cls, name)
        if agent is None or (name in type.__getattribute__(cls, "__dict__") and not name.startswith("_")):
            type.__delattr__(cls, name)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        agent = _agent_of(cls)
        if agent is None:
            raise TypeError("patchgate: a test's class cannot be subclassed by the code under test")
        return agent.callback("call", cls, args, kwargs)

    @property
    def __signature__(cls) -> inspect.Signature | None:
        # The class's own, as the grader reads it (its __init__'s): never our __call__'s.
        agent = _agent_of(cls)
        return signatures.rebuild(agent.callback("signature", cls)) if agent is not None else None

    def __repr__(cls) -> str:
        agent = _agent_of(cls)
        return str(agent.callback("op", "repr", cls)) if agent is not None else type.__repr__(cls)

    def __dir__(cls) -> list[str]:
        agent = _agent_of(cls)
        if agent is None:
            return list(type.__dir__(cls))
        return [str(n) for n in agent.callback("op", "dir", cls)]


def _agent_of(cls: type) -> Caller | None:
    """The agent a test's class here asks of the grader through; None for a class the change made."""
    own = type.__getattribute__(cls, "__dict__")
    return own["_pg_cagent"] if "_pg_cid" in own else None


class TestObject(GraderObject):
    """An object of a test's class mirrored here: a public attribute is the grader's to say, even where
    the class here has one of that name (the object's own can shadow it there)."""

    __slots__ = ()
    # A test class without an ``__init__`` of its own has object's, as there (pluggy's ``varnames``);
    # ours is called by name where a stand-in is made (Standins.get).
    __init__ = object.__init__

    def __getattribute__(self, name: str) -> Any:
        if name == "__dict__":  # the grader's view, live; our own is what static lookup reads
            return object.__getattribute__(self, "_pg_agent").callback("getattr", self, name)
        if name.startswith("__") or name.startswith("_pg_") or name == "_op":
            return object.__getattribute__(self, name)
        return object.__getattribute__(self, "_pg_agent").callback("getattr", self, name)


# What a test's class here says of its own structure, read as the test's class would answer it: a
# library that rebuilds a class (six's ``add_metaclass``: ``metaclass(cls.__name__, cls.__bases__,
# cls.__dict__.copy())``) hands the grader the test's bases and namespace, never our machinery.
_OURS = (TestObject, GraderObject)


def _namespace_view(cls: type) -> types.MappingProxyType[str, Any]:
    """The class's ``__dict__`` as the test's class holds it, read from the grader now (what it shows:
    public names, module, docstring, public slots), its functions as they stand here."""
    own = type.__getattribute__(cls, "__dict__")
    found = dict(own["_pg_cagent"].callback("getattr", cls, "__dict__").copy())
    found.update((k, own[k]) for k in own["_pg_own"] if k in own)
    return types.MappingProxyType(found)


def _bases_view(cls: type) -> tuple[type, ...]:
    bases: tuple[type, ...] = type.__getattribute__(cls, "__bases__")
    return tuple(b for b in bases if b not in _OURS) or (object,)


def _mro_view(cls: type) -> tuple[type, ...]:
    return tuple(k for k in type.__getattribute__(cls, "__mro__") if k not in _OURS)


_VIEWS: dict[str, Callable[[type], Any]] = {
    "__dict__": _namespace_view, "__bases__": _bases_view, "__mro__": _mro_view,
}  # fmt: skip


def test_class_id(value: object) -> int | None:
    """The grader's number of a test's class mirrored here, else None."""
    if not isinstance(value, GraderClass):
        return None
    found = type.__getattribute__(value, "__dict__").get("_pg_cid")
    return found if type(found) is int else None


class _HeldStatic(staticmethod):  # type: ignore[type-arg]
    """A test class's static method here: an attribute it lacks is the grader's wrapper's."""

    def __getattr__(self, name: str) -> Any:
        held = self.__dict__.get("_pg_held")
        if held is None or name.startswith("__"):
            raise AttributeError(name)
        return getattr(held, name)


class _HeldClassmethod(classmethod):  # type: ignore[type-arg]
    """A test class's class method here: an attribute it lacks is the grader's wrapper's."""

    __getattr__ = _HeldStatic.__getattr__


_WRAPPERS: dict[str, Callable[[Any], Any]] = {"staticmethod": _HeldStatic, "classmethod": _HeldClassmethod}
# Test classes mirrored at most per connection: past it, a class crosses as a plain stand-in.
MAX_TEST_CLASSES = 1024


def _defaults(self: GraderObject) -> tuple[Any, ...] | None:
    # As many as the function has, each sealed (never the test's value): pluggy counts them.
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    found = [p.default for p in _signature(self).parameters.values()
             if p.kind in positional and p.default is not p.empty]  # fmt: skip
    return tuple(found) or None


def _kwdefaults(self: GraderObject) -> dict[str, Any] | None:
    found = {p.name: p.default for p in _signature(self).parameters.values()
             if p.kind is p.KEYWORD_ONLY and p.default is not p.empty}  # fmt: skip
    return found or None


class Standins:
    """One stand-in per grader object while it is alive."""

    def __init__(self, agent: Caller) -> None:
        self.agent = agent
        self._alive: weakref.WeakValueDictionary[int, GraderObject] = weakref.WeakValueDictionary()
        self._caps: dict[int, tuple[object, object, object]] = {}
        # A test's classes mirrored here, kept for the connection: their objects are their instances.
        self._classes: dict[int, type] = {}
        self._filled: weakref.WeakSet[object] = weakref.WeakSet()  # objects whose own functions are set
        _CURRENT[:] = [self]

    def get(self, number: int, caps: object, names: object = None, of: object = None) -> GraderObject:
        """The stand-in for the grader's object ``number``; an object of a mirrored test class ``of``
        is an instance of that class."""
        found = self._alive.get(number)
        if found is None:
            if test_class_id(of) is not None:
                found = GraderObject.__new__(of)  # type: ignore[arg-type]
                GraderObject.__init__(found, self.agent, number)
            else:
                found = standin_class(caps, names)(self.agent, number)
            self._alive[number] = found
            self._caps[number] = (caps, names, of)
        return found

    def fresh(self, found: object) -> bool:
        """Whether ``found``, an object of a test's class here, has not had its own functions set yet
        (first come, first filled: a method bound to it names it again while they are decoded)."""
        if test_class_id(type(found)) is None or found in self._filled:
            return False
        self._filled.add(found)
        return True

    def fill(self, found: object, own: object) -> None:
        """Set the functions a test's object holds as its own (pluggy's ``getattr_static`` reads them
        off the object's ``__dict__``); what ``getattr`` of those names already gives."""
        namespace = object.__getattribute__(found, "__dict__")
        for entry in own if isinstance(own, list) else []:
            named = isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str)
            if named and entry[0].isidentifier() and not entry[0].startswith("_"):
                namespace[entry[0]] = entry[1]

    def test_class(self, number: int, tag: dict[str, Any]) -> object:
        """The class here for the test's class ``number``: made the first time from the grader's
        description of it, the same class after; a plain stand-in past ``MAX_TEST_CLASSES``."""
        found = self._classes.get(number)
        if found is not None:
            return found
        plain = self.get(number, tag.get("caps"), tag.get("type"))
        if len(self._classes) >= MAX_TEST_CLASSES:
            return plain
        described = self.agent.callback("describe", plain)
        found = self._classes.get(number)  # its bases' descriptions can name it (a cycle): first one wins
        if found is None:
            found = self._classes[number] = _mirror(self.agent, number, tag, described)
        return found

    def restore(self, number: int) -> GraderObject:
        if number not in self._caps:
            raise pickle.UnpicklingError(f"patchgate: no test object number {number}")
        return self.get(number, *self._caps[number])

    def restore_class(self, number: int) -> type:
        if number not in self._classes:
            raise pickle.UnpicklingError(f"patchgate: no test class number {number}")
        return self._classes[number]


def _mirror(agent: Caller, number: int, tag: dict[str, Any], described: object) -> type:
    """Make the class standing for a test's class from the grader's description (handed.py)."""
    if not isinstance(described, dict):
        raise TypeError("patchgate: a test class's description in a form we do not read")
    bases = tuple(b for b in described.get("bases", ()) if test_class_id(b) is not None) or (TestObject,)
    named = _type_names(tag.get("names"))
    doc = described.get("doc")
    offered = frozenset(c for c in described.get("caps", ()) if isinstance(c, str))
    # No __slots__: its objects have a __dict__ of their own, what static lookup reads (fill()).
    namespace: dict[str, Any] = {"__module__": named[2], "__qualname__": named[1],
                                 "__doc__": doc if isinstance(doc, str) else None, **_offered(offered),
                                 "_pg_cid": number, "_pg_cagent": agent}  # fmt: skip
    later: dict[str, Any] = {}
    described_names: list[str] = []  # the test's own functions, as its namespace shows them here
    for entry in described.get("namespace", ()):
        if not (isinstance(entry, list) and len(entry) == 4 and isinstance(entry[0], str)):
            continue
        name, kind, value, held = entry
        if (name.startswith("_") and name not in ("__call__", "__init__")) or not name.isidentifier():
            continue  # the grader sends public names, __call__ and __init__ only; never one of ours
        wrap = _WRAPPERS.get(kind) if isinstance(kind, str) else None
        if kind == "value":
            later[name] = value
            continue
        namespace[name] = wrap(value) if wrap is not None else value
        described_names.append(name)
        if wrap is not None and isinstance(held, GraderObject):
            namespace[name].__dict__["_pg_held"] = held
    own = described.get("own")
    special = (
        [n for n in own if isinstance(n, str) and n.startswith("__") and n in namespace]
        if isinstance(own, list)
        else []
    )
    namespace["_pg_own"] = (*described_names, *special)
    made = GraderClass(named[0], bases, namespace)
    for name, value in later.items():  # the change's own objects: set after, never __set_name__ again
        type.__setattr__(made, name, value)
    register_abcs(made, offered)
    return made


_CURRENT: list[Standins] = []


def _restore(number: int) -> GraderObject:
    if not _CURRENT:
        raise pickle.UnpicklingError("patchgate: no grader to name this test object")
    return _CURRENT[0].restore(number)


def _restore_class(number: int) -> type:
    if not _CURRENT:
        raise pickle.UnpicklingError("patchgate: no grader to name this test class")
    return _CURRENT[0].restore_class(number)


def _reduce_class(cls: GraderClass) -> Any:
    # A class pickles by its name; a test's class here has none to import: it names its number, as a
    # test's object does (GraderObject.__reduce_ex__).
    number = test_class_id(cls)
    return (_restore_class, (number,)) if number is not None else type.__getattribute__(cls, "__qualname__")


copyreg.pickle(GraderClass, _reduce_class)
