"""Write a timedelta the way people do: 1d2h3m4s."""

from datetime import timedelta

_UNITS = (("d", 86400), ("h", 3600), ("m", 60), ("s", 1))


def format_duration(value: timedelta) -> str:
    """Return ``value`` as whole days, hours, minutes and seconds, e.g. ``1h30m``; zero is ``0s``."""
    seconds = int(value.total_seconds())
    if seconds < 0:
        raise ValueError("negative durations have no written form")
    parts = []
    for unit, size in _UNITS:
        count, seconds = divmod(seconds, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts) or "0s"
