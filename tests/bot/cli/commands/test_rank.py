"""`patchgate rank`: real git, real Docker, a fake judge for the pairwise comparisons."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.bot.cli.commands.conftest import POLICY
from tests.bot.cli.commands.test_run import patchgate
from tests.conftest import GitRepo
from tests.fakes.openai_server import Reply, serve

BASE = "def sub(a, b):\n    raise NotImplementedError\n"
HEADS = {
    # Four hidden tests: all pass, two pass, one passes.
    "agent/sub-right": "def sub(a, b):\n    return a - b  # CANDIDATE-RIGHT\n",
    "agent/sub-abs": "def sub(a, b):\n    return abs(a - b)  # CANDIDATE-ABS\n",
    "agent/sub-plus": "def sub(a, b):\n    return a + b  # CANDIDATE-PLUS\n",
    # Passes all four, like sub-right: execution cannot tell them apart.
    "agent/sub-negated": "def sub(a, b):\n    return -(b - a)  # CANDIDATE-NEGATED\n",
}
HIDDEN = """\
from calc.ops import sub


def test_positive():
    assert sub(5, 3) == 2


def test_zero():
    assert sub(0, 0) == 0


def test_negative():
    assert sub(-1, 1) == -2


def test_below_zero():
    assert sub(10, 20) == -10
"""


@pytest.fixture
def candidates(git_repo: GitRepo, tmp_path: Path) -> tuple[GitRepo, Path, Path]:
    git_repo.commit("base", {"calc/__init__.py": "", "calc/ops.py": BASE})
    for branch, code in HEADS.items():
        git_repo.branch(branch, "main")
        git_repo.commit(f"sub: {branch}", {"calc/ops.py": code})
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    (hidden / "test_sub.py").write_text(HIDDEN)
    policy = tmp_path / "policy.yml"
    policy.write_text(POLICY)
    return git_repo, hidden, policy


def rank_json(
    candidates: tuple[GitRepo, Path, Path], heads: list[str], judge_url: str | None = None
) -> tuple[int, dict[str, Any]]:
    repo, hidden, policy = candidates
    env = {"PATCHGATE_JUDGE_API_BASE": judge_url, "PATCHGATE_JUDGE_API_KEY": "sk-test"} if judge_url else {}
    done = patchgate(
        "rank", "--repo", repo.path, "--base", "main", "--heads", ",".join(heads), "--hidden", hidden,
        "--policy", policy, "--for", "#12", "--format", "json", env=env,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return done.returncode, data


@pytest.mark.docker
def test_three_candidates_rank_by_their_hidden_numbers(candidates: tuple[GitRepo, Path, Path]) -> None:
    code, ranking = rank_json(candidates, ["agent/sub-plus", "agent/sub-right", "agent/sub-abs"])
    assert code == 0
    placed = [(p["candidate"]["id"], p["rank"]) for p in ranking["placed"]]
    assert placed == [("agent/sub-right", 1), ("agent/sub-abs", 2), ("agent/sub-plus", 3)]
    hidden = [
        (p["candidate"]["execution"]["hidden_passed"], p["candidate"]["execution"]["hidden_total"])
        for p in ranking["placed"]
    ]
    assert hidden == [(4, 4), (2, 4), (1, 4)]
    assert ranking["placed"][1]["why"] == "ahead on hidden pass rate 2/4 (50%) vs 1/4 (25%)"
    assert (ranking["k"], ranking["passing"], ranking["pairwise"]) == (3, 1, [])
    # One author made all three: they are samples of one agent, so pass@k is given.
    assert ranking["pass_at"] == pytest.approx({"1": 1 / 3, "2": 2 / 3, "3": 1.0})


NOT_APPLICABLE = Reply.json({"verdict": "N/A", "reason": "nothing to say", "evidence": []})


def pairwise_calls(prompts: list[str]) -> list[str]:
    return [p for p in prompts if "UNTRUSTED FIRST" in p]


def prefers(marker: str | None) -> Any:
    """A judge preferring the candidate holding ``marker`` in either order (None: whichever is first).

    Rubric questions (each passing candidate's quality layer) get N/A.
    """

    def respond(request: dict[str, Any]) -> Reply:
        text = request["messages"][1]["content"]
        if "UNTRUSTED FIRST" not in text:
            return NOT_APPLICABLE
        second = text.index("UNTRUSTED SECOND")
        in_first = marker is None or text.index(marker) < second
        return Reply.json({"preferred": "FIRST" if in_first else "SECOND", "reason": "scripted"})

    return respond


@pytest.mark.docker
def test_two_equally_passing_candidates_go_to_the_pairwise_judge(
    candidates: tuple[GitRepo, Path, Path],
) -> None:
    heads = ["agent/sub-right", "agent/sub-negated"]
    with serve(prefers("CANDIDATE-NEGATED")) as judge:
        code, ranking = rank_json(candidates, heads, judge.url)
        # One comparison, asked in both orders: two calls, each candidate shown first once.
        asked = pairwise_calls(judge.prompts)
        assert len(asked) == 2
        firsts = [re.search(r"CANDIDATE-(RIGHT|NEGATED)", p.split("UNTRUSTED FIRST")[1]) for p in asked]
        assert sorted(m.group(1) for m in firsts if m) == ["NEGATED", "RIGHT"]
    assert code == 0
    placed = [(p["candidate"]["id"], p["rank"]) for p in ranking["placed"]]
    assert placed == [("agent/sub-negated", 1), ("agent/sub-right", 2)]
    assert "1 agreed win(s)" in ranking["placed"][0]["why"]
    assert (ranking["orders_answered"], ranking["orders_agreed"]) == (1, 1)


@pytest.mark.docker
def test_an_order_dependent_judge_gives_no_preference(candidates: tuple[GitRepo, Path, Path]) -> None:
    with serve(prefers(None)) as judge:  # always FIRST: it likes whatever it reads first
        _, ranking = rank_json(candidates, ["agent/sub-right", "agent/sub-negated"], judge.url)
    assert [p["rank"] for p in ranking["placed"]] == [1, 1]
    assert all("no preference" in p["why"] for p in ranking["placed"])
    assert (ranking["orders_answered"], ranking["orders_agreed"], ranking["first_position_wins"]) == (1, 0, 1)
    [pair] = ranking["pairwise"]
    assert pair["preferred"] is None


def test_fewer_than_two_heads_is_a_usage_error(git_repo: GitRepo) -> None:
    git_repo.commit("base", {"a.py": "x = 1\n"})
    done = patchgate("rank", "--repo", git_repo.path, "--base", "main", "--heads", "main,main")
    assert done.returncode == 2
    assert "two or more distinct refs" in done.stderr
