"""What one call gave, as either side observed it, and when two observations agree.

An observation is a small JSON object: ``{"status": "returned", "value":
<encoded>}``, ``{"status": "raised", "exception": codec.describe(...)}``,
or a status saying there was no answer (``timeout``, ``unserializable``,
``import_error``). The grader of a differential check observes the reference
in its own process and the change through the subject; whether they agree is
decided here, by the cases' rules (``values.equal``: types are strict, int
and float compare by value), and again by the host on what the grader
reports. Raising where the reference raises, an exception of the reference's
class (by name) or of a subclass of it, is agreement.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .values import ValueFormatError, decode, equal, show

_TEXT_CHARS = 200


def exception_names(observation: Mapping[str, Any]) -> list[str]:
    """The names of the raised exception's classes, most derived first (empty when malformed)."""
    exc = observation.get("exception")
    mro = exc.get("mro") if isinstance(exc, dict) else None
    return [m for m in mro if isinstance(m, str)] if isinstance(mro, list) else []


def agree(reference: Mapping[str, Any], head: Mapping[str, Any]) -> bool:
    """Whether the change's observation agrees with the reference's."""
    if reference.get("status") == "returned":
        if head.get("status") != "returned" or "value" not in head or "value" not in reference:
            return False
        try:
            return equal(decode(reference["value"]), decode(head["value"]))
        except ValueFormatError:
            return False
    if reference.get("status") == "raised":
        names = exception_names(reference)
        return head.get("status") == "raised" and bool(names) and names[0] in exception_names(head)
    # The reference gave no answer: nothing agrees with that (the grader reports it as the suite's fault).
    return False


def _text(value: object) -> str:
    text = value if isinstance(value, str) else ""
    text = "".join(ch if ch.isprintable() else " " for ch in text)
    return text if len(text) <= _TEXT_CHARS else text[: _TEXT_CHARS - 1] + "…"


def describe(observation: Mapping[str, Any]) -> str:
    """Say what a call did, in a few words: ``returned datetime.timedelta(0)``, ``raised ValueError``."""
    status = observation.get("status")
    if status == "returned":
        try:
            return f"returned {show(decode(observation.get('value')))}"
        except ValueFormatError:
            return "returned a malformed value"
    if status == "raised":
        exc = observation.get("exception")
        name = _text(exc.get("type")) if isinstance(exc, dict) else ""
        return f"raised {name or 'an exception'}"
    if status == "timeout":
        return "did not return in time"
    if status == "gone":
        return "stopped answering (the code under test's process ended)"
    if status == "unserializable":
        return f"returned a value that cannot be compared ({_text(observation.get('detail'))})"
    if status == "import_error":
        exc = observation.get("exception")
        name = _text(exc.get("type")) if isinstance(exc, dict) else "an error"
        return f"could not be imported ({name})"
    return "gave no answer"


def call_text(function: str, args: object, kwargs: object) -> str:
    """Show a call with its decoded arguments: ``parse_duration('0x')``."""
    try:
        positional = decode(args) if isinstance(args, list) else []
        named = decode(kwargs) if isinstance(kwargs, dict) else {}
    except ValueFormatError:
        return f"{function}(...)"
    shown = [repr(a) for a in positional] if isinstance(positional, list) else []
    shown += [f"{k}={v!r}" for k, v in (named.items() if isinstance(named, dict) else [])]
    text = f"{function}({', '.join(shown)})"
    return _text(text)
