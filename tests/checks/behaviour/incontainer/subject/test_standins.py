"""A test's own classes are classes in the subject too (standins.GraderClass, handed.describe).

Each scenario runs on the module imported here (one process, the reference)
and through the bridge against a real subject process; what the test sees
must be the same. The shapes are pluggy's: hook markers found by static
lookup over ``dir()``, a method bound to its object, a wrapper generator's
return value. The hostile ones show what the description never carries.
"""

from __future__ import annotations

import types
from typing import Any

import pytest

from checks.behaviour.incontainer.channel import codec
from checks.behaviour.incontainer.channel.protocol import BOUND
from tests.checks.behaviour.incontainer.grader.test_iteration import bridge_of
from tests.checks.behaviour.incontainer.grader.test_kept import bare
from tests.checks.behaviour.incontainer.test_bridge_shapes import Load, load

pytestmark = pytest.mark.slow
__all__ = ["load"]

LIB = """
import inspect

def mark(opts):
    def decorate(fn):
        setattr(fn, "pg_mark", opts)
        return fn
    return decorate

def hooks_of(namespace):
    # pluggy's PluginManager.parse_hookimpl_opts: inspect.getattr_static, never getattr.
    found = {}
    for name in dir(namespace):
        static = inspect.getattr_static(namespace, name, None)
        if isinstance(static, (staticmethod, classmethod)):
            holder, function = static, static.__func__
        elif inspect.isfunction(static):
            holder, function = static, static
        elif inspect.ismethod(static):  # a bound method the object holds as its own
            holder, function = static, static.__func__
        else:
            continue
        opts = getattr(holder, "pg_mark", None) or getattr(function, "pg_mark", None)
        if opts is not None:
            found[name] = opts
    return found

def argnames(function):
    # pluggy's varnames: what the code object and the defaults say, a bound method's self left out.
    bound = inspect.ismethod(function)
    function = function.__func__ if bound else function
    code = function.__code__
    names = code.co_varnames[:code.co_argcount]
    return names[1:] if bound else names, len(function.__defaults__ or ())

def shape(cls, obj):
    return [inspect.isclass(cls), isinstance(obj, cls), type(obj) is cls, cls.__name__,
            sorted(n for n in vars(cls) if not n.startswith("_"))]

def subclass(child, parent):
    return issubclass(child, parent), inspect.isclass(child)

def same(value):
    return value

def owner(method):
    return method.__self__

def text(value):
    return repr(value)

class described:
    # A library's descriptor on a test's method (cachetools.cachedmethod): found again in owner.__dict__.
    def __init__(self, func):
        self.func = func
    def __get__(self, obj, owner=None):
        return self if obj is None else self.func.__get__(obj, owner)

def in_namespace(cls, name):
    return vars(cls)[name] is getattr(cls, name)

NAMED = []

class named(described):
    def __set_name__(self, owner, name):
        NAMED.append(name)  # once per name, when the test's class is made (cachetools checks it)

def names_set():
    return list(NAMED)

def make(cls, *args):
    return cls(*args)

def method(obj, name):
    return getattr(obj, name)

def call(obj, name, *args):
    return getattr(obj, name)(*args)

def bind(obj, name):
    return inspect.getattr_static(type(obj), name).__get__(obj, type(obj))

def run_wrapper(function):
    # pluggy's wrappers: a generator sent the result, its return value the outcome.
    gen = function()
    next(gen)
    try:
        gen.send(20)
    except StopIteration as stop:
        return stop.value, gen.gi_code.co_name

def render(mapping):
    return {key: str(value) for key, value in mapping.items()}

def parameters(cls):
    return list(inspect.signature(cls).parameters)

def teardown(wrapper, impl):
    # pluggy's _multicall: an implementation's exception thrown into a wrapper generator; the
    # RuntimeError PEP 479 makes of a StopIteration names it as its cause.
    gen = wrapper()
    next(gen)
    try:
        impl()
    except BaseException as exc:
        try:
            gen.throw(exc)
        except RuntimeError as err:
            return ["passed through", err.__cause__ is exc, type(exc).__name__]
    return ["not raised"]

def safe_str(obj):
    # pluggy's tracer: a failing __str__ rendered, its exception by repr or as unpresentable.
    try:
        return str(obj)
    except Exception as exc:
        try:
            info = repr(exc)
        except Exception:
            info = "unpresentable " + type(exc).__name__
        return f"<[{info} raised in str()] {type(obj).__name__}>"

def path_of(obj):
    import os
    return [isinstance(obj, os.PathLike), os.fspath(obj)]

def init_names(cls):
    return argnames(cls.__init__)

def init_signature(cls):
    return str(inspect.signature(cls.__init__))

def reinit(obj, *args):
    type(obj).__init__(obj, *args)

def pickled(*values):
    import copy, pickle
    again = pickle.loads(pickle.dumps(values))
    return [a is v for a, v in zip(again, values)] + [copy.deepcopy(values[0]) is values[0]]
"""


