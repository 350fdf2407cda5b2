"""A test's built-in iterator in the change's hands: ``next()`` served from items the grader lent ahead.

A stand-in for a test's iterator over a built-in sequence (``seqiter``:
``iter(range(n))``, ``reversed(items)``) asks the grader for its next items
many at a time (``take``, answered by ``grader/readahead.py`` without
advancing the test's iterator) and serves ``next()`` from them. What the
change's code took goes with the next message to the grader, whatever it
is (``settle``: a request's answer, a callback): the grader advances the
test's iterator by exactly that before the test's code can see it, and the
items left over are dropped here - the sequence may change once the test's
code runs - so the next ``next()`` asks again. A batch grows from 16 items
while the change keeps taking them all.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable
from typing import Any

FIRST = 16
MOST = 4096
_MAX_SIZES = 10_000


class _Lent:
    __slots__ = ("end", "items", "past", "taken")

    def __init__(self, items: list[Any], end: bool) -> None:
        self.items = collections.deque(items)
        self.end = end
        self.taken = 0
        self.past = False


class ReadAhead:
    """Items lent ahead of the grader's iterators (by the grader's number), and what was taken of them."""

    def __init__(self, ask: Callable[[object, int], Any]) -> None:
        self._ask = ask
        self._lent: dict[int, _Lent] = {}
        self._sizes: dict[int, int] = {}
        self._lock = threading.Lock()

    def next(self, standin: object, number: int) -> Any:
        """The next item of the grader's iterator ``number`` (``StopIteration`` at its end)."""
        while True:
            with self._lock:
                lent = self._lent.get(number)
                if lent is not None:
                    if lent.items:
                        lent.taken += 1
                        return lent.items.popleft()
                    if lent.end:
                        lent.past = True
                        raise StopIteration
                size = self._sizes.get(number, FIRST)
            # The request settles what was lent before (its message carries what was taken).
            answer = self._ask(standin, size)
            if not (isinstance(answer, dict) and isinstance(answer.get("items"), list)):
                raise TypeError("patchgate: the grader lent items in a form we do not read")
            with self._lock:
                self._lent[number] = _Lent(answer["items"], answer.get("end") is True)
                if len(self._sizes) < _MAX_SIZES or number in self._sizes:
                    self._sizes[number] = min(size * 2, MOST)

    def settle(self) -> list[list[Any]] | None:
        """What the change took of each lent iterator since the last message; the rest is dropped."""
        if not self._lent:
            return None
        with self._lock:
            lent, self._lent = self._lent, {}
            for number, found in lent.items():
                if found.items:  # some went unused: the next batch starts small again
                    self._sizes.pop(number, None)
        return [[number, found.taken, found.past] for number, found in lent.items()]
