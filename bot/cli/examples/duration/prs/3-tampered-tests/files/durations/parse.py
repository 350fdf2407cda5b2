"""Read a duration written the way people do: 1h30m."""

from datetime import timedelta


def parse_duration(text: str) -> timedelta:
    """Return the timedelta ``text`` describes, e.g. ``1h30m``."""
    hours, _, rest = text.partition("h")
    minutes = rest.strip().removesuffix("m") or "0"
    return timedelta(hours=int(hours or 0), minutes=int(minutes))
