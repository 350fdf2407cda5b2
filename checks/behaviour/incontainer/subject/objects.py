"""The subject's objects the grader holds handles to: numbered once, released when the grader drops them."""

from __future__ import annotations

import threading


class Objects:
    """The subject's objects the grader holds handles to, by number; the same object keeps its number."""

    def __init__(self) -> None:
        self.by_id: dict[int, object] = {}
        self._numbers: dict[int, int] = {}
        self._sent: dict[int, int] = {}
        self._next = 0
        self._lock = threading.Lock()

    def number(self, obj: object) -> int:
        """Number ``obj`` for a handle the grader is sent (each send is counted, see ``release``)."""
        with self._lock:
            found = self._numbers.get(id(obj))
            if found is None:
                self._next += 1
                found = self._next
                self.by_id[found] = obj
                self._numbers[id(obj)] = found
            self._sent[found] = self._sent.get(found, 0) + 1
            return found

    def get(self, number: object) -> object:
        if not isinstance(number, int) or number not in self.by_id:
            raise LookupError(f"no object number {number!r}")
        return self.by_id[number]

    def release(self, released: object) -> None:
        """Drop what the grader no longer holds: [number, times its handle was received] each."""
        with self._lock:
            for entry in released if isinstance(released, list) else []:
                if not (isinstance(entry, list) and len(entry) == 2 and all(type(x) is int for x in entry)):
                    continue
                number, seen = entry
                left = self._sent.get(number, 0) - seen
                if left > 0:
                    self._sent[number] = left  # sent again since: a newer handle holds it
                    continue
                self._sent.pop(number, None)
                obj = self.by_id.pop(number, None)
                if obj is not None:
                    self._numbers.pop(id(obj), None)
