"""A test's containers handed to the change: one object on each side, kept in step between messages.

In one process, the list a test hands to ``lib.extend_into(items)`` is the
list the test reads afterwards, a dict handed to ``cachetools.cached(cache)``
fills as the wrapper runs, long after the call that took it, and
``lib.identity(items) is items``. Across the two trust domains a container
crosses by value, and all three were lost.

A *kept* container is a test's exact ``list``, ``dict``, ``set``,
``bytearray`` or ``collections.defaultdict`` (its factory with it) handed
as an argument of a call (the grader decides which: ``grader/kept.py``
refuses the process's own state, ``sys.path`` or a
module's namespace). It is numbered by the grader and crosses once with its
contents (``{"__type__": "kept", "n": n, "kind": ..., "value": ...}``); from
then on both sides name it by its number alone, so the subject holds one
object for it however often it is handed over (``is`` holds there), and a
result that *is* that object comes back as the test's own.

Each message, either way, carries the contents of every kept container its
sender changed since it last sent or received them (``"kept": {"set":
{n: contents}}``): a change is seen by identity, item by item (never by
asking an item's ``__eq__``: on the grader's side that could be a request).
What the receiver writes is decoded by the codec like any answer, and
written into the same object in place. The containers a kept one holds are
kept too (``grader/kept.py`` ``candidates``); a change *inside* an item that
is not itself kept (past ``MAX_KEPT``) is not seen.

The subject lets go of a container nothing of its own holds any more after a
request (a call that only read its argument) and says so (``"drop"``); the
grader forgets every kept container when a test ends (``"reset"``). Numbers
are never reused, so a message about one the other side has forgotten is
ignored.
"""

from __future__ import annotations

import collections
import operator
import sys
import threading
from collections.abc import Callable
from typing import Any

from . import codec
from .protocol import KEPT

FIELD = "kept"  # the message field
KINDS: dict[str, type] = {
    "list": list, "dict": dict, "set": set, "bytearray": bytearray, "defaultdict": collections.defaultdict,
}  # fmt: skip
_DICTS = (dict, collections.defaultdict)
_KIND_OF: dict[type, str] = {t: k for k, t in KINDS.items()}
# Bounds: how many containers one test keeps at once, and how large one may be (each message compares
# every kept container with what was last sent, so both bound the cost a message carries).
MAX_KEPT = 128
MAX_ITEMS = 10_000
# sys.getrefcount of a kept object that only the registry holds, read in the loop that lets go: the
# registry's entry, the loop's local name and getrefcount's own argument (``_drop_unheld``).
_ONLY_OURS = 3

Snapshot = Any
Encoding = Callable[[], codec.Encoder]


def keepable(value: object) -> bool:
    """Whether ``value``'s type may be kept (exactly one of ``KINDS``) and it is small enough."""
    kind = type(value)
    return kind in _KIND_OF and len(value) <= MAX_ITEMS  # type: ignore[arg-type]


def _snapshot(value: Any) -> Snapshot:
    kind = type(value)
    if kind in _DICTS:
        return (list(value), list(value.values()))
    if kind is bytearray:
        return bytes(value)
    return list(value)


def _same(value: Any, snapshot: Snapshot) -> bool:
    """Whether ``value`` holds the very objects it held at ``snapshot`` (identity: no item is asked)."""
    kind = type(value)
    if kind is bytearray:
        return bool(value == snapshot)
    if kind in _DICTS:
        keys, values = snapshot
        return (
            len(value) == len(keys)
            and all(map(operator.is_, value, keys))
            and all(map(operator.is_, value.values(), values))
        )
    return len(value) == len(snapshot) and all(map(operator.is_, value, snapshot))


def _fill(target: Any, contents: object) -> bool:
    """Write ``contents`` into ``target`` in place; False (nothing written) when they do not fit its kind."""
    kind = type(target)
    fits = _FITS.get(kind)
    if fits is None or type(contents) not in fits:
        return False
    if kind is list or kind is bytearray:
        target[:] = contents
    else:
        target.clear()
        target.update(contents)
    return True


# What each kept kind takes as its new contents (what the codec decodes its encoding to).
_FITS: dict[type, tuple[type, ...]] = {
    list: (list,),
    dict: (dict,),
    collections.defaultdict: (dict,),
    set: (set, frozenset),
    bytearray: (bytes,),
}


def contents(encoder: codec.Encoder, value: object, depth: int = 0) -> Any:
    """``value``'s contents as the codec writes its base type (a tag for ``value`` itself is not asked)."""
    return codec.encode_base(encoder, value, depth)


