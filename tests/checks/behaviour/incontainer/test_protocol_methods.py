"""A protocol method a test's class defines (``__html__``) is the change's to read and call.

markupsafe's ``escape(obj)`` asks ``hasattr(obj, "__html__")``; isolated, every
dunder of a test's object was refused, so a test's ``__html__`` class was
escaped as plain text (second holdout, first run: 4 of markupsafe's 6 lost).
A dunder the test's own class defines as a plain function is its public face;
one that reaches past it (``handed.NEVER_READ``) never is.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.checks.behaviour.incontainer.test_bridge_shapes import loading

pytestmark = pytest.mark.slow

LIB = """
def escape(s):
    if hasattr(s, "__html__"):
        return "HTML:" + s.__html__()
    return "TEXT:" + str(s)

def formatted(obj, spec):
    fmt = getattr(obj, "__html_format__", None)
    return fmt(spec) if fmt is not None else format(obj, spec)

def peek(obj, name):
    return getattr(obj, name)

def direct(obj, name, *args):
    agent = object.__getattribute__(obj, "_pg_agent")
    return agent.callback("getattr", obj, name)(*args)

def sealed_default(callback):
    import inspect
    return inspect.signature(callback).parameters["expected"].default

def oracle(obj, callback):
    return formatted(obj, sealed_default(callback))

def leak(obj):
    # Every route past an object's public face a protocol rule could open, as text: read as Python reads
    # them, and asked of the grader directly (the change has read patchgate's source).
    agent = object.__getattribute__(obj, "_pg_agent")
    found = []
    for name, args in (("__getstate__", ()), ("__reduce_ex__", (2,)), ("__reduce__", ()), ("__dict__", None),
                       ("_token", None), ("__init__", None), ("__getattribute__", ("_token",))):
        for read in (getattr, lambda o, n: agent.callback("getattr", o, n)):
            try:
                value = read(obj, name)
                found.append(repr(value(*args) if args is not None else value))
            except Exception as exc:
                found.append(repr(exc))
    return " ".join(found)
"""


class Page:
    def __html__(self) -> str:
        return "<em>awesome</em>"

    def __str__(self) -> str:
        return "awesome"


class Linked(Page):
    def __init__(self, user: str) -> None:
        self._token = "secret-token"
        self.user = user

    def __html_format__(self, spec: str) -> str:
        if spec not in ("", "link"):
            raise ValueError("Invalid format spec")
        return f'<a href="/u/{self.user}">{self.__html__()}</a>' if spec else self.__html__()

    def __getstate__(self) -> dict[str, Any]:
        return dict(vars(self))

    def __reduce_ex__(self, protocol: Any) -> Any:
        return (Linked, (self.user,), vars(self))

    __constant__ = "not a method"


class Raises:
    def __html__(self) -> str:
        raise ValueError(123)


@pytest.fixture
def lib(tmp_path: Path) -> Iterator[Any]:
    with loading(tmp_path, suite_root=str(Path(__file__).parent)) as start:
        yield start(LIB)


def test_a_test_s_protocol_method_is_found_called_and_raises_as_its_own(lib: Any) -> None:
    assert lib.escape(Page()) == "HTML:<em>awesome</em>"
    assert lib.escape(Linked("ann")) == "HTML:<em>awesome</em>"  # inherited from a class of the suite's
    assert lib.formatted(Linked("ann"), "link") == '<a href="/u/ann"><em>awesome</em></a>'
    with pytest.raises(ValueError, match="Invalid format spec"):
        lib.formatted(Linked("ann"), "bad")
    with pytest.raises(ValueError, match="123"):
        lib.escape(Raises())
    assert lib.escape("plain") == "TEXT:plain"


def test_a_test_s_own_pickling_and_private_state_are_never_a_protocol(lib: Any) -> None:
    # Linked defines __getstate__ and __reduce_ex__, which hand out its private token: were every dunder
    # its class defines a protocol method, the change would read it through them.
    text = lib.leak(Linked("ann"))
    assert "secret-token" not in text


class Point:
    def __repr__(self) -> str:
        return f"{type(self).__qualname__}(1)"

    def __le__(self, other: object) -> bool:
        return isinstance(other, int) and other >= 5

    def __rmatmul__(self, other: object) -> bool:
        return isinstance(other, int) and other >= 5

    def __replace__(self, **changes: object) -> Point:
        return Point()


SPECIAL = ["__repr__", "__str__", "__format__", "__le__", "__eq__", "__hash__", "__rmatmul__", "__replace__"]


@pytest.mark.parametrize("name", SPECIAL)
def test_python_s_own_special_methods_are_never_protocol_methods(lib: Any, name: str) -> None:
    # Red-team: a test's __repr__ read as a protocol method gave the suite's real names (repr() aliases
    # them), and its __le__, called as the suite's own function, unsealed a default: an oracle.
    with pytest.raises(AttributeError, match="may not read"):
        lib.direct(Point(), name)


class Approx:
    def __html_format__(self, other: object) -> str:
        return "yes" if isinstance(other, int) and other >= 271828 else "no"


def test_a_protocol_method_is_handed_plain_values_and_never_a_sealed_default(lib: Any) -> None:
    # Red-team: a protocol method called as the suite's own function unsealed a default handed to it;
    # with a comparison in it, it was an oracle for the test's hidden value.
    def callback(x: int, expected: int = 271828) -> bool:
        return x == expected

    assert lib.formatted(Approx(), 5) == "no"
    with pytest.raises(TypeError, match="default value"):
        lib.oracle(Approx(), callback)
