# ruff: noqa: E501 - tables of observations read best one a line
"""When the change's observation agrees with the reference's: the cases' strict rules, exceptions by class."""

from __future__ import annotations

from typing import Any

import pytest

from checks.behaviour.incontainer.channel import codec
from checks.behaviour.incontainer.channel.observations import agree, call_text, describe


def returned(value: object) -> dict[str, Any]:
    return {"status": "returned", "value": codec.encode(value)}


class ParseError(ValueError):
    pass


def raised(exc: BaseException) -> dict[str, Any]:
    return {"status": "raised", "exception": codec.describe(exc)}


@pytest.mark.parametrize(
    ("reference", "head", "expected"),
    [
        (returned(3), returned(3), True),
        (returned(3), returned(3.0), True),  # int and float compare by value
        (returned(1), returned(True), False),  # True is not 1
        (returned((1, 2)), returned([1, 2]), False),  # a tuple is not a list
        (returned({1: "a", 2: "b"}), returned({2: "b", 1: "a"}), True),  # a dict's order is not its value
        (returned(float("nan")), returned(float("nan")), True),
        (returned({1, 2}), returned(frozenset({2, 1})), True),
        (
            returned("x"),
            {"status": "unserializable", "detail": "a result of type m.Cls has no JSON encoding"},
            False,
        ),
        (raised(ValueError("x")), raised(ValueError("y")), True),  # the class, not the message
        (raised(ValueError("x")), raised(ParseError("x")), True),  # a subclass is one
        (raised(ParseError("x")), raised(ValueError("x")), False),  # the base is not the subclass
        (raised(ValueError("x")), raised(TypeError("x")), False),
        (raised(ValueError("x")), returned(0), False),
        (returned(0), raised(ValueError("x")), False),
        (returned(0), {"status": "timeout"}, False),
        (returned(0), {"status": "gone"}, False),
        ({"status": "timeout"}, {"status": "timeout"}, False),  # no answer agrees with no answer
        (
            raised(ValueError("x")),
            {"status": "raised", "exception": {"mro": "ValueError"}},
            False,
        ),  # malformed
    ],
)
def test_agreement_is_strict_about_types_and_compares_exceptions_by_class(
    reference: dict[str, Any], head: dict[str, Any], expected: bool
) -> None:
    assert agree(reference, head) is expected


def test_a_suite_s_own_exception_class_agrees_with_the_change_s_of_the_same_name() -> None:
    # The reference lives in the suite: it cannot raise the repository's class, only one named alike.
    theirs = {"status": "raised", "exception": {"type": "durations.errors.ParseError",
                                                "mro": ["ParseError", "ValueError", "durations.errors.ParseError"]}}  # fmt: skip
    assert agree(raised(ParseError("x")), theirs)


@pytest.mark.parametrize(
    ("observation", "words"),
    [
        (returned(__import__("datetime").timedelta(0)), "returned datetime.timedelta(0)"),
        (raised(ValueError("x")), "raised ValueError"),
        ({"status": "timeout"}, "did not return in time"),
        ({"status": "gone"}, "stopped answering (the code under test's process ended)"),
        (
            {"status": "unserializable", "detail": "no\nencoding"},
            "returned a value that cannot be compared (no encoding)",
        ),
        ({"status": "what"}, "gave no answer"),
    ],
)
def test_describe_says_what_a_call_did(observation: dict[str, Any], words: str) -> None:
    assert describe(observation) == words


def test_call_text_shows_the_decoded_arguments_and_is_kept_short() -> None:
    assert call_text("f", codec.encode(["0x", (1, 2)]), {"n": 3}) == "f('0x', (1, 2), n=3)"
    assert len(call_text("f", [" " * 10_000], {})) == 200
    assert call_text("f", [{"__type__": "nonsense"}], {}) == "f(...)"
