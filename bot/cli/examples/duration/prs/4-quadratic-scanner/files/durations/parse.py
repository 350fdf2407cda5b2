"""Read a duration written the way people do: 1h30m."""

from datetime import timedelta

_ORDER = "dhms"
_UNITS = {"d": "days", "h": "hours", "m": "minutes", "s": "seconds"}


def parse_duration(text: str) -> timedelta:
    """Return the timedelta ``text`` describes, e.g. ``1h30m``; raise ValueError otherwise.

    A small scanner instead of a regular expression, easier to read: each part is a
    number and a unit, largest unit first, with spaces allowed around the parts.
    """
    rest = text
    parts: dict[str, int] = {}
    last = -1
    while True:
        while rest and rest[0].isspace():
            rest = rest[1:]
        if not rest:
            break
        digits = ""
        while rest and rest[0].isdecimal():
            digits, rest = digits + rest[0], rest[1:]
        if not digits or not rest or rest[0] not in _UNITS or _ORDER.index(rest[0]) <= last:
            raise ValueError(f"not a duration: {text!r}")
        last = _ORDER.index(rest[0])
        parts[_UNITS[rest[0]]] = int(digits)
        rest = rest[1:]
    if not parts:
        raise ValueError(f"not a duration: {text!r}")
    return timedelta(**parts)
