"""An iterator's items many to a request (``take``), for a grader consumer that takes them whole.

The grader asks only where nothing runs between two items on its side
(``grader/iteration.py``), so running the change's iterator here item after
item, encoding each, is what one process would do: ``next`` in the same
order, stopping at the iterator's end or at the exception it raises, which
goes back in its place for the consumer to meet at the same item. A batch
is bounded by its count and by its size on the wire, well under the
channel's cap; an item too large to share a message with those before it
is held for the next request on its iterator (``Held``), and so is an
exception too large to share one with the items before it (``Raised``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ..channel import codec, wire
from .cases import CallTimeout

MAX_ITEMS = 65_536
# What a batch may fill of a message before it stops, and what one may never cross.
BUDGET = wire.MAX_MESSAGE // 4
_ROOM = wire.MAX_MESSAGE - (1 << 20)


class Raised:
    """An exception the iterator raised, held for the next request on it (it is raised there)."""

    __slots__ = ("exc",)

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


class Held:
    """Encoded items taken from an iterator that did not fit in the answer they were taken for."""

    def __init__(self) -> None:
        self._items: dict[int, tuple[object, Any]] = {}
        self._lock = threading.Lock()

    def hold(self, iterator: object, encoded: Any) -> None:
        with self._lock:
            self._items[id(iterator)] = (iterator, encoded)

    def pop(self, iterator: object) -> tuple[bool, Any]:
        """(True, the held item) for ``iterator``, or (False, None)."""
        if not self._items:
            return False, None
        with self._lock:
            found = self._items.pop(id(iterator), None)
        return (False, None) if found is None or found[0] is not iterator else (True, found[1])


def take(
    iterator: object,
    size: object,
    held: Held,
    encode: Callable[[object], Any],
    raised: Callable[[BaseException], dict[str, Any]],
) -> dict[str, Any]:
    """Up to ``size`` items of ``iterator``, encoded, and the exception that ended them (``end``)."""
    count = min(size, MAX_ITEMS) if type(size) is int and size > 0 else 1
    items: list[Any] = []
    weight = 0
    waiting, first = held.pop(iterator)
    if type(first) is Raised:
        return {"items": [], "end": {codec.TYPE: "sexc", **raised(first.exc)}}
    if waiting:
        items.append(first)
        weight = wire.weight(first)
    end = None
    while len(items) < count and weight < BUDGET:
        try:
            item = next(iterator)  # type: ignore[call-overload]
        except CallTimeout:
            raise  # the request's deadline: the whole request fails, as one item's would
        except BaseException as exc:  # the change's iterator may raise anything; it ends the batch there
            end = {codec.TYPE: "sexc", **raised(exc)}
            if items and weight + wire.weight(end) > _ROOM:  # it crosses alone, in the next answer
                held.hold(iterator, Raised(exc))
                end = None
            break
        encoded = encode(item)
        more = wire.weight(encoded)
        if items and weight + more > _ROOM:
            held.hold(iterator, encoded)
            break
        items.append(encoded)
        weight += more
    return {"items": items, "end": end}
