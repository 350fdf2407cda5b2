"""Red-team of the test-class mirrors (standins.GraderClass, handed.describe, BOUND, StopIteration value).

Each test asserts the safe behaviour; each failed on the first version of the change.
"""

from __future__ import annotations

import unittest
from typing import Any

import pytest

from checks.behaviour.incontainer.channel import codec
from checks.behaviour.incontainer.channel.protocol import BOUND
from tests.checks.behaviour.incontainer.grader.test_iteration import bridge_of
from tests.checks.behaviour.incontainer.test_bridge_shapes import Load, load

pytestmark = pytest.mark.slow
__all__ = ["load"]

SECRET = 4242
PUBLIC = 1717

LIB = r"""
import inspect, types

def agent_of(obj):
    return object.__getattribute__(obj, "_pg_agent")

def owner_attr(method, name):
    # A bound method handed by a test: what its __self__ gives.
    return getattr(method.__self__, name)

def owner_value(method):
    try:
        return dict(method.__self__)
    except Exception as exc:
        return "refused: " + type(exc).__name__

def owner_set(method, name, value):
    setattr(method.__self__, name, value)
    return value

def retype(obj, name):
    # Reach the class of a handed instance and rewrite a public method there.
    setattr(type(obj), name, lambda *args, **kwargs: True)
    return type(obj)

def retype_base(obj, name):
    # The same through the object's class's base, which reaches the change as that class's base.
    setattr(type(obj).__bases__[0], name, lambda *args, **kwargs: True)

def everything(cls):
    # All the change can see of a mirrored class.
    seen = []
    ns = dict(vars(cls))
    seen.append(repr(sorted(ns)))
    for name, value in ns.items():
        seen.append(repr(value))
        for attr in ("__defaults__", "__kwdefaults__", "__doc__", "__name__", "__qualname__",
                     "__module__", "__wrapped__", "__dict__", "__func__", "__closure__", "__code__",
                     "__globals__", "_secret", "secret", "co_consts"):
            try:
                seen.append(repr(getattr(value, attr)))
            except BaseException as exc:
                seen.append(type(exc).__name__)
        wrapped = isinstance(value, (staticmethod, classmethod))
        held = getattr(value, "__dict__", {}).get("_pg_held") if wrapped else None
        if held is not None:
            for attr in ("__func__", "__wrapped__", "__dict__", "_secret", "secret"):
                try:
                    seen.append(repr(getattr(held, attr)))
                except BaseException as exc:
                    seen.append(type(exc).__name__)
    for base in cls.__mro__:
        seen.append(repr(base))
    agent = object.__getattribute__(cls, "__dict__")["_pg_cagent"]
    seen.append(repr(agent.callback("describe", cls)))
    for name in ("_secret", "__init__", "__dict__", "__closure__"):  # a public one is getattr's anyway
        try:
            seen.append(repr(agent.callback("getattr", cls, name)))
        except BaseException as exc:
            seen.append(type(exc).__name__)
    return "\n".join(seen)

def call_dunder(cls, obj):
    # __call__ handle with a forged self.
    fn = vars(cls)["__call__"]
    return fn(obj)

def found_in(words, value):
    # Checked here, in the subject: a string sent back has its aliases restored by the grader.
    text = repr(value)
    return [w for w in words if w in text]

def repr_found(words, value):
    return found_in(words, [repr(value), repr(getattr(value, "__self__", None))])

def gen_found(words, gen):
    return found_in(words, gen_names(gen))

def cls_found(words, cls, obj):
    return found_in(words, cls_names(cls, obj))

def gen_names(gen):
    out = []
    for attr in ("__name__", "__qualname__"):
        try:
            out.append(getattr(gen, attr))
        except BaseException as exc:
            out.append(type(exc).__name__)
    try:
        code = gen.gi_code
        out += [code.co_name, code.co_qualname, code.co_filename]
    except BaseException as exc:
        out.append(type(exc).__name__)
    return out

def code_found(words, gen):
    code = gen.gi_code
    return found_in(words, [code.co_name, code.co_qualname, code.co_filename, code.co_consts, code.co_names])

def leak_sealed(fn, holder):
    # A sealed default, bound on the grader's side (BOUND decodes "self" with decode, not decode_held),
    # then read back: the grader re-encodes a suite function's bound method with its owner by value.
    sealed = inspect.signature(fn).parameters["expected"].default
    setattr(holder, "leak", types.MethodType(fn, sealed))
    owner = getattr(holder, "leak").__self__
    return type(owner).__name__ + ":" + repr(owner)

def cls_names(cls, obj):
    return [cls.__name__, cls.__qualname__, cls.__module__, type(obj).__qualname__,
            [getattr(v, "__qualname__", None) for v in vars(cls).values()],
            repr(cls), [repr(v) for v in vars(cls).values()], dir(cls)]

def run_gen(gen, value):
    next(gen)
    try:
        gen.send(value)
    except StopIteration as stop:
        return [type(stop.value).__name__, repr(stop.value)[:80], type(stop).__mro__[0].__name__]
    return "no stop"

def same(value):
    return value

def alive():
    return "alive"
"""


