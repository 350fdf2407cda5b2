from datetime import timedelta

import pytest

from durations import parse_duration


def test_hours_and_minutes() -> None:
    assert parse_duration("1h30m") == timedelta(hours=1, minutes=30)


@pytest.mark.skip(reason="seconds are not needed yet")
def test_seconds() -> None:
    assert parse_duration("45s") == timedelta(seconds=45)
