"""Iterating a handle: one request per item, or many items to a request where nothing runs between them.

``for x in handle`` asks the subject for one item at a time: the loop's body
is the test's code, and the change's iterator must not run ahead of it (a
generator's side effects, a list the loop mutates, an iterator the test
stops early). Where the instruction consuming the handle takes it whole
(``consumers.whole``: ``list(h)``, ``sorted(h)``, ``[*h]``...), the items
come in batches (the subject's ``take``): the subject runs the iterator as
far as it would in one process - to its end, or to the exception it
raises, which the consumer meets at the same item - and nothing of
anyone's runs between two items on either side.

How the consumer is recognised: CPython's ``list_extend`` and
``PySequence_Tuple`` call ``iter(x)`` and then ``len(x)`` (or
``x.__length_hint__()``) on the very object they were handed, from one
instruction of one frame, before the first item. A handle's ``__iter__``
notes where it was called (``noted``); its ``__len__`` or
``__length_hint__`` checks that it is that instruction, on that handle, and
that the instruction is one of ``consumers.whole``'s (``hinted``), and the
iterator is then fetched whole. An object of the change's with a
``__len__`` of its own has it run, first, in the request that brings the
first batch: the order of the change's calls is the one-process order.
The same pattern is what C code nested in such an instruction makes on an
item (``bytes()`` applied by ``map()`` inside ``list()``): the one case
left where a batch could run an iterator further than one process would
(docs/behaviour.md, "Round trips").
"""

from __future__ import annotations

import collections
import threading
import types
import weakref
from typing import Any, Protocol

from . import consumers

# Items asked for per request (the subject also stops at its byte budget, at the iterator's end and at
# the first exception).
BATCH = 4096
NOTHING: Any = object()  # following's "no batch here"


class Taker(Protocol):
    """The grader's end of the channel, as iteration uses it (``bridge.Bridge``)."""

    batches: dict[int, Batch]

    def request(self, op: str, **fields: Any) -> Any: ...


class _Noted(threading.local):
    """Where this thread last called ``iter()`` on a handle, and what came back."""

    def __init__(self) -> None:
        self.iterable: weakref.ref[Any] | None = None
        self.iterator: weakref.ref[Any] | None = None
        # The frame itself, not its id: a frame of the same code started after this one ended can
        # have the same id (each(iter, xs), then each(len, xs) - no list()'s pair of calls). Held
        # only for an instruction that takes its operand whole, until the thread's next request.
        self.frame: types.FrameType | None = None
        self.lasti = -1


_NOTED = _Noted()


def noted(iterable: object, iterator: object, frame: types.FrameType) -> None:
    """Note that ``frame``'s current instruction called ``iter(iterable)`` and got ``iterator``."""
    forget()
    if not consumers.whole(frame):  # a for loop, next(iter(x)), zip(): never list()'s pair of calls
        return
    try:
        refs = weakref.ref(iterable), weakref.ref(iterator)
    except TypeError:  # a handle of a value type that takes no weak reference: never fetched whole
        return
    _NOTED.iterable, _NOTED.iterator = refs
    _NOTED.frame, _NOTED.lasti = frame, frame.f_lasti


def forget() -> None:
    """Drop this thread's note (each request does: list() asks for the length before any request)."""
    if _NOTED.frame is not None:
        _NOTED.iterable = _NOTED.iterator = _NOTED.frame = None


def hinted(iterable: object, frame: types.FrameType) -> object | None:
    """The iterator to fetch whole, when ``len(iterable)`` or its length hint is ``list()``'s own call.

    That is: the same instruction of the same frame called ``iter(iterable)`` last on this thread,
    with no request since, and the instruction takes its operand whole.
    """
    ref, iterator, noted_in, lasti = _NOTED.iterable, _NOTED.iterator, _NOTED.frame, _NOTED.lasti
    forget()
    if ref is None or iterator is None or ref() is not iterable:
        return None
    if frame is not noted_in or frame.f_lasti != lasti:
        return None
    found = iterator()
    return found if found is not None and consumers.whole(frame) else None


class Batch:
    """Items of one iterator handle fetched ahead for the instruction taking it whole."""

    __slots__ = ("code", "end", "fetching", "frame", "items", "lasti", "lock")

    def __init__(self, frame: types.FrameType) -> None:
        self.items: collections.deque[Any] = collections.deque()
        self.end: BaseException | None = None
        self.frame, self.lasti, self.code = id(frame), frame.f_lasti, frame.f_code
        # Reentrant: while a batch is fetched, the change's iterator may call a test's callback that
        # uses the same handle, on this thread (it then goes one item at a time: ``fetching``).
        self.lock = threading.RLock()
        self.fetching = False

    def add(self, answer: object) -> None:
        if not isinstance(answer, dict) or not isinstance(answer.get("items"), list):
            raise TypeError("patchgate: the code under test answered a batch in a form we do not read")
        self.items.extend(answer["items"])
        end = answer.get("end")
        if isinstance(end, BaseException):
            self.end = end
        elif end is not None:
            raise TypeError("patchgate: the code under test ended a batch with something not an exception")
        elif not answer["items"]:
            # Ours answers at least one item or the exception that ended them: a consumer given nothing
            # would ask again for ever.
            raise TypeError("patchgate: the code under test answered a batch with nothing in it")

    def consumer(self, frame: types.FrameType) -> bool:
        """Whether ``frame`` is still at the instruction the items were fetched for."""
        return id(frame) == self.frame and frame.f_lasti == self.lasti and frame.f_code is self.code


def start(bridge: Taker, iterator: int, frame: types.FrameType) -> None:
    """Fetch ``iterator``'s items whole from its next item on (the consumer is ``frame``'s instruction)."""
    left = bridge.batches.get(iterator)
    if left is None:
        bridge.batches[iterator] = Batch(frame)
        return
    with left.lock:  # items fetched for a consumer cut short come first, in their order
        if not left.fetching:  # (a consumer in a callback of the fetch itself goes item by item)
            left.frame, left.lasti, left.code = id(frame), frame.f_lasti, frame.f_code


def length_and_start(bridge: Taker, iterable: int, iterator: int, frame: types.FrameType) -> Any:
    """``len(iterable)``, then the first batch of ``iterator``'s items, in one request; return the length."""
    answer = bridge.request("take", obj=iterator, size=BATCH, len=iterable)
    batch = Batch(frame)
    batch.add(answer)
    bridge.batches[iterator] = batch
    return answer.get("len")


def following(bridge: Taker, iterator: int, frame: types.FrameType) -> Any:
    """The next item of ``iterator``'s batch for ``frame``'s instruction; ``NOTHING``: ask for one item."""
    batch = bridge.batches.get(iterator)
    if batch is None:
        return NOTHING
    with batch.lock:
        while True:
            if batch.items:
                return batch.items.popleft()
            if batch.end is not None:
                bridge.batches.pop(iterator, None)
                raise batch.end
            if not batch.consumer(frame):
                # A test's callback, run while the batch is fetched, asks the subject itself: the
                # change's iterator is where that callback's next() would find it in one process.
                if not batch.fetching:
                    bridge.batches.pop(iterator, None)
                return NOTHING
            batch.fetching = True
            try:
                batch.add(bridge.request("take", obj=iterator, size=BATCH))
            except BaseException:
                bridge.batches.pop(iterator, None)
                raise
            finally:
                batch.fetching = False
