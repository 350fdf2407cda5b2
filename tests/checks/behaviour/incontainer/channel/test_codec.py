"""The codec's value table: each type by the nearest encoded class in its real MRO, nothing it claims.

A value decides nothing about how it is written: not through ``__class__``
(which ``isinstance`` believes), not through a metaclass's ``__mro__``.
"""

from __future__ import annotations

import datetime
import decimal
import enum
import fractions
import pathlib
import types
import uuid
from typing import Any

import pytest

from checks.behaviour.incontainer.channel import codec


def handles(value: object) -> dict[str, Any]:
    return {codec.TYPE: "obj", "side": "s", "id": 1}


class Colour(enum.IntEnum):
    RED = 1


class Stamp(datetime.datetime):
    pass


SAMPLES: list[object] = [
    None, True, 3, 2.5, float("inf"), "text", b"\x00", bytearray(b"ab"), 1 + 2j, [1, [2]], (1, "a"), {"k": 1},
    {1: "one"}, {3, 1}, frozenset({2}), datetime.timedelta(days=1, microseconds=5),
    datetime.datetime(2020, 1, 2, 3, 4), datetime.date(2020, 1, 2), datetime.time(3, 4),
    decimal.Decimal("1.50"), fractions.Fraction(1, 3), uuid.UUID(int=7), pathlib.PurePosixPath("/a/b"),
    slice(1, None, 2), range(0, 9, 3),
    Ellipsis, types.SimpleNamespace(a=1), Colour.RED, Stamp(2021, 5, 6),
    datetime.UTC, datetime.timezone(datetime.timedelta(hours=-7), "-07:00"),
    datetime.datetime(1979, 5, 27, 7, 32, tzinfo=datetime.timezone(datetime.timedelta(hours=-7), "-07:00")),
]  # fmt: skip


@pytest.mark.parametrize("value", SAMPLES, ids=lambda v: type(v).__name__)
def test_every_value_type_crosses_and_decodes_to_an_equal_value(value: object) -> None:
    encoded = codec.Encoder(handles, extended=True)(value)
    assert "obj" not in repr(encoded)
    decoded = codec.decode(encoded)
    assert decoded == value
    # A subclass crosses as its base: the base's type comes back (bool stays bool, a bytearray is bytes).
    assert isinstance(value, type(decoded)) or type(value) is bytearray


def test_a_class_that_claims_to_be_an_int_through_class_is_a_handle_and_never_read_as_one() -> None:
    class Liar:
        @property  # type: ignore[misc]
        def __class__(self) -> type:  # isinstance(Liar(), int) is True
            return int

    liar = Liar()
    assert isinstance(liar, int)
    assert codec.Encoder(handles, extended=True)(liar) == handles(liar)
    assert codec.Encoder(handles)([liar]) == [handles(liar)]
    # Without a handle to give, it has no encoding: refused, not a TypeError from int's own method.
    with pytest.raises(codec.Unserializable):
        codec.encode({"x": liar})


def test_a_metaclass_mro_property_does_not_make_an_object_a_list() -> None:
    class Claims(type):
        @property
        def __mro__(cls) -> tuple[type, ...]:
            return (list, object)

    class Disguised(metaclass=Claims):
        def __iter__(self) -> Any:
            raise AssertionError("never iterated")

    thing = Disguised()
    assert codec.Encoder(handles, extended=True)(thing) == handles(thing)
    with pytest.raises(codec.Unserializable):
        codec.encode(thing)


def test_a_list_subclass_with_its_own_methods_keeps_its_identity_and_a_plain_one_crosses_as_a_list() -> None:
    class Barrel(list[int]):
        def total(self) -> int:
            return sum(self)

    class Plain(list[int]):
        pass

    assert codec.Encoder(handles, extended=True)(Barrel([1])) == handles(None)
    assert codec.Encoder(handles, extended=True)(Plain([1])) == [1]


def test_extended_types_are_only_for_the_pytest_bridge() -> None:
    for value in (fractions.Fraction(1, 2), uuid.UUID(int=1), range(2), Ellipsis):
        with pytest.raises(codec.Unserializable):
            codec.encode(value)


def test_a_datetime_s_and_a_time_s_fold_cross_with_them() -> None:
    # tomlkit's test_unwrap_keeps_fold: PEP 495's fold is not in the ISO text.
    later = datetime.datetime(2018, 11, 4, 1, 30, fold=1)
    assert codec.decode(codec.encode(later)).fold == 1
    assert codec.decode(codec.encode(datetime.time(1, 30, fold=1))).fold == 1
    assert codec.decode(codec.encode(later.replace(fold=0))).fold == 0


def test_a_timezone_is_its_constructor_s_arguments_and_nothing_out_of_range_is_built() -> None:
    # tomlkit's _utc, handed to datetime(..., tzinfo=...) by a test module at import: a handle there
    # failed the whole module. UTC stays the singleton; a subject's offset out of range is refused.
    assert codec.decode(codec.encode(datetime.UTC)) is datetime.UTC
    named = codec.decode(codec.encode(datetime.timezone(datetime.timedelta(hours=1), "CET")))
    assert repr(named) == repr(datetime.timezone(datetime.timedelta(hours=1), "CET"))
    for seconds in (86_400, 10**30):
        with pytest.raises(ValueError, match=r"offset|magnitude|too large|overflow"):
            codec.decode({codec.TYPE: "timezone", "seconds": seconds, "microseconds": 0})


@pytest.mark.parametrize("text", ["\ud835\udce3", "\ud835", "a\udce3b", "\U0001d4e3", "plain", "é"], ids=repr)
def test_a_string_crosses_exactly_even_with_surrogate_code_points(text: str) -> None:
    # unidecode's test_surrogate_pairs: two lone surrogates written as JSON escapes read back as the
    # one astral character they would stand for in UTF-16; the library never saw the pair.
    import json

    for value in (text, [text], {text: text}):
        back = codec.decode(json.loads(json.dumps(codec.encode(value))))
        assert back == value
    assert len(codec.decode(json.loads(json.dumps(codec.encode(text))))) == len(text)
