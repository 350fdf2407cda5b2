"""The subject's side of a test's iterator lent ahead: next() from the lent items, and what was taken."""

from __future__ import annotations

from typing import Any

import pytest

from checks.behaviour.incontainer.subject.readahead import FIRST, MOST, ReadAhead


class Grader:
    """Lends items of a list from a position, as grader/readahead.py does, and records each request."""

    def __init__(self, items: list[int]) -> None:
        self.items = items
        self.at = 0
        self.asked: list[int] = []

    def ask(self, standin: object, size: int) -> dict[str, Any]:
        self.asked.append(size)
        lent = self.items[self.at : self.at + size]
        return {"items": lent, "end": self.at + size >= len(self.items)}


def test_next_comes_from_the_lent_items_and_asks_again_when_they_run_out() -> None:
    grader = Grader(list(range(100)))
    ahead = ReadAhead(grader.ask)
    assert [ahead.next(None, 1) for _ in range(FIRST)] == list(range(FIRST))
    assert grader.asked == [FIRST]
    assert ahead.settle() == [[1, FIRST, False]]
    grader.at = FIRST
    assert ahead.next(None, 1) == FIRST
    assert grader.asked == [FIRST, 2 * FIRST]  # taken whole: the next batch is larger


def test_the_end_of_the_lent_items_is_the_iterator_s_end() -> None:
    grader = Grader([1, 2])
    ahead = ReadAhead(grader.ask)
    assert [ahead.next(None, 7), ahead.next(None, 7)] == [1, 2]
    with pytest.raises(StopIteration):
        ahead.next(None, 7)
    with pytest.raises(StopIteration):
        ahead.next(None, 7)
    assert grader.asked == [FIRST]
    assert ahead.settle() == [[7, 2, True]]
    assert ahead.settle() is None  # nothing since


def test_what_was_not_taken_is_dropped_at_settling_and_the_next_batch_starts_small() -> None:
    grader = Grader(list(range(10_000)))
    ahead = ReadAhead(grader.ask)
    for turn in range(5):  # the change takes every item lent: the batches grow
        for _ in range(FIRST << turn):
            ahead.next(None, 3)
        grader.at += FIRST << turn
        assert ahead.settle() == [[3, FIRST << turn, False]]
    assert grader.asked == [FIRST, 2 * FIRST, 4 * FIRST, 8 * FIRST, 16 * FIRST]
    ahead.next(None, 3)
    assert ahead.settle() == [[3, 1, False]]  # one taken, the rest dropped (the test's code may run now)
    ahead.next(None, 3)
    assert grader.asked[-1] == FIRST
    assert max(grader.asked) <= MOST