def prefix(lib: Any) -> None:
    bridge_of(lib).handed.aliases.prefix = __file__.rsplit("/", 1)[0] + "/"


class Checker:
    def __init__(self, expected: int) -> None:
        self.expected = expected

    def check(self, got: int) -> bool:
        return got == self.expected


def test_a_bound_method_does_not_hand_its_owner_s_public_state(load: Load) -> None:
    # The test hands only a callback (``checker.check``); the owner's ``expected`` was never handed.
    # Before the change ``__self__`` was a refused private attribute of the method handle.
    lib = load(LIB)
    prefix(lib)
    checker = Checker(SECRET)
    try:
        leaked = lib.owner_attr(checker.check, "expected")
    except Exception:
        leaked = None
    assert leaked != SECRET


def test_a_bound_method_does_not_let_the_change_rewrite_its_owner(load: Load) -> None:
    lib = load(LIB)
    prefix(lib)
    checker = Checker(SECRET)
    with pytest.raises(TypeError, match="may only use a test object it was handed"):  # sealed
        lib.owner_set(checker.check, "expected", 0)
    assert checker.expected == SECRET  # else the test's own check(0) now passes


class Expected(dict):
    def verify(self, key: str, value: object) -> bool:
        return self.get(key) == value


def test_a_bound_method_of_a_value_subclass_does_not_hand_its_contents(load: Load) -> None:
    lib = load(LIB)
    prefix(lib)
    expected = Expected(answer=SECRET)
    found = lib.owner_value(expected.verify)
    assert "4242" not in repr(found)


class Plugin:
    def verify(self, got: int) -> bool:
        return got == SECRET


class Derived(Plugin):
    pass


@pytest.mark.parametrize(
    ("reach", "made"),
    [
        # Handing one object hands its class (``"of"``); a public method set there changes every
        # object of the class, the test's own unhanded ones included.
        ("retype", Plugin),
        # The same through the object's class's base, which reaches the change as that class's base.
        ("retype_base", Derived),
    ],
)
def test_an_object_handed_does_not_hand_its_class_or_its_bases_for_writing(
    load: Load, reach: str, made: type[Plugin]
) -> None:
    lib = load(LIB)
    prefix(lib)
    original = Plugin.__dict__["verify"]
    with pytest.raises(AttributeError, match="may not set 'verify' of a test's class"):
        getattr(lib, reach)(made(), "verify")
    try:
        assert Plugin.__dict__["verify"] is original
        assert made().verify(0) is False
    finally:
        Plugin.verify = original  # type: ignore[method-assign]


def _closure_value() -> Any:
    hidden = SECRET

    def public(self: Any) -> int:
        return hidden

    return public


class Secretive:
    """A class."""

    _secret = SECRET
    # Public values are the class's to show (``getattr`` and its namespace give them): never SECRET.
    secret = PUBLIC
    listed = (PUBLIC,)

    def __init__(self, expected: int = SECRET) -> None:
        self._hidden = SECRET

    def method(self, expected: int = SECRET, *, kw: int = SECRET) -> bool:
        return expected == SECRET

    @staticmethod
    def static(expected: int = SECRET) -> int:
        return expected

    @classmethod
    def klass(cls, expected: int = SECRET) -> int:
        return expected

    def __call__(self, expected: int = SECRET) -> int:
        return expected

    closed = _closure_value()


def test_nothing_of_a_class_s_values_crosses_through_the_mirror(load: Load) -> None:
    lib = load(LIB)
    prefix(lib)
    seen = lib.everything(Secretive)
    assert "4242" not in seen, seen
    assert str(PUBLIC) in seen  # its public value, as getattr gives it, and only that


