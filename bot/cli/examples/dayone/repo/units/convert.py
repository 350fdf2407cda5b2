"""Lengths by a factor to metres; temperatures through Celsius."""

from __future__ import annotations

METRES = {"km": 1000.0, "m": 1.0, "cm": 0.01, "mm": 0.001}


class UnknownUnit(ValueError):
    """A unit this module does not know."""


def convert(value: float, source: str, target: str) -> float:
    """Return ``value`` in ``source`` units as ``target`` units (lengths)."""
    try:
        return value * METRES[source] / METRES[target]
    except KeyError as exc:
        raise UnknownUnit(exc.args[0]) from None


def temperature(value: float, source: str, target: str) -> float:
    """Return the temperature ``value`` on the ``source`` scale on the ``target`` scale."""
    return _from_celsius(_to_celsius(value, source), target)


def _to_celsius(value: float, scale: str) -> float:
    if scale == "C":
        return value
    if scale == "F":
        return (value - 32) * 5 / 9
    raise UnknownUnit(scale)


def _from_celsius(value: float, scale: str) -> float:
    if scale == "C":
        return value
    if scale == "F":
        return value * 9 / 5 + 32
    raise UnknownUnit(scale)
