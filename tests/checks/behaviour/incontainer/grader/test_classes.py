"""The subject's classes as local classes: identity, a test's subclasses, value subclasses, fused calls.

Against a real subject process over a socketpair (tests/checks/behaviour/incontainer/test_bridge.py).
"""

from __future__ import annotations

from typing import Any

import pytest

from checks.behaviour.incontainer.grader.bridge import Bridge
from tests.checks.behaviour.incontainer.test_bridge_shapes import Load, load

pytestmark = pytest.mark.slow
__all__ = ["load"]

LIB = '''
import enum

class Lexer:
    """Split text into tokens."""
    name = "base"

    def __init__(self, text):
        self.text = text
        self.calls = []

    def tokens(self):
        return [self.transform(w) for w in self.text.split()]

    def transform(self, word):
        return word

    @classmethod
    def make(cls, text):
        return cls(text)

    @classmethod
    def parse(cls, text):
        return cls(text.strip())

class Upper(Lexer):
    def transform(self, word):
        return word.upper()

def kind(obj):
    return [type(obj).__name__, isinstance(obj, Lexer), isinstance(obj, Upper)]

class Color(enum.IntEnum):
    RED = 1
    BLUE = 2

class _TokenType(tuple):
    parent = None

    def __contains__(self, item):
        return item is not None and (self is item or item[:len(self)] == self)

    def __getattr__(self, name):
        new = _TokenType(self + (name,))
        setattr(self, name, new)
        new.parent = self
        return new

Token = _TokenType()
Keyword = Token.Keyword

def arguments(argv):
    import argparse
    parser = argparse.ArgumentParser()
    parser.add_argument("--bump")
    return parser.parse_args(argv)

def keyword_dml():
    return Token.Keyword.DML

class String(str):
    def as_string(self):
        return '"' + self + '"'

    def __eq__(self, other):
        return True  # claims to equal anything

    __hash__ = str.__hash__

def string(text):
    return String(text)

class Table(dict):
    def __eq__(self, other):
        return True  # claims to equal anything

    __hash__ = None

    def value(self):
        return dict(self)

def table(**items):
    return Table(items)

class Order:
    log = []

    def __getattribute__(self, name):
        Order.log.append(("get", name))
        return object.__getattribute__(self, name)

    def step(self):
        Order.log.append(("call", "step"))
        return len(Order.log)
'''


def requests(bridge: Bridge) -> list[str]:
    """Record the ops the grader sends from now on."""
    seen: list[str] = []
    original = bridge.request

    def spy(op: str, **fields: Any) -> Any:
        seen.append(op)
        return original(op, **fields)

    bridge.request = spy  # type: ignore[method-assign]
    return seen


def test_a_class_of_the_change_is_a_local_class_with_identity_and_isinstance(load: Load) -> None:
    lib = load(LIB)
    lexer = lib.Upper("a b")
    assert type(lexer) is lib.Upper and isinstance(lexer, lib.Lexer) and issubclass(lib.Upper, lib.Lexer)
    assert lib.Upper.__doc__ is None and lib.Lexer.__doc__ == "Split text into tokens."
    assert lexer.tokens() == ["A", "B"] and lib.Lexer.name == "base"
    assert type(lib.Lexer.make("x")) is lib.Lexer
    assert lib.kind(lexer) == ["Upper", True, True]


def test_a_method_call_is_one_request_and_keeps_the_change_s_order_of_effects(load: Load) -> None:
    lib = load(LIB)
    lexer = lib.Lexer("a b")
    bridge = type.__getattribute__(lib.Lexer, "_pgc_bridge")
    seen = requests(bridge)
    assert lexer.tokens() == ["a", "b"]
    assert seen == ["call_attr"]
    # A class with a __getattribute__ of its own is asked for the attribute, then called: in that order.
    order = lib.Order()
    order.step()
    assert [e for e in lib.Order.log if e[1] == "step"] == [("get", "step"), ("call", "step")]


def test_a_test_s_subclass_of_a_class_of_the_change_runs_its_methods_for_the_change(load: Load) -> None:
    lib = load(LIB)

    class Shout(lib.Lexer):  # type: ignore[misc, name-defined]
        name = "shout"

        def __init__(self, text: str, mark: str) -> None:
            super().__init__(text)
            self.mark = mark

        def transform(self, word: str) -> str:
            return word.upper() + self.mark

    shout = Shout("a b", "!")
    assert type(shout) is Shout and isinstance(shout, lib.Lexer)
    # The change's tokens() calls the test's transform(); the change sees the test's class as a Lexer.
    assert shout.tokens() == ["A!", "B!"]
    assert lib.kind(shout) == ["Shout", True, False]
    assert shout.text == "a b" and shout.name == "shout"

    class Plain(lib.Lexer):  # type: ignore[misc, name-defined]
        @classmethod
        def parse(cls, text: str) -> Any:
            return super().parse(text.lower())

    # The change's own class method makes an instance of the test's class, through super() too.
    assert type(Plain.make("x")) is Plain
    parsed = Plain.parse("  A B ")
    assert type(parsed) is Plain and parsed.text == "a b"