def mark_test(opts: Any) -> Any:
    def decorate(fn: Any) -> Any:
        fn.pg_mark = opts
        return fn

    return decorate


class Base:
    def shared(self) -> str:
        return "base"


class Hooks(Base):
    """Hooks of a plugin."""

    _secret = 4242

    def __init__(self, start: int = 0) -> None:
        self.start = start
        self._hidden = 4242

    @mark_test({"first": True})
    def hello(self, arg: int, extra: int = 1) -> int:
        return self.start + arg + extra

    @mark_test({"static": True})
    @staticmethod
    def static(arg: int) -> int:
        return arg * 2

    @classmethod
    def named(cls) -> str:
        return cls.__name__

    def __str__(self) -> str:
        return f"hooks from {self.start}"


def wrapper() -> Any:
    outcome = yield
    return outcome + 1


def scenario(lib: Any) -> list[Any]:
    hooks = Hooks(10)
    found: list[Any] = [lib.hooks_of(Hooks), lib.hooks_of(hooks)]
    found += [lib.shape(Hooks, hooks), lib.subclass(Hooks, Base)]
    found += [lib.argnames(Hooks.hello), lib.argnames(hooks.hello)]
    found += [lib.same(Hooks) is Hooks, lib.same(hooks) is hooks]
    made = lib.make(Hooks, 5)
    found += [type(made) is Hooks, made.start, lib.call(made, "hello", 1), lib.call(Hooks, "named")]
    found += [lib.call(Hooks, "static", 4), lib.bind(hooks, "hello")(1)]
    found += [lib.parameters(Hooks), lib.pickled(Hooks, Base)]  # a class pickles as itself
    fresh = Hooks(1)  # never handed: its method is bound there to it sealed, passed back as itself
    found += [
        lib.owner(fresh.hello) is fresh,
        lib.argnames(fresh.hello),
        lib.call(fresh.hello, "__call__", 1),
    ]
    found += [lib.text(fresh.hello) == repr(fresh.hello)]  # its object sealed, the method's repr shows it

    class Decorated:
        @lib.described
        def run(self) -> int:
            return 7

    found += [lib.in_namespace(Decorated, "run"), Decorated().run()]

    class Named:
        @lib.named
        def first(self) -> int:
            return 1

        second = first

    found += [lib.in_namespace(Named, "second"), lib.names_set()]
    hooks.hello = lambda arg: "its own"
    found += [lib.call(hooks, "hello", 1)]  # the object's own attribute, as getattr finds it
    found += [lib.run_wrapper(wrapper), lib.render({"h": Hooks(3)})]
    return found


def test_a_test_class_is_a_class_there_found_by_static_lookup_as_here(load: Load) -> None:
    expected = scenario(bare(LIB))
    lib = load(LIB)
    bridge_of(lib).handed.aliases.prefix = __file__.rsplit("/", 1)[0] + "/"  # this file is the suite
    found = scenario(lib)
    assert found == expected
    assert found[:2] == [{"hello": {"first": True}, "static": {"static": True}}] * 2
    assert found[2] == [True, True, True, "Hooks", ["hello", "named", "static"]]
    assert found[4:6] == [(("self", "arg", "extra"), 1), (("arg", "extra"), 1)]
    assert found[-2:] == [(21, "wrapper"), {"h": "hooks from 3"}]
    assert found[14:19] == [["start"], [True, True, True], True, (("arg", "extra"), 1), 3]
    assert found[19:24] == [True, True, 7, True, ["first", "second"]]


def initialiser(lib: Any) -> Any:
    # pluggy's varnames(cls): a class's parameters read off cls.__init__ (running it on a test's object
    # is refused: test_bridge.py's test_a_test_class_s_init_is_described_never_run_by_the_change).
    return [lib.init_names(Hooks), lib.parameters(Hooks), lib.init_signature(Base)]


def test_a_test_class_s_init_is_its_own_there(load: Load) -> None:
    expected = initialiser(bare(LIB))
    lib = load(LIB)
    bridge_of(lib).handed.aliases.prefix = __file__.rsplit("/", 1)[0] + "/"
    inherited = "(self, /, *args, **kwargs)"  # object's: a class without an __init__ of its own
    assert initialiser(lib) == expected == [(("self", "start"), 1), ["start"], inherited]


def stopping(lib: Any) -> Any:
    out: list[str] = []

    def wrap() -> Any:
        out.append("wrap")
        try:
            yield
        finally:
            out.append("wrap done")

    def stop() -> None:
        out.append("stop")
        raise StopIteration

    return [lib.teardown(wrap, stop), out]


def test_a_test_s_exception_thrown_back_into_a_test_s_generator_is_the_cause_there(load: Load) -> None:
    expected = stopping(bare(LIB))
    lib = load(LIB)
    assert stopping(lib) == expected == [
        ["passed through", True, "StopIteration"], ["wrap", "stop", "wrap done"],
    ]  # fmt: skip