def test_the_call_handle_with_a_forged_self_is_only_what_calling_gives(load: Load) -> None:
    lib = load(LIB)
    prefix(lib)
    # Calling the class's __call__ with a self of the change's: the test's function runs, its default
    # used; its return crosses as a call of the object would. Not a leak beyond obj() itself.
    assert lib.call_dunder(Secretive, Secretive()) == SECRET  # same as lib calling the object


def test_a_running_generator_s_names_never_name_its_test(load: Load) -> None:
    lib = load(LIB)
    prefix(lib)

    def produce() -> Any:
        yield 1

    gen = produce()
    found = lib.gen_found(["test_a_running_generator_s_names_never_name_its_test", "redteam", __file__], gen)
    assert found == []


def test_qualnames_of_a_class_nested_in_a_test_never_name_a_test(load: Load) -> None:
    lib = load(LIB)
    prefix(lib)

    class TestInner:
        def test_method(self) -> int:
            return 1

        def helper(self) -> int:
            return 2

        class Nested:
            def go(self) -> int:
                return 3

    words = ["test_qualnames", "TestInner", "test_method", "redteam"]
    assert lib.cls_found(words, TestInner, TestInner()) == []
    assert lib.cls_found(words, TestInner.Nested, TestInner.Nested()) == []


def test_a_stop_iteration_value_from_a_test_generator_crosses_and_channel_lives(load: Load) -> None:
    lib = load(LIB)
    prefix(lib)
    import sys

    def frame_gen() -> Any:
        yield
        return sys._getframe()

    def module_gen() -> Any:
        yield
        return sys

    for gen in (frame_gen(), module_gen()):
        value = lib.run_gen(gen, 1)
        # A module crosses by name (the subject's own sys): never the grader's frame or module.
        assert "frame" not in value[0] and "grader" not in value[1], value
    assert lib.alive() == "alive"


def test_forged_bound_tags_fail_as_value_errors_and_the_channel_lives(load: Load) -> None:
    lib = load(LIB)
    bridge = bridge_of(lib)
    prefix(lib)
    number = bridge.handed.keep(Checker.check)
    func = {codec.TYPE: "obj", "side": "g", "id": number}
    for forged in (
        {codec.TYPE: BOUND, "func": func},  # self missing: MethodType(func, None)
        {codec.TYPE: BOUND, "func": func, "self": None},
        {codec.TYPE: BOUND},
        {codec.TYPE: BOUND, "func": "x", "self": 1},
    ):
        # MethodType(func, None) raises TypeError, not the ValueError of every other malformed tag:
        # inconsistent, but it reaches the test as an exception like any other (no channel loss).
        with pytest.raises((ValueError, TypeError)):
            bridge.decode(forged)
    assert lib.alive() == "alive"


def test_a_running_generator_s_code_stand_in_names_no_test(load: Load) -> None:
    lib = load(LIB)
    prefix(lib)

    def test_named_generator() -> Any:  # a generator whose own name is a test's
        yield SECRET

    words = ["test_named_generator", "test_a_running", "redteam", "4242", __file__]
    assert lib.code_found(words, test_named_generator()) == []


def sealed_target(expected: int = SECRET) -> bool:
    return expected == SECRET


class Holder:
    pass


def test_a_sealed_default_stays_sealed_when_bound_on_the_grader_s_side(load: Load) -> None:
    lib = load(LIB)
    prefix(lib)
    for holder in (Holder(), sealed_target):
        try:
            seen = lib.leak_sealed(sealed_target, holder)
        except Exception as exc:  # refused: safe
            seen = repr(exc)
        assert "4242" not in seen, seen


class Case(unittest.TestCase):
    def test_the_held_out_name(self) -> None:
        pass

    def helper(self) -> int:
        return 1


def test_the_repr_of_a_test_case_s_method_never_names_its_test(load: Load) -> None:
    # A TestCase's repr says which test it runs (``testMethod=test_...``): the subject learning the
    # running test's name could answer that one test alone.
    lib = load(LIB)
    prefix(lib)
    case = Case("test_the_held_out_name")
    assert lib.repr_found(["test_the_held_out_name"], case.helper) == []
    assert lib.repr_found(["test_the_held_out_name"], case) == []
