"""Typed plain-JSON values: decode the sandbox's results and the cases' expectations, then compare.

Both sides use one encoding (see ``codec.py``): plain JSON, plus
``{"__type__": ...}`` objects for what JSON lacks. Decoding builds
patchgate's own Python objects, so equality here is Python's own on known
types and never code from the change under review. The host compares the
cases with it; the grader of a differential check compares the reference's
encoded result with the subject's (``grader/differential.py``): one home for
the rule, standard library only.

Equality is strict about types: a tuple is not a list, ``True`` is not
``1``; int and float compare by value; NaN equals NaN.
"""

from __future__ import annotations

import datetime
import decimal
import math
from collections.abc import Callable

TIMEDELTA_UNITS = ("weeks", "days", "hours", "minutes", "seconds", "milliseconds", "microseconds")
DEFAULT_RELATIVE_TOLERANCE = 1e-6
_SHOW_CHARS = 160


class ValueFormatError(ValueError):
    """A value does not follow the typed plain-JSON encoding."""


def _number(value: object, what: str) -> float | int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueFormatError(f"{what} must be a number, not {value!r}")
    return value


def _string(data: dict[str, object], key: str, kind: str) -> str:
    value = data.get(key)
    if not isinstance(value, str):
        raise ValueFormatError(f"a {kind} needs a string {key!r}")
    return value


def _items(data: dict[str, object], kind: str) -> list[object]:
    items = data.get("items")
    if not isinstance(items, list):
        raise ValueFormatError(f"a {kind} needs a list 'items'")
    return [decode(v) for v in items]


def _hashable(values: list[object], kind: str) -> list[object]:
    for v in values:
        try:
            hash(v)
        except TypeError:
            raise ValueFormatError(f"a {kind} cannot hold {type(v).__name__} values") from None
    return values


def _timedelta(data: dict[str, object]) -> datetime.timedelta:
    units = {k: _number(v, f"timedelta {k}") for k, v in data.items() if k != "__type__"}
    unknown = sorted(set(units) - set(TIMEDELTA_UNITS))
    if unknown or not units:
        raise ValueFormatError(f"a timedelta takes {', '.join(TIMEDELTA_UNITS)}; got {sorted(units)}")
    try:
        return datetime.timedelta(**units)
    except OverflowError as exc:
        raise ValueFormatError(f"timedelta out of range: {exc}") from None


def _iso(parse: Callable[[str], object], kind: str) -> Callable[[dict[str, object]], object]:
    def decode_iso(data: dict[str, object]) -> object:
        text = _string(data, "iso", kind)
        try:
            return parse(text)
        except ValueError:
            raise ValueFormatError(f"{text!r} is not an ISO {kind}") from None

    return decode_iso


def _decimal(data: dict[str, object]) -> decimal.Decimal:
    text = _string(data, "value", "decimal")
    try:
        return decimal.Decimal(text)
    except decimal.InvalidOperation:
        raise ValueFormatError(f"{text!r} is not a decimal") from None


def _float(data: dict[str, object]) -> float:
    text = data.get("value")
    if text not in ("nan", "inf", "-inf"):
        raise ValueFormatError("a float object holds 'nan', 'inf' or '-inf'")
    return float(str(text))


def _bytes(data: dict[str, object]) -> bytes:
    text = _string(data, "hex", "bytes")
    try:
        return bytes.fromhex(text)
    except ValueError:
        raise ValueFormatError("bytes need an even-length hex string") from None


def _dict(data: dict[str, object]) -> dict[object, object]:
    pairs = data.get("items")
    if not isinstance(pairs, list) or not all(isinstance(p, list) and len(p) == 2 for p in pairs):
        raise ValueFormatError("a dict object needs 'items' as a list of [key, value] pairs")
    keys = _hashable([decode(p[0]) for p in pairs], "dict key")
    return dict(zip(keys, (decode(p[1]) for p in pairs), strict=True))


