"""Read a duration written the way people do: 1h30m."""

import re
from datetime import timedelta

# Each unit at most once, largest first; spaces are allowed between the parts.
_DURATION = re.compile(r"(?:(\d+)d)?\s*(?:(\d+)h)?\s*(?:(\d+)m)?\s*(?:(\d+)s)?")


def parse_duration(text: str) -> timedelta:
    """Return the timedelta ``text`` describes, e.g. ``1h30m``; raise ValueError otherwise."""
    match = _DURATION.fullmatch(text.strip())
    if match is None or not any(match.groups()):
        raise ValueError(f"not a duration: {text!r}")
    days, hours, minutes, seconds = (int(part or 0) for part in match.groups())
    return timedelta(days=days, hours=hours, minutes=minutes, seconds=seconds)
