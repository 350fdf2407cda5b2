"""Convert lengths and temperatures."""

from units.convert import UnknownUnit, convert, temperature

__all__ = ["UnknownUnit", "convert", "temperature"]