class Kept:
    """One side's kept containers, by the grader's numbers."""

    def __init__(self) -> None:
        # n -> [the object, its contents as last sent or received, whether the subject has it]
        self._entries: dict[int, list[Any]] = {}
        self._numbers: dict[int, int] = {}  # id(object) -> n
        self._next = 1
        self._dropped: list[int] = []
        self._reset = False
        self._lock = threading.Lock()

    def __bool__(self) -> bool:
        return bool(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def holds(self, value: object) -> bool:
        return id(value) in self._numbers and self._entries[self._numbers[id(value)]][0] is value

    # -- the grader's side: which containers are kept -------------------------------------------

    def keep(self, value: object) -> None:
        """Keep ``value`` (the grader: a test's container handed as an argument; checked by the caller)."""
        with self._lock:
            if self.holds(value) or len(self._entries) >= MAX_KEPT:
                return
            n, self._next = self._next, self._next + 1
            self._entries[n] = [value, None, False]
            self._numbers[id(value)] = n

    def reset(self) -> None:
        """Forget every kept container (a test ended); the next message tells the subject."""
        with self._lock:
            self._entries.clear()
            self._numbers.clear()
            self._reset = True

    # -- both sides: encoding and decoding -------------------------------------------------------

    def tag(self, value: object, encoder: codec.Encoder, depth: int = 0) -> dict[str, Any] | None:
        """The codec's hook: a kept container by its number (with its contents the first time)."""
        n = self._numbers.get(id(value))
        if n is None:
            return None
        entry = self._entries.get(n)
        if entry is None or entry[0] is not value:
            return None
        if entry[2]:
            return {codec.TYPE: KEPT, "n": n}
        entry[1] = _snapshot(value)
        entry[2] = True  # first: a container that holds itself names itself by number inside
        # Sent only if the message is: a pass given up on (a later argument too large) takes it back.
        encoder.undo.append(lambda: entry.__setitem__(2, False))
        try:
            written = contents(encoder, value, depth)
        except BaseException:
            entry[2] = False
            raise
        found = {codec.TYPE: KEPT, "n": n, "kind": _KIND_OF[type(value)], "value": written}
        if type(value) is collections.defaultdict:  # what a missing key is made by (a test's callable)
            found["factory"] = encoder(value.default_factory, depth + 1)
        return found

    def resolve(self, tag: dict[str, Any], decode: Callable[[Any], Any], *, make: bool) -> object:
        """The object a kept tag names; ``make`` (the subject): one is made the first time it crosses."""
        n = tag.get("n")
        if type(n) is not int:
            raise ValueError("a kept container needs its number")
        entry = self._entries.get(n)
        if not make and "value" in tag:
            raise ValueError("only the grader introduces a kept container")
        if entry is None:
            kind = KINDS.get(str(tag.get("kind")))
            if not make or kind is None or "value" not in tag:
                raise ValueError(f"no kept container {n}")
            made = kind()
            if kind is collections.defaultdict and "factory" in tag:
                factory = decode(tag["factory"])
                made.default_factory = factory if callable(factory) else None
            with self._lock:
                # Snapshot empty: decoding its contents can ask the other side (a test's class the
                # subject describes), and that message must see nothing changed in it yet.
                entry = self._entries[n] = [made, _snapshot(made), True]
                self._numbers[id(made)] = n
        if "value" in tag:  # made before its contents are read: a container that holds itself resolves
            _fill(entry[0], decode(tag["value"]))
            entry[1] = _snapshot(entry[0])
        return entry[0]

    # -- both sides: what a message carries ------------------------------------------------------

    def outbound(self, message: dict[str, Any], encoding: Encoding, *, let_go: bool = False) -> None:
        """Add what this side changed in kept containers (and forgot) since the last message.

        ``let_go`` (the subject): then let go of what nothing but this registry holds any more (a call
        that only read its argument; a callback's result the change dropped), its last changes written
        first. A count of references is exact: what nothing else holds, nothing can reach again.
        """
        if not self._entries and not self._dropped and not self._reset:
            return
        changed = self._changes(encoding)
        if let_go:
            self._drop_unheld()
        field: dict[str, Any] = {}
        if changed:
            field["set"] = changed
        with self._lock:
            if self._dropped:
                field["drop"], self._dropped = self._dropped, []
            if self._reset:
                field["reset"], self._reset = True, False
        if field:
            message[FIELD] = field

    def _changes(self, encoding: Encoding) -> dict[str, Any]:
        # A method of its own: its loop's names must not outlive it (``_drop_unheld`` counts references).
        changed: dict[str, Any] = {}
        for n, entry in list(self._entries.items()):
            value, snapshot, sent = entry
            if not sent or _same(value, snapshot):
                continue
            encoder = encoding()
            try:
                changed[str(n)] = contents(encoder, value)
            except codec.Unserializable:
                for undo in encoder.undo:  # a container first tagged inside it never crossed either
                    undo()
                continue  # grown past what crosses: the other side keeps what it had
            entry[1] = _snapshot(value)
        return changed

    def inbound(self, message: dict[str, Any], decode: Callable[[Any], Any]) -> None:
        """Write what the other side changed into our objects; forget what it forgot."""
        field = message.get(FIELD)
        if not isinstance(field, dict):
            return
        if field.get("reset") is True:
            with self._lock:
                self._entries.clear()
                self._numbers.clear()
        written = field.get("set")
        for key, data in written.items() if isinstance(written, dict) else []:
            number = key.isascii() and key.isdigit() if isinstance(key, str) else False
            entry = self._entries.get(int(key)) if number else None
            if entry is None:
                continue  # one this side forgot, or never had: nothing of ours is named by it
            try:
                if _fill(entry[0], decode(data)):
                    entry[1] = _snapshot(entry[0])
            except (ValueError, LookupError, TypeError):
                continue
        # Last: a container's final contents come in the same message that says it was let go of.
        drop = field.get("drop")
        for n in drop if isinstance(drop, list) else []:
            with self._lock:
                entry = self._entries.pop(n, None) if type(n) is int else None
                if entry is not None:
                    self._numbers.pop(id(entry[0]), None)

    def _drop_unheld(self) -> None:
        with self._lock:
            for n, entry in list(self._entries.items()):
                value = entry[0]
                if sys.getrefcount(value) <= _ONLY_OURS:
                    del self._entries[n]
                    self._numbers.pop(id(value), None)
                    self._dropped.append(n)
                del value
