"""checks.bestofk.ranking: execution first, the two-order judge among passing ties, pass@k. Tables."""

from __future__ import annotations

import pytest

from checks.bestofk.ranking import (
    MAX_PAIRWISE_GROUP,
    Candidate,
    Execution,
    Pairwise,
    execution_groups,
    execution_of,
    pairs_to_judge,
    pass_at_k,
    rank,
)
from checks.report import BehaviourResult, Finding, Report, ShapeResult, SuiteResult


def ex(held: tuple[int, int] = (10, 10), hidden: tuple[int, int] = (20, 20), reg: int = 0, blocking: int = 0,
       conclusion: str = "success", *, differential: tuple[int, int] = (0, 0)) -> Execution:  # fmt: skip
    return Execution(
        conclusion=conclusion, held_out_passed=held[0], held_out_total=held[1], hidden_passed=hidden[0],
        hidden_total=hidden[1], regressions=reg, blocking_findings=blocking,
        differential_passed=differential[0], differential_total=differential[1],
    )  # fmt: skip


def cand(cid: str, execution: Execution | None, agent: str = "bot[bot]") -> Candidate:
    return Candidate(id=cid, execution=execution, agent=agent)


@pytest.mark.parametrize(
    ("candidates", "order"),
    [
        # held-out first: a better held-out rate beats a better hidden rate
        (
            [cand("a", ex(held=(9, 10), hidden=(20, 20))), cand("b", ex(held=(10, 10), hidden=(15, 20)))],
            ["b", "a"],
        ),
        # then hidden
        ([cand("a", ex(hidden=(18, 20))), cand("b", ex(hidden=(19, 20)))], ["b", "a"]),
        # then the differential checks: a correct but quadratic candidate after a linear one
        ([cand("a", ex(differential=(1, 2), reg=0)), cand("b", ex(differential=(2, 2), reg=1))], ["b", "a"]),
        # then regressions
        ([cand("a", ex(reg=2)), cand("b", ex(reg=1))], ["b", "a"]),
        # then blocking shape findings
        ([cand("a", ex(blocking=3)), cand("b", ex(blocking=0))], ["b", "a"]),
        # rates, not counts: 9/10 beats 17/20
        ([cand("a", ex(held=(17, 20))), cand("b", ex(held=(9, 10)))], ["b", "a"]),
        # a missing suite ranks below 0%
        ([cand("a", ex(held=(0, 0))), cand("b", ex(held=(0, 10)))], ["b", "a"]),
        # not gated yet: last
        ([cand("a", None), cand("b", ex(held=(1, 10)))], ["b", "a"]),
    ],
)
def test_execution_orders_candidates(candidates: list[Candidate], order: list[str]) -> None:
    ranking = rank("#12", candidates)
    assert [p.candidate.id for p in ranking.placed] == order
    assert [p.rank for p in ranking.placed] == [1, 2]


@pytest.mark.parametrize(
    ("other", "why"),
    [
        (ex(held=(6, 14)), "ahead on held-out pass rate 7/14 (50%) vs 6/14 (43%)"),
        (ex(held=(7, 14), hidden=(8, 21)), "ahead on hidden pass rate 9/21 (43%) vs 8/21 (38%)"),
        (ex(held=(7, 14), hidden=(9, 21), reg=2), "ahead on regressions 1 vs 2"),
        (ex(held=(7, 14), hidden=(9, 21), reg=1, blocking=5), "ahead on blocking findings 2 vs 5"),
    ],
)
def test_each_place_says_what_decided_it_with_both_numbers(other: Execution, why: str) -> None:
    mine = ex(held=(7, 14), hidden=(9, 21), reg=1, blocking=2, conclusion="failure")
    ranking = rank("#12", [cand("#13", mine), cand("#14", other)])
    first, second = ranking.placed
    assert (first.candidate.id, first.why) == ("#13", why)
    assert second.why.startswith("behind on ")
    assert mine.numbers() == "held-out 7/14 (50%) · hidden 9/21 (43%) · regressions 1 · blocking findings 2"
    assert rank("#12", [cand("#13", mine)]).placed[0].why == "the only candidate"


def test_the_differential_checks_separate_candidates_equal_on_their_tests() -> None:
    # The demo's correct PR and its correct-but-quadratic one: the same tests pass, one efficiency fails.
    linear = ex(held=(14, 14), hidden=(21, 21), differential=(2, 2))
    quadratic = ex(held=(14, 14), hidden=(21, 21), differential=(1, 2), conclusion="failure")
    first, _ = rank("#1", [cand("#4", quadratic), cand("#2", linear)]).placed
    assert (first.candidate.id, first.why) == ("#2", "ahead on differential checks 2/2 (100%) vs 1/2 (50%)")
    assert linear.numbers().split(" · ")[2] == "differential 2/2 (100%)"


