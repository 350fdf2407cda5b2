"""A test's built-in iterator in the change's hands: its items many to a request, its state exact.

The change's code iterating what a test handed it - ``iter(range(10**5))``,
``reversed(items)``, ``iter(words)`` - would ask the grader for each item.
For the built-in iterators over a built-in sequence
(``protocol.SEQUENCE_ITERATORS``) the grader lends the items ahead instead,
read from the sequence without advancing the iterator (``Lent.ahead``), and
the subject serves ``next()`` from them. The test's iterator is advanced by
what the change actually took (``Lent.settle``) before the grader does
anything else with a message from the subject - before a test's callback
runs, before a request's answer reaches the test - so whatever a test's
code sees of the iterator (``next(it)``, its length hint, its pickle) is
what one process shows. Nothing changes the sequence meanwhile: only the
change's code runs, and it reaches the test's objects only by messages,
each of which settles first. The subject's word on what it took is bounded
by what it was lent.

What is lent goes encoded, as each item would cross alone, and stops where
the answer would grow past a quarter of the channel's cap (items that cross
alone may not cross together) or before an item that cannot cross: next()
meets that one for real, as it would asked one at a time.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ..channel import wire
from ..channel.protocol import SEQUENCE_ITERATORS

SEQUENCES = (list, tuple, str, bytes, bytearray, range)
MAX_LENT = 4096
# What one answer's lent items may fill of a message (the first item always goes, as it would alone).
BUDGET = wire.MAX_MESSAGE // 4


def _same(value: object) -> Any:
    return value


class Lent:
    """What was lent ahead of each test iterator, by the number the subject knows it by."""

    def __init__(self) -> None:
        self._out: dict[int, tuple[object, int, bool]] = {}
        self._lock = threading.Lock()

    def ahead(
        self, number: int, iterator: object, size: object, encode: Callable[[object], Any] = _same
    ) -> dict[str, Any]:
        """Up to ``size`` next items of ``iterator``, encoded, read without advancing it; ``end``: no more.

        An iterator whose sequence cannot be read so (a list subclass's), or whose next item cannot
        cross, gives its next item for real, as ``next()`` would, with nothing lent.
        """
        count = min(size, MAX_LENT) if type(size) is int and size > 0 else 1
        peeked = _peek(iterator, count) if type(iterator) in SEQUENCE_ITERATORS else None
        lent: list[Any] = []
        end = False
        if peeked is not None:
            lent = _encoded(peeked[0], encode)
            end = peeked[1] and len(lent) == len(peeked[0])
        with self._lock:
            self._out.pop(number, None)
            if lent or end:
                self._out[number] = (iterator, len(lent), end)
        if lent or end:
            return {"items": lent, "end": end}
        try:
            item = next(iterator)  # type: ignore[call-overload]
        except StopIteration:
            return {"items": [], "end": True}
        return {"items": [encode(item)], "end": False}  # what cannot cross raises here, as next()'s would

    def settle(self, took: object) -> None:
        """Advance each lent iterator by what the change took of it (``[number, taken, past the end]``)."""
        if not isinstance(took, list) or not self._out:
            return
        for entry in took:
            if not (isinstance(entry, list) and len(entry) == 3 and type(entry[0]) is int):
                continue
            number, taken, past = entry
            with self._lock:
                found = self._out.pop(number, None)
            if found is None or type(taken) is not int:
                continue
            iterator, lent, end = found
            taken = max(0, min(taken, lent))
            for _ in range(taken + (1 if past is True and end and taken == lent else 0)):
                next(iterator, None)  # type: ignore[call-overload]


def _encoded(items: list[Any], encode: Callable[[object], Any]) -> list[Any]:
    """``items`` encoded, up to the budget and up to the first one that cannot cross."""
    out: list[Any] = []
    weight = 0
    for item in items:
        try:
            encoded = encode(item)
        except Exception:  # refused (a test's frame, code, module): next() meets it for real
            break
        weight += wire.weight(encoded)
        if out and weight > BUDGET:
            break
        out.append(encoded)
    return out


def _peek(iterator: Any, count: int) -> tuple[list[Any], bool] | None:
    """The next ``count`` items and whether the sequence ends there; None if it cannot be read so."""
    reduced = iterator.__reduce__()
    if len(reduced) == 2 and type(reduced[1]) is tuple and reduced[1] in (((),), ([],), ("",)):
        return [], True  # exhausted: its sequence already let go
    if len(reduced) != 3:
        return None
    maker, args, index = reduced
    sequence: Any = args[0] if type(args) is tuple and len(args) == 1 else None
    if type(sequence) not in SEQUENCES or type(index) is not int:
        return None
    if maker is reversed:  # list_reverseiterator: index counts down to 0
        left = index + 1 if 0 <= index < len(sequence) else 0
        taken = min(count, left)
        return [sequence[index - i] for i in range(taken)], taken == left
    # One more than asked tells whether the end is there: len() of a range past sys.maxsize raises.
    found = list(sequence[index : index + count + 1]) if index >= 0 else []
    return found[:count], len(found) <= count
