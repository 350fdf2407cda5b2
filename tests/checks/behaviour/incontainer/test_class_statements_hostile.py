"""Hostile: class statements over the change's classes, and a test's callables given aliases.

A real subject over a socketpair, as in test_bridge_shapes.py, with this folder as the suite: names
of the tests here cross as aliases, and the change records what it saw in a file of its own folder.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.checks.behaviour.incontainer.test_bridge_shapes import Load, loading

pytestmark = pytest.mark.slow

SUITE = str(Path(__file__).resolve().parent)


@pytest.fixture
def load(tmp_path: Path) -> Iterator[Load]:
    with loading(tmp_path, suite_root=SUITE) as start:
        yield start


RECORD = r"""
import os, sys
SEEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seen.txt")

def record(*values):
    with open(SEEN, "a") as f:
        for v in values:
            f.write(repr(v) + "\n")

def aliases_of(cb):
    return cb.__qualname__.split(".")[0], cb.__module__, cb.__code__.co_filename
"""

ORACLE = (
    RECORD
    + r"""
def oracle(cb):
    # A test's callback that returns what it derives from its string argument (a sort key's lower()).
    record(*[cb(n) for n in aliases_of(cb)])

def write_to(stream, cb):
    # A test's stream handed to the change (print(file=...), logging, csv).
    for n in aliases_of(cb):
        stream.write(n + "\n")
    record(stream.getvalue())

def read_by_alias(parser, cb):
    # A test's object that opens a path: the change names the test's own file by its alias.
    return parser.read(aliases_of(cb)[2])
"""
)


def test_a_test_s_callable_never_turns_an_alias_into_a_real_name_for_the_change(
    load: Load, tmp_path: Path
) -> None:
    # Hostile: call arguments were restored from aliases for every callable of the test's - a callback
    # that derives a string from its argument, a StringIO the change writes to and reads back, gave
    # the change the running test's name, module and file in clear (and a parser opened its file).
    import configparser

    lib = load(ORACLE)
    lib.oracle(lambda s: s + "!")
    out = io.StringIO()
    lib.write_to(out, lambda s: s)
    assert lib.read_by_alias(configparser.ConfigParser(), lambda s: s) == []
    seen = (tmp_path / "seen.txt").read_text()
    assert "_pgq" in seen and "_pgm" in seen and "_pgf" in seen, seen
    assert "test_a_test_s_callable" not in seen and "class_statements" not in seen and SUITE not in seen


FORGING = (
    RECORD
    + r"""
def compute():
    return 41  # the bug a held-out test's own method catches

class Swapping(type):
    # The change's metaclass puts a no-op of its own in place of every function of a class body.
    def __new__(mcs, name, bases, ns):
        record(sorted(ns))
        ns = {k: (v if not callable(v) else (lambda self, *a, **k: None)) for k, v in ns.items()}
        return super().__new__(mcs, name, bases, ns)

class Preparing(Swapping):
    @classmethod
    def __prepare__(mcs, name, bases):
        return {}

class Base(metaclass=Swapping):
    pass

class Visitor(metaclass=Preparing):
    pass

def answer_every_class_statement_by_value():
    # The subject is the change's process: its answer to "subclass" is whatever it likes.
    agent = sys.modules["checks.behaviour.incontainer.subject.agent"]
    def serve(self, request):
        from checks.behaviour.incontainer.subject import classes
        return {"made": self.encode(classes.make_subclass(request, self.decode))}
    agent._SERVES["subclass"] = serve
"""
)


def test_a_class_statement_over_the_change_s_class_keeps_the_test_s_own_methods(
    load: Load, tmp_path: Path
) -> None:
    # Hostile: the class the change's metaclass made was what the test's name bound - with its no-ops
    # in place of the test's methods, so the test's assertion never ran and the test passed.
    lib = load(FORGING)

    class Checker(lib.Visitor):  # type: ignore[misc, name-defined]  # a preparing metaclass: the body runs into the change's namespace
        def check(self) -> None:
            assert lib.compute() == 42

    with pytest.raises(AssertionError):
        Checker().check()

    lib.answer_every_class_statement_by_value()
    with pytest.raises(TypeError, match="did not keep the test's 'test_compute_is_42'"):

        class TestHeldOut(lib.Base):  # type: ignore[misc, name-defined]
            def test_compute_is_42(self) -> None:
                assert lib.compute() == 42

    # And the body's names cross as aliases: a held-out test's method is never named in clear.
    seen = (tmp_path / "seen.txt").read_text()
    assert "test_compute_is_42" not in seen and "_pgn" in seen, seen


METACLASSED = r"""
import abc, enum, typing
class Shape(abc.ABC):
    @abc.abstractmethod
    def area(self): ...
class Empty(enum.Enum):
    pass
class Colour(enum.Enum):
    RED = 1
T = typing.TypeVar("T")
class Box(typing.Protocol[T]):
    def get(self) -> T: ...
"""


def test_a_class_of_the_change_is_true_and_subscripts_as_its_metaclass_says(load: Load) -> None:
    # The class protocol is forwarded only where the change's metaclass offers it: an ABC has no len()
    # to make it false, an empty enum is true (EnumType.__bool__), a generic subscripts by its
    # __class_getitem__.
    lib = load(METACLASSED)
    assert bool(lib.Shape) is True and bool(lib.Empty) is True and bool(lib.Colour) is True
    assert lib.Box[int] is not None
    assert len(lib.Colour) == 1 and list(lib.Empty) == []