def test_only_passing_ties_go_to_the_judge() -> None:
    passing = [cand("a", ex()), cand("b", ex()), cand("c", ex())]
    failing_tie = [
        cand("d", ex(held=(1, 10), conclusion="failure")),
        cand("e", ex(held=(1, 10), conclusion="failure")),
    ]
    pairs = pairs_to_judge(passing + failing_tie + [cand("f", ex(held=(5, 10)))])
    assert [(a.id, b.id) for a, b in pairs] == [("a", "b"), ("a", "c"), ("b", "c")]
    too_many = [cand(str(i), ex()) for i in range(MAX_PAIRWISE_GROUP + 1)]
    assert pairs_to_judge(too_many) == []
    groups = execution_groups(passing + failing_tie)
    assert [[c.id for c in g] for g in groups] == [["a", "b", "c"], ["d", "e"]]


def agreed(a: str, b: str, winner: str) -> Pairwise:
    """Both orders named ``winner`` (a candidate id, or "tie")."""
    side = "tie" if winner == "tie" else ("a" if winner == a else "b")
    return Pairwise(a=a, b=b, preferred=side, a_first=side, b_first=side)  # type: ignore[arg-type]


def test_agreed_pairwise_wins_order_a_passing_tie() -> None:
    candidates = [cand("a", ex()), cand("b", ex()), cand("c", ex())]
    results = {
        frozenset(("a", "b")): agreed("a", "b", "b"),
        frozenset(("a", "c")): agreed("a", "c", "c"),
        frozenset(("b", "c")): agreed("b", "c", "b"),
    }
    ranking = rank("#12", candidates, results)
    assert [(p.candidate.id, p.rank, p.pairwise_wins) for p in ranking.placed] == [
        ("b", 1, 2),
        ("c", 2, 1),
        ("a", 3, 0),
    ]
    assert (ranking.orders_answered, ranking.orders_agreed, ranking.first_position_wins) == (3, 3, 0)
    assert "2 agreed win(s)" in ranking.placed[0].why


def test_an_order_dependent_judge_gives_no_preference() -> None:
    candidates = [cand("a", ex()), cand("b", ex())]
    # Each order preferred whichever candidate it was shown first.
    flip = Pairwise(a="a", b="b", preferred=None, a_first="a", b_first="b")
    ranking = rank("#12", candidates, {frozenset(("a", "b")): flip})
    assert [(p.candidate.id, p.rank) for p in ranking.placed] == [("a", 1), ("b", 1)]
    assert all("no preference" in p.why for p in ranking.placed)
    assert (ranking.orders_answered, ranking.orders_agreed, ranking.first_position_wins) == (1, 0, 1)


def test_a_judge_outage_leaves_the_tie() -> None:
    ranking = rank("#12", [cand("a", ex()), cand("b", ex())], {})
    assert [p.rank for p in ranking.placed] == [1, 1]
    assert "judge unavailable for some pairs" in ranking.placed[0].why


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (3, 1, 1, 1 / 3),
        (3, 1, 2, 2 / 3),
        (3, 1, 3, 1.0),
        (3, 0, 3, 0.0),
        (5, 2, 2, 0.7),  # 1 - C(3,2)/C(5,2) = 1 - 3/10
        (10, 10, 1, 1.0),
    ],
)
def test_pass_at_k_is_the_unbiased_estimator(n: int, c: int, k: int, expected: float) -> None:
    assert pass_at_k(n, c, k) == pytest.approx(expected)


def test_pass_at_k_rejects_impossible_counts() -> None:
    with pytest.raises(ValueError, match="pass@4"):
        pass_at_k(3, 1, 4)


def test_pass_at_k_only_for_samples_of_one_agent() -> None:
    same = rank(
        "#1",
        [
            cand("a", ex()),
            cand("b", ex(held=(1, 10), conclusion="failure")),
            cand("c", ex(held=(2, 10), conclusion="failure")),
        ],
    )
    assert same.passing == 1
    assert same.pass_at == pytest.approx({1: 1 / 3, 2: 2 / 3, 3: 1.0})
    mixed = rank("#1", [cand("a", ex(), agent="x[bot]"), cand("b", ex(), agent="y[bot]")])
    assert mixed.pass_at is None and "not samples of one agent" in mixed.samples
    pending = rank("#1", [cand("a", ex()), cand("b", None)])
    assert pending.pass_at is None and "not gated yet" in pending.samples


def test_execution_is_read_from_a_report() -> None:
    report = Report(
        conclusion="failure",
        shape=ShapeResult(
            status="failed",
            findings=[
                Finding(tool="ruff", rule="F821", path="a.py", start_line=1, end_line=1, severity="error",
                        message="m"),
                Finding(tool="hygiene", rule="skip-added", path="t.py", start_line=1, end_line=1,
                        severity="warning", message="m", needs_maintainer=True),
                Finding(tool="ruff", rule="E1", path="a.py", start_line=2, end_line=2, severity="error",
                        message="m", introduced=False),
            ],
        ),
        behaviour=BehaviourResult(
            status="failed",
            regressions=1,
            suites=[
                SuiteResult(name="h", kind="hidden", passed=9, total=21, pass_rate=9 / 21),
                SuiteResult(name="o", kind="held_out", passed=7, total=14, pass_rate=0.5),
            ],
        ),
    )  # fmt: skip
    assert execution_of(report) == ex(held=(7, 14), hidden=(9, 21), reg=1, blocking=1, conclusion="failure")
