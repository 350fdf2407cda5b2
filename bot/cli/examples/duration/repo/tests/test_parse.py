from datetime import timedelta

from durations import parse_duration


def test_hours_and_minutes() -> None:
    assert parse_duration("1h30m") == timedelta(hours=1, minutes=30)


def test_seconds() -> None:
    assert parse_duration("45s") == timedelta(seconds=45)


def test_days() -> None:
    assert parse_duration("2d") == timedelta(days=2)
