"""Hidden tests for issue #1: the agent never sees this file, only (by policy) failing ids."""

from datetime import timedelta

import pytest

from durations import parse_duration


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1h30m", timedelta(hours=1, minutes=30)),
        ("45s", timedelta(seconds=45)),
        ("2d", timedelta(days=2)),
        ("1d2h3m4s", timedelta(days=1, hours=2, minutes=3, seconds=4)),
        ("1h 30m", timedelta(hours=1, minutes=30)),
        ("  15m  ", timedelta(minutes=15)),
    ],
)
def test_parses(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["garbage", "", "   ", "10", "1x", "h", "1h30", "1h garbage"])
def test_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)