VERSIONS = """
class Version:
    def __init__(self, major, minor=0):
        self.major = major
        self.minor = minor

    @classmethod
    def parse(cls, text):
        return cls(*[int(p) for p in text.split(".")])

    def __str__(self):
        return f"{self.major}.{self.minor}"

    def __len__(self):
        return 2

    def __eq__(self, other):
        if not isinstance(other, Version):
            return NotImplemented
        return (self.major, self.minor) == (other.major, other.minor)

    __hash__ = None

def text(version):
    return str(version)
"""


def prefixed(lib: Any) -> Any:
    # semver's "Creating subclasses from Version": the test's special methods call the change's.
    class Prefixed(lib.Version):  # type: ignore[misc]
        @classmethod
        def parse(cls, version: str) -> Any:
            return super().parse(version[1:])

        def __str__(self) -> str:
            return "v" + super().__str__()

        def __len__(self) -> int:
            return lib.Version.__len__(self) + 1

        def __eq__(self, other: object) -> Any:
            return "mine" if isinstance(other, str) and other == "anything" else super().__eq__(other)

        __hash__ = None  # type: ignore[assignment]

    v = Prefixed.parse("v1.2")
    return [
        str(v), lib.text(v), len(v), v == lib.Version(1, 2), v == Prefixed.parse("v1.3"),
        v.__eq__("anything"), super(Prefixed, v).__eq__("1.2"),
    ]  # fmt: skip


def test_a_test_s_subclass_reaches_the_change_s_own_special_methods_past_its_own(load: Load) -> None:
    from tests.checks.behaviour.incontainer.grader.test_kept import both

    expected, found = both(load, prefixed, VERSIONS)
    # The one difference is the defence: a test's value is never handed to the change's __eq__.
    assert expected == ["v1.2", "v1.2", 3, True, False, "mine", NotImplemented]
    assert found == ["v1.2", "v1.2", 3, True, False, "mine", NotImplemented]


def test_value_subclasses_keep_their_attributes_identity_and_compare_by_value(load: Load) -> None:
    lib = load(LIB)
    # Token types: tuples with attributes, singletons compared by identity (sqlparse, pygments).
    dml = lib.keyword_dml()
    assert dml is lib.Token.Keyword.DML and dml.parent is lib.Keyword
    assert dml in lib.Keyword and lib.Keyword not in dml
    assert dml == ("Keyword", "DML") and isinstance(dml, tuple)
    # An int enum: its value and its member.
    assert lib.Color.RED == 1 and lib.Color(2) is lib.Color.BLUE and isinstance(lib.Color.RED, lib.Color)
    # A str subclass with methods of its own (tomlkit's String): methods are the change's...
    text = lib.string("hi")
    assert text.as_string() == '"hi"' and text.upper() == "HI" and isinstance(text, str)
    # ...comparison with a test's value is the value's own: its __eq__ that claims anything is never asked.
    assert text == "hi"
    assert text != "expected"
    assert (text == "expected") is False


def test_the_standard_library_s_attribute_bags_cross_by_value(load: Load) -> None:
    import argparse

    lib = load(LIB)
    assert lib.arguments(["--bump", "major"]) == argparse.Namespace(bump="major")


def test_a_container_subclass_compares_with_a_test_s_value_by_its_contents(load: Load) -> None:
    lib = load(LIB)
    table = lib.table(a=1)
    assert table == {"a": 1}
    assert table != {"a": 2}
    assert (table == {"b": 1}) is False  # its own __eq__ claims anything: never asked
    assert table.value() == {"a": 1}


HOSTILE = """
import sys

class Anything:
    def __eq__(self, other):
        return True
    __hash__ = object.__hash__

def anything():
    return Anything()

# The change's code owns the subject's process: it makes the class description claim __eq__ as a
# plain method, so that a local __eq__ would hand it the test's expected value.
for name, module in list(sys.modules.items()):
    if name.endswith("subject.classes"):
        original = module.describe
        def describe(cls, ref, original=original):
            found = original(cls, ref)
            found["methods"] = [*found["methods"], "__eq__", "__ne__"]
            found["overrides"] = [*found["overrides"], "__eq__"]
            return found
        module.describe = describe
"""


def test_a_class_description_the_change_forges_cannot_bring_its_eq_into_the_grader(load: Load) -> None:
    lib = load(HOSTILE)
    value = lib.anything()
    assert (value == "the expected value") is False
    assert (value == 42) is False
