"""Best of k in the service: open agent PRs for one issue ranked on their check runs, re-ranked on change.

The real server process, the fake GitHub, the deterministic gate (tests.bot.pipelines:findings_gate,
whose hidden numbers each scenario chooses) and, for ties, a fake judge.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.bot.harness import Pull, Server, make_pull, wait_for
from tests.fakes.github_server import FakeGitHub
from tests.fakes.openai_server import Reply, serve

BODY = "An agent's attempt.\n\nCloses #12"


def candidate(first: Pull, number: int, branch: str, hidden: tuple[int, int], marker: str = "") -> Pull:
    """Another PR on ``first``'s repository, from its own branch off main."""
    repo = first.repo
    repo.branch(branch, "main")
    files: dict[str, str | bytes | None] = {
        "app.py": f"def add(a, b):\n    return a + b  # {marker or branch}\n",
        "patchgate-test.json": json.dumps({"hidden": list(hidden)}),
    }
    head = repo.commit(f"attempt {number}", files)
    pull = Pull(first.github, first.repository, repo, number, first.base_sha, head, branch, first.repository)
    pull.body = BODY
    pull.publish()
    return pull


def first_candidate(
    github: FakeGitHub, tmp_path: Path, name: str, hidden: tuple[int, int], marker: str = ""
) -> Pull:
    pull = make_pull(github, tmp_path, name, scenario={"hidden": list(hidden)}, head_ref="agent/try-1")
    if marker:
        pull.push({"app.py": f"def add(a, b):\n    return a + b  # {marker}\n"})
    pull.body = BODY
    pull.publish()
    return pull


def open_and_wait(server: Server, pull: Pull) -> dict[str, Any]:
    server.post("pull_request", pull.payload("opened"))
    run: dict[str, Any] = wait_for(pull.completed, 60, f"the check run of #{pull.number}")
    return run


def titles(pulls: list[Pull]) -> dict[int, str]:
    out = {}
    for p in pulls:
        run = p.completed()
        out[p.number] = run["output"]["title"] if run else ""
    return out


def ranked_as(pulls: list[Pull], expected: dict[int, str]) -> Callable[[], bool]:
    """Wait until each PR's current check run title starts with its expected rank line."""
    return lambda: all(titles(pulls)[n].startswith(line) for n, line in expected.items())


def test_three_candidates_ranked_then_re_ranked_on_push_and_merge(
    make_server: Callable[..., Server], github: FakeGitHub, tmp_path: Path
) -> None:
    server = make_server()
    server.start()
    one = first_candidate(github, tmp_path, "bestof", (3, 3))
    two = candidate(one, 2, "agent/try-2", (2, 3))
    three = candidate(one, 3, "agent/try-3", (1, 3))
    pulls = [one, two, three]
    for p in pulls:
        open_and_wait(server, p)
    wait_for(
        ranked_as(pulls, {1: "rank 1 of 3 for #12", 2: "rank 2 of 3 for #12", 3: "rank 3 of 3 for #12"}),
        60, "the three check runs to show their ranks",
    )  # fmt: skip
    summary = one.completed()["output"]["summary"]  # type: ignore[index]
    assert "### 🏁 Best of 3 for \\#12: this candidate is rank 1 of 3 for #12" in summary
    assert "[\\#2](https://github.com/octo/bestof/pull/2)" in summary
    assert "ahead on hidden pass rate 3/3 (100%) vs 2/3 (67%)" in summary
    assert "1 of 3 candidates pass" in summary
    # The ranking never changes a conclusion: execution's stays.
    assert [p.completed()["conclusion"] for p in pulls] == ["success", "failure", "failure"]  # type: ignore[index]

    # A push to #2 makes it the worst: its new run and the others' are ranked again.
    two.push({"patchgate-test.json": json.dumps({"hidden": [0, 3]})}, "worse")
    server.post("pull_request", two.payload("synchronize"))
    wait_for(two.completed, 60, "the new check run of #2")
    wait_for(ranked_as(pulls, {1: "rank 1 of 3", 2: "rank 3 of 3", 3: "rank 2 of 3"}), 60, "the re-ranking")

    # #1 is merged: the two left are ranked between themselves.
    merged = one.payload("closed")
    merged["pull_request"]["merged"] = True
    one.publish("closed")
    server.post("pull_request", merged)
    wait_for(ranked_as([two, three], {2: "rank 2 of 2", 3: "rank 1 of 2"}), 60, "the ranking after a merge")
    assert github.problems == []


def prefers(marker: str | None) -> Callable[[dict[str, Any]], Reply]:
    """A pairwise judge preferring the candidate holding ``marker`` in either order (None: the first)."""

    def respond(request: dict[str, Any]) -> Reply:
        text = request["messages"][1]["content"]
        second = text.index("UNTRUSTED SECOND")
        in_first = marker is None or text.index(marker) < second
        return Reply.json({"preferred": "FIRST" if in_first else "SECOND", "reason": "scripted"})

    return respond


def test_equally_passing_candidates_go_to_the_judge_in_both_orders_and_answers_are_cached(
    make_server: Callable[..., Server], github: FakeGitHub, tmp_path: Path
) -> None:
    with serve(prefers("MARKER-TWO")) as judge:
        server = make_server(PATCHGATE_JUDGE_API_BASE=judge.url, PATCHGATE_JUDGE_API_KEY="sk-test")
        server.start()
        one = first_candidate(github, tmp_path, "judged", (3, 3), marker="MARKER-ONE")
        open_and_wait(server, one)
        two = candidate(one, 2, "agent/try-2", (3, 3), marker="MARKER-TWO")
        open_and_wait(server, two)
        wait_for(ranked_as([one, two], {1: "rank 2 of 2", 2: "rank 1 of 2"}), 90, "the judged ranking")
        assert judge.calls == 2  # one pair, both orders
        summary = two.completed()["output"]["summary"]  # type: ignore[index]
        assert "pairwise judge, both orders: 1 agreed win(s)" in summary
        assert "position consistency 1/1" in summary
        # A third, failing candidate: the pair's answer comes from the store, not the judge.
        three = candidate(one, 3, "agent/try-3", (1, 3))
        open_and_wait(server, three)
        wait_for(ranked_as([one, two, three], {3: "rank 3 of 3"}), 60, "the ranking with a third")
        assert judge.calls == 2


def test_an_order_dependent_judge_gives_no_preference(
    make_server: Callable[..., Server], github: FakeGitHub, tmp_path: Path
) -> None:
    with serve(prefers(None)) as judge:
        server = make_server(PATCHGATE_JUDGE_API_BASE=judge.url, PATCHGATE_JUDGE_API_KEY="sk-test")
        server.start()
        one = first_candidate(github, tmp_path, "flipper", (3, 3))
        open_and_wait(server, one)
        two = candidate(one, 2, "agent/try-2", (3, 3))
        open_and_wait(server, two)
        wait_for(ranked_as([one, two], {1: "rank 1 of 2", 2: "rank 1 of 2"}), 90, "a shared rank")
    summary = one.completed()["output"]["summary"]  # type: ignore[index]
    assert "no preference" in summary
    assert "position consistency 0/1; the first shown won both orders in 1" in summary
