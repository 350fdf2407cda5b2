"""Iterating the change's objects: many items to a request where the consumer takes them whole.

Each scenario runs twice - on the module imported here (one process, the
reference) and through the bridge against a real subject process - and the
order of the change's side effects (its generators' yields, its ``__iter__``
and ``__len__``) must be the same, as must what the test sees. The request
counts show where the batches are in use.
"""

from __future__ import annotations

import itertools
import operator
import sys
import threading
import types
from collections.abc import Callable
from typing import Any

import pytest

from checks.behaviour.incontainer.grader.bridge import Bridge
from checks.behaviour.incontainer.grader.iteration import Batch
from tests.checks.behaviour.incontainer.grader.test_classes import requests
from tests.checks.behaviour.incontainer.test_bridge_shapes import Load, load

pytestmark = pytest.mark.slow
__all__ = ["load"]

LIB = """
log = []

def events():
    out = list(log)
    log.clear()
    return out

def gen(n, fail_at=None):
    for i in range(n):
        if i == fail_at:
            log.append(f"raise {i}")
            raise Boom(f"boom at {i}")
        log.append(f"yield {i}")
        yield i
    log.append("end")

def forever():
    i = 0
    while True:
        log.append(f"yield {i}")
        yield i
        i += 1

def words(n, size=1):
    for i in range(n):
        log.append(f"word {i}")
        yield str(i % 10) * size

def sized(*sizes):
    for size in sizes:
        yield "y" * size

def bytes_then(bad):
    yield 1
    yield 2
    log.append("bad")
    yield bad
    log.append("after bad")
    yield 3

def note(x):
    log.append(f"note {x}")

class Calling:
    # An iterator that calls back into the test at each item.

    def __init__(self, n, callback):
        self.i = 0
        self.n = n
        self.callback = callback

    def __iter__(self):
        return self

    def __next__(self):
        if self.i >= self.n:
            raise StopIteration
        self.i += 1
        log.append(f"next {self.i}")
        self.callback(self.i)
        return self.i

def then_raise(size, text):
    log.append("large")
    yield "y" * size
    log.append("raise")
    raise Boom("b" * text)

class Boom(Exception):
    pass

class Item:
    def __init__(self, i):
        self.i = i

def objects(n):
    for i in range(n):
        log.append(f"object {i}")
        yield Item(i)

class Counted:
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        log.append("iter")
        return gen(self.n)

    def __len__(self):
        log.append("len")
        return self.n

class Bag(list):
    def add(self, x):
        log.append(f"add {x}")
        self.append(x)

def bag(*items):
    return Bag(items)
"""


def bare() -> Any:
    """The same module imported in this process: what one process does."""
    module = types.ModuleType("lib_bare")
    exec(compile(LIB, "lib_bare.py", "exec"), module.__dict__)  # noqa: S102 - the test's own source
    return module


def both(load: Load, scenario: Callable[[Any], Any]) -> tuple[Any, Any]:
    """Run ``scenario`` on the module here and through the bridge; return both (results, events)."""
    here = bare()
    expected = (scenario(here), here.events())
    lib = load(LIB)
    found = (scenario(lib), lib.events())
    return expected, found


def bridge_of(lib: Any) -> Bridge:
    found: Bridge = object.__getattribute__(lib, "_pg_bridge")
    return found


def spread(*items: Any) -> tuple[Any, ...]:
    return items


def whole_consumers(lib: Any) -> Any:
    a, *rest = lib.gen(4)
    return [
        list(lib.gen(3)),
        sorted(lib.gen(3), reverse=True),
        tuple(lib.gen(2)),
        "-".join(lib.words(3)),
        [*lib.gen(2), *lib.gen(1)],
        spread(*lib.gen(2)),  # not taken whole (the callee runs under the same instruction), no matter
        (a, rest),
        list(lib.Counted(2)),
        [item.i for item in list(lib.objects(2))],
    ]


