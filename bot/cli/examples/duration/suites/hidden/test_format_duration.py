"""Hidden tests of what already works: they catch regressions."""

from datetime import timedelta

from durations import format_duration


def test_format_hours_and_minutes() -> None:
    assert format_duration(timedelta(hours=1, minutes=30)) == "1h30m"


def test_format_zero() -> None:
    assert format_duration(timedelta(0)) == "0s"
