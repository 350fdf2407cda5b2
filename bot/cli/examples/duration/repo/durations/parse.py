"""Read a duration written the way people do: 1h30m."""

from datetime import timedelta


def parse_duration(text: str) -> timedelta:
    """Return the timedelta ``text`` describes, e.g. ``1h30m``; raise ValueError otherwise."""
    raise NotImplementedError("see issue #1")
