"""A class the change makes over a test's class and an ABC has no metaclass conflict, as in one process.

decorator's dispatch computes ``type("t", (cls, Sized), {}).mro()`` over the classes it is handed; a
test's plain class (mirrored in the subject) or a test object's class (a stand-in) had a metaclass of
patchgate's own, which conflicted with ``ABCMeta`` (second holdout: two of decorator's doctest examples).
"""

from __future__ import annotations

import collections.abc as c
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.checks.behaviour.incontainer.test_bridge_shapes import loading

pytestmark = pytest.mark.slow

LIB = """
import abc
import collections.abc as c

def combined(cls):
    return [k.__name__ for k in type("t", (cls, c.Sized), {}).mro()]

def combined_of(obj):
    return type("t", (type(obj), c.Sized), {}).__name__

def abstract_over(cls):
    class Made(cls, metaclass=abc.ABCMeta):
        @abc.abstractmethod
        def shape(self): ...
    return sorted(Made.__abstractmethods__)
"""


class WithLength:
    def __len__(self) -> int:
        return 0


class SomeSet(c.Sized):
    def __len__(self) -> int:
        return 0


@pytest.fixture
def lib(tmp_path: Path) -> Iterator[Any]:
    with loading(tmp_path, suite_root=str(Path(__file__).parent)) as start:
        yield start(LIB)


def test_the_change_s_class_over_a_test_s_class_and_an_abc(lib: Any) -> None:
    order = lib.combined(WithLength)
    assert order[:2] == ["t", "WithLength"] and order[-2:] == ["Sized", "object"]
    assert lib.combined_of(SomeSet()) == "t"
    assert lib.abstract_over(WithLength) == ["shape"]