_DECODERS: dict[str, Callable[[dict[str, object]], object]] = {
    "timedelta": _timedelta,
    "datetime": _iso(datetime.datetime.fromisoformat, "datetime"),
    "date": _iso(datetime.date.fromisoformat, "date"),
    "time": _iso(datetime.time.fromisoformat, "time"),
    "decimal": _decimal,
    "float": _float,
    "bytes": _bytes,
    "complex": lambda d: complex(_number(d.get("real"), "real"), _number(d.get("imag"), "imag")),
    "tuple": lambda d: tuple(_items(d, "tuple")),
    "list": lambda d: _items(d, "list"),
    "set": lambda d: frozenset(_hashable(_items(d, "set"), "set")),
    "frozenset": lambda d: frozenset(_hashable(_items(d, "frozenset"), "frozenset")),
    "dict": _dict,
}


def decode(data: object) -> object:
    """Turn plain JSON in the typed encoding into Python values; raise ValueFormatError if it is not."""
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if isinstance(data, list):
        return [decode(v) for v in data]
    if isinstance(data, dict):
        if not all(isinstance(k, str) for k in data):
            raise ValueFormatError("object keys must be strings")
        if "__type__" not in data:
            return {k: decode(v) for k, v in data.items()}
        kind = data["__type__"]
        decoder = _DECODERS.get(kind) if isinstance(kind, str) else None
        if decoder is None:
            raise ValueFormatError(f"unknown __type__ {kind!r}; known: {', '.join(sorted(_DECODERS))}")
        return decoder(data)
    raise ValueFormatError(f"{type(data).__name__} is not a JSON value")


def _as_number(value: object) -> int | float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value


_Seq = list[object] | tuple[object, ...]


def _sequences(expected: object, actual: object) -> tuple[_Seq, _Seq] | None:
    """Return both values when they are sequences of the same type (list or tuple)."""
    if not (isinstance(expected, (list, tuple)) and isinstance(actual, (list, tuple))):
        return None
    return (expected, actual) if type(expected) is type(actual) else None


def equal(expected: object, actual: object) -> bool:
    """Compare two decoded values strictly by type and value."""
    e_num, a_num = _as_number(expected), _as_number(actual)
    if e_num is not None and a_num is not None:
        if isinstance(e_num, float) and isinstance(a_num, float) and math.isnan(e_num):
            return math.isnan(a_num)
        return e_num == a_num
    if type(expected) is not type(actual):
        return False
    if (pair := _sequences(expected, actual)) is not None:
        return len(pair[0]) == len(pair[1]) and all(equal(e, a) for e, a in zip(*pair, strict=True))
    if isinstance(expected, dict) and isinstance(actual, dict):
        return expected.keys() == actual.keys() and all(equal(v, actual[k]) for k, v in expected.items())
    return bool(expected == actual)


def approx_equal(expected: object, actual: object, tolerance: float | None) -> bool:
    """Compare numbers (or timedeltas, or lists/tuples of them) within ``tolerance``.

    ``tolerance`` is absolute (seconds for a timedelta); without one, the
    difference may be at most a millionth of the expected value.
    """
    if isinstance(expected, datetime.timedelta) and isinstance(actual, datetime.timedelta):
        return approx_equal(expected.total_seconds(), actual.total_seconds(), tolerance)
    e_num, a_num = _as_number(expected), _as_number(actual)
    if e_num is not None and a_num is not None:
        if not (math.isfinite(e_num) and math.isfinite(a_num)):
            return equal(expected, actual)
        allowed = tolerance if tolerance is not None else DEFAULT_RELATIVE_TOLERANCE * abs(e_num)
        return abs(a_num - e_num) <= allowed
    if (pair := _sequences(expected, actual)) is not None:
        return len(pair[0]) == len(pair[1]) and all(
            approx_equal(e, a, tolerance) for e, a in zip(*pair, strict=True)
        )
    return False


def show(value: object) -> str:
    """Return a short, printable rendering of a decoded value for a failure message."""
    text = repr(value)
    return text if len(text) <= _SHOW_CHARS else text[: _SHOW_CHARS - 1] + "…"
