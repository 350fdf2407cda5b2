"""A test's built-in iterator in the change's hands: items lent ahead, the test's iterator exact.

Each scenario runs on the module imported here (one process) and through the
bridge against a real subject process; what the test sees of its own
iterator - at the change's return, inside its callbacks, after the change
keeps it - must be the same. Then the grader's side alone: what is lent, and
what a subject's word on what it took can move.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import pytest

from checks.behaviour.incontainer.grader.readahead import MAX_LENT, Lent
from tests.checks.behaviour.incontainer.grader.test_iteration import bridge_of
from tests.checks.behaviour.incontainer.test_bridge_shapes import Load, load

__all__ = ["load"]

LIB = """
def take(it, n):
    return [next(it) for _ in range(n)]

def drain(it):
    return list(it)

def each(it, callback):
    out = []
    for x in it:
        out.append(x)
        callback(x)
    return out

def keep(it):
    global kept
    kept = it
    return next(it)

def more():
    return next(kept)

def hand_back(it):
    next(it)
    return it

def lengths(it):
    return [len(x) for x in it]

def until_refused(it):
    out = []
    try:
        for x in it:
            out.append(x)
    except TypeError as exc:
        out.append(type(exc).__name__)
    return out
"""


def bare() -> Any:
    import types

    module = types.ModuleType("readahead_bare")
    exec(compile(LIB, "readahead_bare.py", "exec"), module.__dict__)  # noqa: S102 - the test's own source
    return module


def both(load: Load, scenario: Callable[[Any], Any]) -> tuple[Any, Any]:
    return scenario(bare()), scenario(load(LIB))


def partly(lib: Any) -> Any:
    out = []
    for it in (iter(range(10)), iter([5, 6, 7, 8]), reversed([1, 2, 3, 4]), iter("abcdef"), iter(b"wxyz!")):
        out.append((lib.take(it, 2), next(it), lib.take(it, 1), list(it), next(it, "done")))
    return out


@pytest.mark.slow
def test_what_the_change_takes_of_a_test_s_iterator_leaves_it_where_one_process_does(load: Load) -> None:
    expected, found = both(load, partly)
    assert found == expected
    assert expected[0] == ([0, 1], 2, [3], [4, 5, 6, 7, 8, 9], "done")


def inside(lib: Any) -> Any:
    items = [1, 2, 3, 4]
    it = iter(items)
    seen = []

    def callback(x: int) -> None:
        seen.append((x, operator.length_hint(it)))
        if x == 2:
            items.append(5)  # the test's list grows while the change iterates it

    return lib.each(it, callback), seen, it.__reduce__()


@pytest.mark.slow
def test_a_test_s_callback_sees_its_iterator_as_far_as_the_change_took_it(load: Load) -> None:
    expected, found = both(load, inside)
    assert found == expected
    assert expected[0] == [1, 2, 3, 4, 5]


def kept(lib: Any) -> Any:
    it = iter(range(100))
    first = lib.keep(it)
    mine = next(it)
    again = lib.more()
    back = lib.hand_back(it)
    cyclic: list[Any] = [1]
    cyclic.append(cyclic)  # an item that cannot cross by value: lent as the object itself
    drained = lib.drain(iter([0, cyclic]))
    return first, mine, again, back is it, next(it), drained[1] is cyclic, it.__reduce__()


@pytest.mark.slow
def test_an_iterator_the_change_keeps_or_hands_back_stays_one_object_in_one_state(load: Load) -> None:
    expected, found = both(load, kept)
    assert found == expected
    assert expected[:5] == (0, 1, 2, True, 4)


@pytest.mark.slow
def test_a_long_iterator_is_lent_in_a_few_requests(load: Load) -> None:
    lib = load(LIB)
    handed = bridge_of(lib).handed
    ops: list[object] = []
    serve = handed.serve

    def spy(request: dict[str, Any], decode: Any) -> Any:
        ops.append(request.get("op"))
        return serve(request, decode)

    handed.serve = spy  # type: ignore[method-assign]
    it = iter(range(50_000))  # (a list of more than 100,000 parts would cross as a handle)
    assert lib.drain(it) == list(range(50_000))
    assert len(ops) <= 30 and set(ops) == {"take"}
    assert next(it, "done") == "done"


@pytest.mark.slow
def test_items_lent_together_never_make_a_message_past_the_channel_s_cap(load: Load) -> None:
    lib = load(LIB)
    # Each item crosses alone; sixteen of them (the first lending), or 4,096 of the second kind (the
    # largest), in one answer would be past the 16 MiB cap: the grader raised the cap's ValueError
    # into the test and the subject waited for its answer until its deadline.
    large = ["x" * (1100 * 1024)] * 16
    assert lib.lengths(iter(large)) == [len(large[0])] * 16
    many = ["y" * 4500] * 9000
    assert lib.lengths(iter(many)) == [4500] * 9000
    assert lib.lengths(iter(["z"])) == [1]


@pytest.mark.slow
def test_an_item_that_cannot_be_handed_over_ends_the_lending_at_that_item(load: Load) -> None:
    lib = load(LIB)
    code = (lambda: 0).__code__  # never handed to the code under test
    it = iter([1, 2, code, 3])
    # As asked one at a time: the two items before the code object arrive, then next() meets the
    # refusal (the item is taken, as next() takes it) - not at the first item, with nothing seen.
    assert lib.until_refused(it) == [1, 2, "TypeError"]
    assert next(it) == 3


@pytest.mark.slow
def test_an_iterator_over_a_range_longer_than_len_allows_is_lent_too(load: Load) -> None:
    def huge(lib: Any) -> Any:
        it = iter(range(-5, 1 << 70, 3))  # len() of this range raises OverflowError; next() does not
        return lib.take(it, 3), next(it), lib.take(it, 1), it.__reduce__()

    expected, found = both(load, huge)
    assert found == expected
    assert expected[:3] == ([-5, -2, 1], 4, [7])


def test_only_what_was_lent_is_moved_whatever_the_subject_says_it_took() -> None:
    lent = Lent()
    it = iter(range(10**5))
    assert lent.ahead(1, it, 5) == {"items": [0, 1, 2, 3, 4], "end": False}
    assert next(iter(it.__reduce__()[1][0])) == 0 and it.__reduce__()[2] == 0  # read, not advanced
    lent.settle([[1, 10**9, True], [2, 5, True], "junk", [1]])
    assert next(it) == 5  # five lent, five taken at most; the past-the-end flag needs the end
    lent.settle([[1, 3, False]])  # settled already: nothing more to move
    assert next(it) == 6
    assert lent.ahead(1, it, 10**9)["items"] == list(range(7, 7 + MAX_LENT))


def test_an_iterator_taken_to_its_end_is_exhausted_as_in_one_process() -> None:
    lent = Lent()
    it = iter([1, 2])
    assert lent.ahead(4, it, 16) == {"items": [1, 2], "end": True}
    lent.settle([[4, 2, True]])
    assert it.__reduce__() == (iter, ([],))  # as list() leaves it: its list let go
    assert lent.ahead(4, it, 16) == {"items": [], "end": True}


def test_an_iterator_whose_sequence_is_not_read_ahead_gives_one_item_for_real() -> None:
    class Items(list[int]):
        pass

    lent = Lent()
    it = iter(Items([1, 2]))
    assert lent.ahead(3, it, 16) == {"items": [1], "end": False}
    assert next(it) == 2
    generator = (x for x in [9])
    assert lent.ahead(5, generator, 16) == {"items": [9], "end": False}
    assert lent.ahead(5, generator, 16) == {"items": [], "end": True}
    lent.settle([[3, 1, True], [5, 1, True]])  # nothing was lent: nothing moves
    assert next(it, "done") == "done"
