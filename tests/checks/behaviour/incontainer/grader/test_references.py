"""The grader's side of a differential check: the reference, its inputs' strategies, its observations."""

from __future__ import annotations

import secrets
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import find
from hypothesis import strategies as st

from checks.behaviour.incontainer.channel import codec
from checks.behaviour.incontainer.grader import references
from checks.behaviour.incontainer.grader.references import SuiteProblem

REF = """
import time
from datetime import timedelta

from hypothesis import strategies as st

small = st.integers(min_value=0, max_value=9)


def half(x: int) -> int:
    if x < 0:
        raise ValueError("negative")
    return x // 2


def mixed(a: int, b: str = "b", c: bool = False, *, d: float) -> tuple:
    return (a, b, c, d)


def bare(x):
    return x


def slow(x: int) -> int:
    time.sleep(5)
    return x


def opaque(x: int) -> object:
    return object()


def loose(*xs: int) -> int:
    return 0


def quits(x: int) -> int:
    raise SystemExit(x)
"""


@pytest.fixture
def suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, dict[str, str]]:
    """A suite folder with a reference module of a name no other test uses; sys.path is restored."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    name = f"ref_{secrets.token_hex(4)}"
    (tmp_path / f"{name}.py").write_text(REF)
    return name, {"suite": str(tmp_path)}


def load(suite: tuple[str, dict[str, str]], function: str) -> references.Reference:
    name, roots = suite
    return references.load({"source": "suite", "module": name, "function": function}, roots)


def test_parameters_go_by_position_until_one_is_left_to_its_default(
    suite: tuple[str, dict[str, str]],
) -> None:
    ref = load(suite, "mixed")
    assert (ref.positional, ref.keyword) == (("a", "b", "c"), ("d",))
    # b has a default and no strategy: it keeps it, so c after it goes by name, as the change must take it.
    drawn = find(references.arguments(ref, {"c": "st.just(True)"}), lambda _: True)
    args, kwargs = drawn
    assert (len(args), sorted(kwargs)) == (1, ["c", "d"])
    assert isinstance(args[0], int) and kwargs["c"] is True and isinstance(kwargs["d"], float)


def test_a_written_strategy_sees_st_and_the_reference_module_s_names(
    suite: tuple[str, dict[str, str]],
) -> None:
    ref = load(suite, "half")
    args, _ = find(references.arguments(ref, {"x": "small.map(lambda v: v + 100)"}), lambda _: True)
    assert args == (100,)


@pytest.mark.parametrize(
    ("function", "strategies", "message"),
    [
        ("bare", {}, "parameter 'x' has no annotation and no strategy"),
        ("half", {"x": "no_such_name"}, "the strategy for 'x' does not evaluate"),
        ("half", {"x": "42"}, "the strategy for 'x' is not a Hypothesis strategy"),
        ("loose", {}, r"takes \*args or \*\*kwargs"),
        # Base's function as the reference: its signature is first read here, never on the host.
        ("half", {"y": "st.just(1)"}, "strategies for y, which the reference does not take"),
    ],
)
def test_a_strategy_the_grader_cannot_make_is_the_suite_s_problem(
    suite: tuple[str, dict[str, str]], function: str, strategies: dict[str, str], message: str
) -> None:
    with pytest.raises(SuiteProblem, match=message):
        references.arguments(load(suite, function), strategies)


def test_loading_refuses_what_is_not_the_source_s_own_module(suite: tuple[str, dict[str, str]]) -> None:
    _, roots = suite
    with pytest.raises(SuiteProblem, match="json is not the suite's own module"):
        references.load({"source": "suite", "module": "json", "function": "dumps"}, roots)
    with pytest.raises(SuiteProblem, match="does not import"):
        references.load({"source": "suite", "module": "no_such_module_here", "function": "f"}, roots)
    with pytest.raises(SuiteProblem, match="no base to take the reference from"):
        references.load({"source": "base", "module": "m", "function": "f"}, roots)
    with pytest.raises(SuiteProblem, match="has no function missing"):
        load(suite, "missing")


def test_the_reference_is_observed_as_the_subject_observes_the_change(
    suite: tuple[str, dict[str, str]],
) -> None:
    ref = load(suite, "half")
    assert references.observe(ref, [7], {}, 5.0) == {"status": "returned", "value": 3}
    raised: dict[str, Any] = references.observe(ref, [-1], {}, 5.0)
    assert (raised["status"], raised["exception"]["type"]) == ("raised", "ValueError")
    # Whatever the reference raises is its answer, SystemExit too: never a crash of the grader.
    quits = references.observe(load(suite, "quits"), [3], {}, 5.0)
    assert (quits["status"], quits["exception"]["type"]) == ("raised", "SystemExit")
    # The arguments it gets are decoded from the encoding the subject gets, never the drawn objects.
    mixed = references.observe(load(suite, "mixed"), codec.encode([1, "x", True]), {"d": 0.5}, 5.0)
    assert mixed["value"] == {"__type__": "tuple", "items": [1, "x", True, 0.5]}


def test_a_reference_too_slow_or_without_an_encoding_is_the_suite_s_problem(
    suite: tuple[str, dict[str, str]],
) -> None:
    with pytest.raises(SuiteProblem, match=r"did not return within 0\.2s"):
        references.observe(load(suite, "slow"), [1], {}, 0.2)
    with pytest.raises(SuiteProblem, match="the reference's result cannot be compared"):
        references.observe(load(suite, "opaque"), [1], {}, 5.0)


def test_an_input_that_cannot_cross_by_value_is_the_suite_s_problem() -> None:
    assert references.encode_input([(1, "a")], "x") == [{"__type__": "tuple", "items": [1, "a"]}]
    with pytest.raises(SuiteProblem, match="a drawn input cannot be handed over by value"):
        references.encode_input([object()], "a drawn input")


def test_strategies_from_annotations_draw_values_of_those_types(suite: tuple[str, dict[str, str]]) -> None:
    draws = references.arguments(load(suite, "half"), {})
    assert isinstance(find(draws, lambda _: True)[0][0], int)
    assert isinstance(draws, st.SearchStrategy)
