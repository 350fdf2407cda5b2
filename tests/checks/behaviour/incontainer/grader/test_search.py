"""The grader's search: Hypothesis seeded by the host, each input compared once, the smallest kept."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from checks.behaviour.incontainer.grader.search import Found, search

TEXTS: st.SearchStrategy[tuple[tuple[str], dict[str, Any]]] = st.tuples(
    st.tuples(st.text(alphabet="0123456789hx", max_size=8)), st.fixed_dictionaries({})
)


def encode(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any]:
    return list(args), dict(kwargs)


class Judge:
    """Disagrees on any text holding an x; counts how often each input was compared."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self, args: Any, kwargs: Any) -> Found | None:
        self.calls.append(args[0])
        return Found(args, kwargs, {"status": "raised"}, {"status": "returned"}) if "x" in args[0] else None


def test_a_disagreement_is_shrunk_to_the_smallest_input() -> None:
    judge = Judge()
    searched = search(TEXTS, encode, judge, examples=500, seconds=60, seed=7)
    assert searched.found is not None
    assert searched.found.args == ["x"]
    # Each distinct input was compared once, however often Hypothesis replayed it while shrinking.
    assert len(judge.calls) == len(set(judge.calls)) == searched.inputs


def test_the_same_seed_draws_the_same_inputs_and_another_seed_others() -> None:
    runs = []
    for seed in (7, 7, 8):
        judge = Judge()

        def agreeing(args: Any, kwargs: Any, judge: Judge = judge) -> None:
            judge(args, kwargs)

        search(TEXTS, encode, agreeing, examples=50, seconds=60, seed=seed)
        runs.append(judge.calls)
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]


def test_agreement_on_every_input_spends_the_budget() -> None:
    judge = Judge()
    searched = search(TEXTS, encode, lambda a, k: (judge(a, k), None)[1], examples=100, seconds=60, seed=1)
    assert (searched.found, searched.stopped) == (None, "examples")
    assert 90 <= searched.inputs <= 100  # distinct inputs: Hypothesis may draw one twice


def test_past_the_time_no_input_is_compared_and_the_search_says_so() -> None:
    judge = Judge()
    searched = search(TEXTS, encode, judge, examples=100, seconds=0, seed=1)
    assert (searched.inputs, searched.found, searched.stopped, judge.calls) == (0, None, "time", [])


def test_once_halted_no_new_input_is_compared_and_the_one_found_stands() -> None:
    # The subject died on the first input with an x: nothing after it is compared, so the shrinker
    # cannot replace it with a smaller input that "disagrees" only because nobody answers any more.
    judge = Judge()
    gone: list[str] = []

    def compare(args: Any, kwargs: Any) -> Found | None:
        found = judge(args, kwargs)
        if found is not None:
            gone.append(args[0])
        return found

    searched = search(TEXTS, encode, compare, examples=500, seconds=60, seed=7, halted=lambda: bool(gone))
    assert searched.found is not None and [searched.found.args[0]] == gone
    assert judge.calls[-1] == gone[0]
