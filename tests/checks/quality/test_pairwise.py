from __future__ import annotations

import json
from typing import Any

import pytest

from checks.quality import compare_pairwise, position_consistency
from checks.quality.inputs import Task
from checks.quality.pairwise import PairwiseResult, Preference, combine
from checks.workspace import Workspace, from_git
from tests.checks.quality.conftest import policy, settings
from tests.conftest import GitRepo
from tests.fakes.openai_server import Reply, serve

TASK = Task(title="Make total() return the sum of prices")


@pytest.mark.parametrize(
    ("a_first", "b_first", "preferred", "consistent"),
    [
        ("a", "a", "a", True),
        ("b", "b", "b", True),
        ("tie", "tie", "tie", True),
        ("a", "b", None, False),  # each order preferred whichever came first
        ("a", "tie", None, False),
        (None, "a", None, False),
        (None, None, None, False),
    ],
)
def test_a_preference_counts_only_when_both_orders_agree(
    a_first: Preference | None, b_first: Preference | None, preferred: Preference | None, consistent: bool
) -> None:
    assert combine(a_first, b_first) == (preferred, consistent)


def test_position_consistency_summary() -> None:
    results = [
        PairwiseResult("a", "a", "a", True),
        PairwiseResult(None, "a", "b", False),
        PairwiseResult(None, "b", "a", False),
        PairwiseResult("tie", "tie", "tie", True),
        PairwiseResult(None, None, None, False, detail="unavailable: x"),
    ]
    summary = position_consistency(results)
    assert (summary.n, summary.consistent, summary.first_position_wins) == (4, 2, 1)
    assert summary.rate == 0.5
    assert position_consistency([]).rate is None


@pytest.fixture(scope="module")
def candidates(tmp_path_factory: pytest.TempPathFactory) -> tuple[Workspace, Workspace]:
    root = tmp_path_factory.mktemp("pair")
    repo = GitRepo(root / "repo")
    repo.commit("base", {"cart.py": "def total(prices):\n    raise NotImplementedError\n"})
    repo.branch("good")
    repo.commit("good", {"cart.py": "def total(prices):\n    return sum(prices)  # GOOD-CANDIDATE\n"})
    repo.branch("bad", "main")
    repo.commit("bad", {"cart.py": "def total(prices):\n    return 42  # BAD-CANDIDATE\n"})
    a = from_git(repo.path, "main", "good", root / "a")
    b = from_git(repo.path, "main", "bad", root / "b")
    return a, b


def prefers_good(request: dict[str, Any]) -> Reply:
    """A judge that reads the material: it prefers whichever slot holds the good candidate."""
    user = request["messages"][1]["content"]
    first = user[user.index("<<<BEGIN UNTRUSTED FIRST") : user.index("<<<BEGIN UNTRUSTED SECOND")]
    slot = "FIRST" if "GOOD-CANDIDATE" in first else "SECOND"
    return Reply(content=json.dumps({"preferred": slot, "reason": "sums the prices"}))


def test_a_consistent_judge_gives_a_preference(candidates: tuple[Workspace, Workspace]) -> None:
    good, bad = candidates
    with serve(prefers_good) as server:
        result = compare_pairwise(good, bad, policy(), TASK, settings(server))
        reverse = compare_pairwise(bad, good, policy(), TASK, settings(server))
    assert (result.preferred, result.consistent) == ("a", True)
    assert (reverse.preferred, reverse.consistent) == ("b", True)
    assert server.calls == 4
    assert result.prompt_tokens == 200


def test_a_position_biased_judge_gives_no_preference(candidates: tuple[Workspace, Workspace]) -> None:
    good, bad = candidates
    always_first = Reply(content=json.dumps({"preferred": "FIRST", "reason": "the first one"}))
    with serve(lambda request: always_first) as server:
        result = compare_pairwise(good, bad, policy(), TASK, settings(server))
    assert (result.a_first, result.b_first) == ("a", "b")
    assert (result.preferred, result.consistent) == (None, False)
    assert position_consistency([result]).first_position_wins == 1


def test_pairwise_outage_is_reported_not_raised(candidates: tuple[Workspace, Workspace]) -> None:
    good, bad = candidates
    with serve(lambda request: Reply.error(429)) as server:
        result = compare_pairwise(good, bad, policy(), TASK, settings(server))
    assert result.preferred is None
    assert result.detail.startswith("unavailable: rate limited (HTTP 429)")