def test_consumers_that_take_an_iterator_whole_see_what_one_process_sees(load: Load) -> None:
    expected, found = both(load, whole_consumers)
    assert found == expected
    events = expected[1]
    assert events[:9] == [*(f"yield {i}" for i in range(4)), "end", "yield 0", "yield 1", "yield 2", "end"]
    # The change's __iter__ runs before its __len__, and both before the first item, as list() calls them.
    assert "iter" in events and events[events.index("iter") :][:3] == ["iter", "len", "yield 0"]


def test_a_large_iterator_taken_whole_comes_in_a_few_requests(load: Load) -> None:
    lib = load(LIB)
    seen = requests(bridge_of(lib))
    assert list(lib.gen(20_000)) == list(range(20_000))
    assert seen.count("take") <= 6 and "op" not in seen  # gen() is one call; iter() of a generator is local
    counted = lib.Counted(10)
    seen.clear()
    assert sorted(counted) == list(range(10))
    # iter() runs the change's __iter__; its __len__ and the items share one request.
    assert seen == ["op", "take"]


def test_an_exception_mid_iteration_surfaces_at_the_same_item(load: Load) -> None:
    def scenario(lib: Any) -> Any:
        numbers = lib.gen(6, fail_at=3)
        with pytest.raises(lib.Boom, match="boom at 3"):
            list(numbers)
        after = list(numbers)  # the generator is finished, as after any exception
        return after

    expected, found = both(load, scenario)
    assert found == expected
    assert expected == ([], ["yield 0", "yield 1", "yield 2", "raise 3"])


def early_stoppers(lib: Any) -> Any:
    out: list[Any] = [3 in lib.gen(10)]
    lib.note("in")
    out.append(any(x > 1 for x in lib.gen(10)))
    lib.note("any")
    out.append(list(zip(range(2), lib.forever(), strict=False)))
    lib.note("zip")
    out.append(list(itertools.islice(lib.forever(), 3)))
    lib.note("islice")
    out.append(next(lib.forever()))
    lib.note("next")
    with pytest.raises(ValueError, match="too many values"):
        _x, _y = lib.gen(5)
    lib.note("unpack")
    for x in lib.forever():
        if x == 2:
            break
    lib.note("break")
    # A chain of the test's takes the change's generator lazily, inside list(): still one at a time.
    out.append(list(itertools.islice(itertools.chain(lib.gen(5)), 2)))
    lib.note("chain")
    return out


def test_consumers_that_may_stop_early_run_the_change_s_iterator_no_further(load: Load) -> None:
    expected, found = both(load, early_stoppers)
    assert found == expected
    assert expected[1][:5] == ["yield 0", "yield 1", "yield 2", "yield 3", "note in"]


def interleaved(lib: Any) -> Any:
    for x in lib.gen(3):
        lib.note(x)
    totals = [sum(lib.gen(3)), min(lib.gen(3)), max(lib.gen(3)), sorted(set(lib.gen(3)))]
    it = iter(lib.gen(3))
    operator.length_hint(it)  # a test's own call of the hint is not list()'s
    totals.append(next(it))
    lib.note("hint")
    bag = lib.bag(0, 1, 2, 3)
    visited = []
    for x in bag:  # the loop changes the change's list as it goes: Python skips an item
        visited.append(x)
        if x == 1:
            bag.remove(x)
    return totals, visited, list(bag)


def test_loops_with_the_test_s_code_between_items_keep_the_one_process_order(load: Load) -> None:
    expected, found = both(load, interleaved)
    assert found == expected
    assert expected[0][1] == [0, 1, 3]
    assert expected[1][:6] == ["yield 0", "note 0", "yield 1", "note 1", "yield 2", "note 2"]


def test_a_name_the_test_binds_to_its_own_function_is_not_taken_for_the_built_in(load: Load) -> None:
    taken: list[Any] = []

    def list(iterable: Any) -> Any:  # the point: a test's own "list"
        for item in iterable:
            taken.append(item)
            if item == 1:
                break
        return taken

    def scenario(lib: Any) -> Any:
        taken.clear()
        return list(lib.gen(5))

    expected, found = both(load, scenario)
    assert found == expected == ([0, 1], ["yield 0", "yield 1"])


