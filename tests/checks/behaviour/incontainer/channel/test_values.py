from __future__ import annotations

import datetime
import decimal
import math

import pytest

from checks.behaviour.incontainer.channel.values import ValueFormatError, approx_equal, decode, equal, show

TD = {"__type__": "timedelta"}


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (None, None),
        (True, True),
        (3, 3),
        ("x", "x"),
        ([1, [2]], [1, [2]]),
        ({"a": 1}, {"a": 1}),
        ({**TD, "seconds": 5400, "microseconds": 0}, datetime.timedelta(hours=1, minutes=30)),
        ({**TD, "hours": 1, "minutes": 30}, datetime.timedelta(seconds=5400)),
        ({**TD, "seconds": 1.5}, datetime.timedelta(seconds=1, microseconds=500000)),
        ({"__type__": "datetime", "iso": "2024-01-02T03:04:05+00:00"},
         datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)),
        ({"__type__": "date", "iso": "2024-01-02"}, datetime.date(2024, 1, 2)),
        ({"__type__": "time", "iso": "03:04:05"}, datetime.time(3, 4, 5)),
        ({"__type__": "decimal", "value": "1.10"}, decimal.Decimal("1.10")),
        ({"__type__": "tuple", "items": [1, "a"]}, (1, "a")),
        ({"__type__": "set", "items": [1, 2]}, frozenset({1, 2})),
        ({"__type__": "frozenset", "items": [{"__type__": "tuple", "items": [1]}]}, frozenset({(1,)})),
        ({"__type__": "dict", "items": [[1, "one"]]}, {1: "one"}),
        ({"__type__": "bytes", "hex": "6869"}, b"hi"),
        ({"__type__": "complex", "real": 1, "imag": -2}, complex(1, -2)),
        ({"__type__": "float", "value": "inf"}, math.inf),
    ],
)  # fmt: skip
def test_decode(data: object, expected: object) -> None:
    assert equal(expected, decode(data))


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"__type__": "nope"}, "unknown __type__"),
        ({**TD, "fortnights": 1}, "a timedelta takes"),
        ({**TD}, "a timedelta takes"),
        ({**TD, "seconds": True}, "must be a number"),
        ({**TD, "days": 10**12}, "out of range"),
        ({"__type__": "datetime", "iso": "yesterday"}, "not an ISO datetime"),
        ({"__type__": "decimal", "value": "one"}, "not a decimal"),
        ({"__type__": "set", "items": [[1]]}, "cannot hold list"),
        ({"__type__": "tuple"}, "needs a list 'items'"),
        ({"__type__": "dict", "items": [[1]]}, "pairs"),
        ({"__type__": "bytes", "hex": "abc"}, "hex"),
        ({"__type__": "float", "value": "1.5"}, "nan"),
    ],
)
def test_decode_rejects(data: object, message: str) -> None:
    with pytest.raises(ValueFormatError, match=message):
        decode(data)


@pytest.mark.parametrize(
    ("expected", "actual", "same"),
    [
        (1, 1.0, True),
        (10**20, 10**20 + 1, False),  # no float rounding between ints
        (True, 1, False),
        (1, True, False),
        (None, 0, False),
        ([1, 2], (1, 2), False),
        ((1, 2), (1, 2), True),
        ({"a": [1]}, {"a": [1.0]}, True),
        ({"a": 1}, {"a": 1, "b": 2}, False),
        (math.nan, math.nan, True),
        (math.nan, 1.0, False),
        (datetime.timedelta(0), datetime.timedelta(seconds=0), True),
        (datetime.timedelta(0), 0, False),
        (frozenset({1, 2}), frozenset({2, 1}), True),
        ("a", "a ", False),
    ],
)
def test_equal(expected: object, actual: object, same: bool) -> None:
    assert equal(expected, actual) is same


@pytest.mark.parametrize(
    ("expected", "actual", "tolerance", "same"),
    [
        (0.3333, 1 / 3, 0.001, True),
        (0.3333, 0.35, 0.001, False),
        (1e6, 1e6 + 0.5, None, True),  # relative 1e-6 by default
        (1e6, 1e6 + 2, None, False),
        (datetime.timedelta(seconds=10), datetime.timedelta(seconds=10.4), 0.5, True),
        ([1.0, 2.0], [1.0001, 2.0], 0.001, True),
        ([1.0, 2.0], (1.0, 2.0), 0.001, False),
        (1.0, True, 1.0, False),
        (1.0, "1.0", 1.0, False),
        (math.inf, math.inf, None, True),
    ],
)
def test_approx_equal(expected: object, actual: object, tolerance: float | None, same: bool) -> None:
    assert approx_equal(expected, actual, tolerance) is same


def test_show_shortens_long_values() -> None:
    assert show("x" * 1000).endswith("…")
    assert len(show("x" * 1000)) == 160
    assert show(datetime.timedelta(0)) == "datetime.timedelta(0)"