class Instance:
    # pluggy's test_register_instance_attribute_*: functions stored on the object, not its class.
    def __init__(self, other: Any = None) -> None:
        @mark_test({"own": True})
        def hello(arg: int) -> list[int]:
            return [arg]

        self.hello = hello
        if other is not None:
            self.static = other.bound

    @mark_test({"bound": True})
    def bound(self, arg: int) -> Any:
        return [self is not None, arg]


def own_functions(lib: Any) -> Any:
    plugin, other = Instance(), Instance()
    holder = Instance(other)
    return [
        lib.hooks_of(plugin), lib.call(plugin, "hello", 1), lib.hooks_of(holder),
        lib.call(holder, "static", 2), lib.hooks_of(holder),
    ]  # fmt: skip


def test_functions_a_test_s_object_holds_are_found_there_by_static_lookup(load: Load) -> None:
    expected = own_functions(bare(LIB))
    lib = load(LIB)
    bridge_of(lib).handed.aliases.prefix = __file__.rsplit("/", 1)[0] + "/"
    assert own_functions(lib) == expected
    assert expected[0] == {"bound": {"bound": True}, "hello": {"own": True}}
    assert expected[2] == {"bound": {"bound": True}, "hello": {"own": True}, "static": {"bound": True}}


class BadError(Exception):
    def __repr__(self) -> str:
        raise RuntimeError("exception repr is broken")


class Told(Exception):
    def __str__(self) -> str:
        return "told by the test"


class Broken:
    def __init__(self, error: type[Exception]) -> None:
        self.error = error

    def __str__(self) -> str:
        raise self.error


def unpresentable(lib: Any) -> Any:
    return [lib.safe_str(Broken(BadError)), lib.safe_str(Broken(Told)), lib.safe_str(Broken(ValueError))]


def test_a_test_s_exception_says_its_own_text_there_raising_as_it_does(load: Load) -> None:
    expected = unpresentable(bare(LIB))
    lib = load(LIB)
    assert (
        unpresentable(lib)
        == expected
        == [
            "<[unpresentable BadError raised in str()] Broken>",
            "<[Told() raised in str()] Broken>",
            "<[ValueError() raised in str()] Broken>",
        ]
    )


class Where:
    def __fspath__(self) -> str:
        return "/somewhere/test"


def test_a_test_s_path_like_object_is_one_there(load: Load) -> None:
    expected = bare(LIB).path_of(Where())
    assert load(LIB).path_of(Where()) == expected == [True, "/somewhere/test"]


PROBE = """
def namespace(cls):
    return {name: repr(value) for name, value in vars(cls).items()}

def describe(obj):
    return object.__getattribute__(obj, "_pg_agent").callback("describe", obj)
"""


class Described:
    _private = 4242

    def __init__(self) -> None:
        self.value = 4242

    def __eq__(self, other: object) -> bool:
        return other == 4242

    __hash__ = object.__hash__

    def public(self) -> int:
        return 4242


class ADict(dict):
    pass


def test_the_description_carries_public_functions_only_and_is_refused_for_anything_else(load: Load) -> None:
    lib = load(LIB + PROBE)
    bridge_of(lib).handed.aliases.prefix = __file__.rsplit("/", 1)[0] + "/"
    namespace = lib.namespace(Described)
    assert "public" in namespace and "_private" not in namespace and "__init__" in namespace
    assert "__eq__" in namespace  # what its objects offer, as a request: never the test's function
    assert not any("4242" in text for text in namespace.values())
    # The change asking on its own: only a test's plain class, never its object or another class.
    for handed in (Described(), ADict, pytest.MonkeyPatch, lambda: 4242):
        with pytest.raises(TypeError, match="only a test's own plain class"):
            lib.describe(handed)


def test_a_method_bound_there_is_bound_here_only_to_a_suite_function(load: Load) -> None:
    lib = load(LIB)
    bridge = bridge_of(lib)
    bridge.handed.aliases.prefix = __file__.rsplit("/", 1)[0] + "/"
    hooks = Hooks(1)
    back = lib.bind(hooks, "hello")
    assert type(back) is types.MethodType and back.__self__ is hooks and back(1) == 3
    # A bound tag naming a function not of the suite (one the grader handed for another reason).
    number = bridge.handed.keep(types.SimpleNamespace.__init__)
    forged = {codec.TYPE: BOUND, "func": {codec.TYPE: "obj", "side": "g", "id": number}, "self": 1}
    with pytest.raises(ValueError, match="only a test's function"):
        bridge.decode(forged)


class Report:
    def __str__(self) -> str:
        return "first\rsecond"


def test_a_class_first_met_inside_a_test_s_container_is_described_midway(load: Load) -> None:
    # pluggy's tracer test: the dict is kept (channel/kept.py); its item's class is described while
    # the dict is being made, and that request must not read the half-made dict.
    lib = load(LIB)
    bridge_of(lib).handed.aliases.prefix = __file__.rsplit("/", 1)[0] + "/"
    assert lib.render({"r": Report()}) == {"r": "first\rsecond"}
