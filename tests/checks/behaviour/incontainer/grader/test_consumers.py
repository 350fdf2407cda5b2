"""Which instructions take an iterable whole (consumers.whole), read off real frames: a table of cases."""

from __future__ import annotations

import contextlib
import sys
from typing import Any

import pytest

from checks.behaviour.incontainer.grader import consumers


class Probe:
    """An iterable that records, at each ``iter()``, whether the calling instruction takes it whole."""

    def __init__(self) -> None:
        self.seen: list[bool] = []

    def __iter__(self) -> Any:
        self.seen.append(consumers.whole(sys._getframe(1)))
        return iter(["a", "b"])


def spread(*items: Any) -> tuple[Any, ...]:
    return items


CASES = [
    ("list(p)", True),
    ("tuple(p)", True),
    ("sorted(p)", True),
    ("sorted(p, key=len, reverse=True)", True),
    ("sorted(p, key=lambda x: x)", True),
    ("sorted(p, reverse=True, key=lambda x, y=1: x)", True),
    ("sorted(p, key=bytes)", False),  # a key in C that takes an item's items, under this instruction
    ("sorted(p, key=f)", False),  # a local: what it is cannot be read
    ("sorted(p, key=spread)", True),  # the test's own function: its calls run in frames of their own
    ("'-'.join(p)", True),
    ("b''.join(x.encode() for x in p)", False),  # the generator expression's own loop
    ("[*p]", True),
    ("(*p,)", True),
    ("[*p, *p]", True),
    ("f(*p)", False),  # the callee runs under the same instruction
    ("bytearray().extend(*[p])", False),
    ("a, *b = p", True),
    ("list(q[0])", True),
    ("list(o.p)", True),
    ("set(p)", False),
    ("frozenset(p)", False),
    ("dict(zip(p, p))", False),
    ("min(p)", False),
    ("max(p)", False),
    ("any(p)", False),
    ("'a' in p", False),
    ("x, y = p", False),
    ("bytes(x.encode() for x in p)", False),
    ("bytearray().extend(p)", False),
    ("list(zip(p))", False),
    ("list(map(str, p))", False),
    ("list(p if flag else p)", False),  # a branch inside the arguments
    ("list(p, *())", False),
    ("list(*[p])", False),
    ("[x for x in p]", False),
    ("sep.join(p)", False),  # a join whose receiver the code does not show
]


@pytest.mark.parametrize(("snippet", "whole"), CASES, ids=[c[0] for c in CASES])
def test_in_a_function(snippet: str, whole: bool) -> None:
    if not consumers.SUPPORTED:
        pytest.skip("batches are for CPython 3.11's bytecode")
    namespace: dict[str, Any] = {"spread": spread}
    exec(compile(f"def run(p, q, o, f, flag, sep):\n    {snippet}\n", "case", "exec"), namespace)  # noqa: S102
    probe = Probe()
    holder = type("Holder", (), {"p": probe})()
    # What a call raises (x, y = p, list(p, *())) is no part of the question.
    with contextlib.suppress(TypeError, ValueError):
        namespace["run"](probe, [probe], holder, spread, True, "-")
    assert probe.seen[:1] == [whole]


def test_a_name_bound_to_something_else_is_not_the_built_in() -> None:
    namespace: dict[str, Any] = {"list": lambda it: [*it][:1]}
    exec(compile("def run(p):\n    return list(p)\n", "case", "exec"), namespace)  # noqa: S102
    probe = Probe()
    namespace["run"](probe)
    assert probe.seen == [True]  # the lambda's own [*...] is whole; the call of "list" was not asked
    namespace["list"] = tuple
    namespace["run"](probe)
    assert probe.seen == [True, False]


def test_at_module_level_and_in_a_class_body() -> None:
    if not consumers.SUPPORTED:
        pytest.skip("batches are for CPython 3.11's bytecode")
    probe = Probe()
    source = "r = list(p)\nclass C:\n    r = sorted(p)\nlist = tuple\ns = list(p)\n"
    exec(compile(source, "m", "exec"), {"p": probe})  # noqa: S102
    assert probe.seen == [True, True, False]


def test_another_python_takes_nothing_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(consumers, "SUPPORTED", False)
    probe = Probe()
    list(probe)
    assert probe.seen == [False]