def test_bytes_stop_at_a_bad_item_with_the_change_s_generator_no_further(load: Load) -> None:
    def scenario(lib: Any) -> Any:
        with pytest.raises(TypeError):
            bytes(lib.bytes_then("x"))
        buffer = bytearray()
        with pytest.raises(ValueError, match="range"):
            buffer.extend(lib.bytes_then(300))
        return bytes(buffer)

    expected, found = both(load, scenario)
    assert found == expected
    assert expected[1] == ["bad", "bad"]


def test_items_over_the_batch_budget_come_in_more_requests_within_the_channel_cap(load: Load) -> None:
    lib = load(LIB)
    seen = requests(bridge_of(lib))
    # 24 strings of 1 MiB: more than a batch's 4 MiB budget, and than one message's 16 MiB cap.
    words = list(lib.words(24, 1 << 20))
    assert [w[:1] for w in words] == [str(i % 10) for i in range(24)] and {len(w) for w in words} == {1 << 20}
    assert seen.count("take") >= 5
    # A 13 MiB item after others cannot share their message: it comes alone, in order, and none is lost.
    seen.clear()
    sizes = [len(w) for w in list(lib.sized(1 << 20, 1 << 20, 13 << 20, 1, 1))]
    assert sizes == [1 << 20, 1 << 20, 13 << 20, 1, 1]
    assert seen.count("take") == 3  # two small, then the large one alone with the rest


def test_an_item_and_the_exception_after_it_never_make_an_answer_past_the_channel_cap(load: Load) -> None:
    def scenario(lib: Any) -> Any:
        # A 4 MiB item (just under a batch's budget), then an exception carrying 13 MiB: each crosses
        # alone, both in one answer would not (the subject's send failed, ending its main thread).
        with pytest.raises(lib.Boom) as raised:
            list(lib.then_raise((4 << 20) - 64, 13 << 20))
        lib.note("after")
        return len(raised.value.args[0])

    expected, found = both(load, scenario)
    assert found == expected
    assert expected == (13 << 20, ["large", "raise", "note after"])


def test_a_test_s_callback_that_iterates_the_handle_being_taken_whole_sees_what_one_process_does(
    load: Load,
) -> None:
    def scenario(lib: Any) -> Any:
        inner: list[Any] = []

        def callback(i: int) -> None:  # the change's __next__ calls it while list() takes the iterator
            if i == 2:
                inner.append(next(numbers))
            if i == 4:
                inner.append(list(numbers))

        numbers = lib.Calling(7, callback)
        return list(numbers), inner

    found: list[Any] = []
    # Run aside: the grader held the batch's lock across the request, and the callback's next() on
    # the same handle waited for it forever on the same thread.
    worker = threading.Thread(target=lambda: found.append(both(load, scenario)), daemon=True)
    worker.start()
    worker.join(60)
    assert not worker.is_alive(), "the grader wedged"
    (here, _), (there, events) = found[0]
    assert here == there == ([1, 3, 7], [3, [5, 6, 7]])  # __next__ returns self.i after the callback
    assert events == [f"next {i}" for i in range(1, 8)]


def each(f: Any, items: Any) -> Any:
    return list(map(f, items))  # one instruction, whatever f is


def test_len_where_an_earlier_call_of_the_same_line_took_iter_does_not_run_the_iterator(load: Load) -> None:
    def scenario(lib: Any) -> Any:
        counted = lib.Counted(3)
        iterators = each(iter, [counted])
        # A new frame of each() at the same instruction (its id can be the first one's, now freed):
        # len() here is no list()'s, and in one process runs nothing of the generator.
        lengths = each(len, [counted])
        lib.note("len")
        return lengths, next(iterators[0])

    expected, found = both(load, scenario)
    assert found == expected
    assert expected == (([3], 0), ["iter", "len", "note len", "yield 0"])


def test_a_batch_answered_with_nothing_is_refused_rather_than_asked_again_for_ever() -> None:
    # A subject that answers a batch with no item and no end would keep list() asking: the test
    # errors at once instead of running to its deadline.

    batch = Batch(sys._getframe())
    with pytest.raises(TypeError, match="answered a batch with nothing"):
        batch.add({"items": []})
    batch.add({"items": [], "end": StopIteration()})  # the end alone is an answer
    batch.add({"items": [1]})
    assert list(batch.items) == [1]
