"""Held-out tests for issue #1: never shown to anyone in any detail, only counted."""

from datetime import timedelta

import pytest

from durations import format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("12m", timedelta(minutes=12)),
        ("3d4h", timedelta(days=3, hours=4)),
        ("100s", timedelta(seconds=100)),
        ("1d 1s", timedelta(days=1, seconds=1)),
    ],
)
def test_more_durations(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["-1h", "1.5h", "one hour", "1m1m", "30m1h", "1h\n30m!"])
def test_rejects_more(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)


@pytest.mark.parametrize("seconds", [0, 59, 3600, 90061])
def test_round_trip(seconds: int) -> None:
    value = timedelta(seconds=seconds)
    assert parse_duration(format_duration(value)) == value
