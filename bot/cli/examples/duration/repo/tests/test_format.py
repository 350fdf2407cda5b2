from datetime import timedelta

from durations import format_duration


def test_hours_and_minutes() -> None:
    assert format_duration(timedelta(hours=1, minutes=30)) == "1h30m"


def test_every_unit() -> None:
    assert format_duration(timedelta(days=1, hours=2, minutes=3, seconds=4)) == "1d2h3m4s"


def test_zero() -> None:
    assert format_duration(timedelta(0)) == "0s"
