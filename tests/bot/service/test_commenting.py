"""The sticky summary comment and comment commands, end to end: the real server and the fake GitHub.

The gate is tests.bot.pipelines:findings_gate; each scenario's head commit
chooses its outcome. Comment deliveries are GitHub's issue_comment.created
example, moved onto the scenario's PR.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.service.commenting import help_reply, nearest_command
from checks.render.comment import MARKER
from tests.bot.harness import AGENT, POLICY, Pull, Server, fixture, jobs, make_pull, wait_for
from tests.fakes.github_server import FakeGitHub


def comment_on(
    pull: Pull, body: str, association: str = "MEMBER", comment_id: int = 492700400
) -> dict[str, Any]:
    """GitHub's issue_comment.created example as a comment on ``pull`` (its example is on an issue)."""
    data = copy.deepcopy(fixture("issue_comment.created"))
    owner = pull.repository.split("/")[0]
    data["repository"] = {**data["repository"], "full_name": pull.repository,
                          "owner": {**data["repository"]["owner"], "login": owner}}  # fmt: skip
    data["installation"] = {"id": pull.installation, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uNzc="}
    data["issue"] = {**data["issue"], "number": pull.number, "pull_request": {
        "url": f"https://api.github.com/repos/{pull.repository}/pulls/{pull.number}",
        "html_url": f"https://github.com/{pull.repository}/pull/{pull.number}", "merged_at": None,
    }}  # fmt: skip
    data["comment"] = {**data["comment"], "id": comment_id, "body": body, "author_association": association}
    return data


def summaries(github: FakeGitHub, pull: Pull) -> list[dict[str, Any]]:
    return [c for c in github.comments_on(pull.repository, pull.number) if MARKER in c["body"]]


@pytest.fixture
def read_only(github: FakeGitHub) -> Iterator[None]:
    """An installation that has not accepted the new pull_requests: write permission."""
    saved = dict(github.permissions)
    github.permissions.update({"issues": "read", "pull_requests": "read"})
    yield
    github.permissions.clear()
    github.permissions.update(saved)


def test_always_keeps_one_comment_edited_in_place(server: Server, github: FakeGitHub, tmp_path: Path) -> None:
    pull = make_pull(github, tmp_path, "sticky", policy=POLICY + "report:\n  comment: always\n")
    server.post("pull_request", pull.payload("opened"))
    run = wait_for(pull.completed, 60, "the first check run")
    [first] = wait_for(lambda: summaries(github, pull), 30, "the summary comment")
    assert "success" in first["body"] and "| **shape** |" in first["body"]
    assert f"(https://github.com/octo/sticky/runs/{run['id']})" in first["body"]
    pull.push({"patchgate-test.json": '{"findings": 2}'})
    server.post("pull_request", pull.payload("synchronize"))
    run = wait_for(pull.completed, 60, "the second check run")
    [edited] = wait_for(lambda: [c for c in summaries(github, pull) if c["edits"]], 30, "the edit")
    assert "failure" in edited["body"] and pull.head_sha[:12] in edited["body"]
    assert f"/runs/{run['id']})" in edited["body"]
    assert len(github.comments_on(pull.repository, pull.number)) == 1
    assert github.problems == []


def test_a_marker_in_anyone_elses_comment_is_never_taken_for_the_summary(
    server: Server, github: FakeGitHub, tmp_path: Path
) -> None:
    # The PR's author read patchgate's source and writes its marker with a forged verdict before
    # the first run ends: patchgate must neither edit that comment nor leave the PR without its own.
    pull = make_pull(github, tmp_path, "forged", policy=POLICY + "report:\n  comment: on-failure\n",
                     author="dev", scenario={"findings": 1})  # fmt: skip
    forged = f"{MARKER}\n**✅ success — shape passed · hidden 21/21 (100%)**\n"
    github.post_comment(pull.repository, pull.number, forged, login="dev", user_type="User")
    github.post_comment(pull.repository, pull.number, forged, login=AGENT, user_type="Bot")
    server.post("pull_request", pull.payload("opened"))
    wait_for(pull.completed, 60, "the failing run")
    [own] = wait_for(lambda: [c for c in summaries(github, pull) if c["user"]["login"] == "patchgate[bot]"],
                     30, "patchgate's own summary")  # fmt: skip
    assert own["body"].startswith(MARKER) and "failure" in own["body"]
    # Between runs the author writes another one, after patchgate's.
    github.post_comment(pull.repository, pull.number, forged, login="dev", user_type="User")
    pull.push({"patchgate-test.json": '{"findings": 2}'})
    server.post("pull_request", pull.payload("synchronize"))
    wait_for(pull.completed, 60, "the second run")
    wait_for(lambda: [c for c in summaries(github, pull) if c["edits"]], 30, "the edit")
    comments = github.comments_on(pull.repository, pull.number)
    assert [(c["user"]["login"], c["edits"]) for c in comments] == [
        ("dev", 0),
        (AGENT, 0),
        ("patchgate[bot]", 1),
        ("dev", 0),
    ]
    assert [c["body"] for c in comments if c["user"]["login"] != "patchgate[bot]"] == [forged] * 3
    assert pull.head_sha[:12] in comments[2]["body"] and "2 new findings" in comments[2]["body"]
    edits = github.calls_to("PATCH", r"^/repos/octo/forged/issues/comments/")
    edited = {int(c.path.rsplit("/", 1)[1]) for c in edits}
    assert [github.comments[i]["user"]["login"] for i in edited] == ["patchgate[bot]"]
    assert github.problems == []


def test_on_failure_comments_only_once_a_run_fails(
    server: Server, github: FakeGitHub, tmp_path: Path
) -> None:
    pull = make_pull(github, tmp_path, "onfail", policy=POLICY + "report:\n  comment: on-failure\n")
    server.post("pull_request", pull.payload("opened"))
    wait_for(pull.completed, 60, "the passing run")
    wait_for(lambda: [j for j in jobs(server, "octo/onfail") if j["state"] == "done"], 30, "the job")
    assert github.calls_to("POST", "^/repos/octo/onfail/issues/1/comments$") == []
    pull.push({"patchgate-test.json": '{"findings": 1}'})
    server.post("pull_request", pull.payload("synchronize"))
    wait_for(pull.completed, 60, "the failing run")
    [comment] = wait_for(lambda: summaries(github, pull), 30, "the summary comment")
    assert "failure" in comment["body"]


def test_the_default_policy_never_reads_or_writes_comments(
    server: Server, github: FakeGitHub, tmp_path: Path
) -> None:
    pull = make_pull(github, tmp_path, "quiet", scenario={"findings": 1})
    server.post("pull_request", pull.payload("opened"))
    wait_for(pull.completed, 60, "the check run")
    wait_for(lambda: [j for j in jobs(server, "octo/quiet") if j["state"] == "done"], 30, "the job")
    assert github.calls_to(None, "^/repos/octo/quiet/issues/") == []


@pytest.mark.usefixtures("read_only")
def test_a_comment_github_refuses_leaves_the_run_delivered(
    server: Server, github: FakeGitHub, tmp_path: Path
) -> None:
    pull = make_pull(github, tmp_path, "noperm", policy=POLICY + "report:\n  comment: always\n")
    server.post("pull_request", pull.payload("opened"))
    assert wait_for(pull.completed, 60, "the check run")["conclusion"] == "success"
    [job] = wait_for(lambda: [j for j in jobs(server, "octo/noperm") if j["state"] == "done"], 30, "the job")
    assert job["conclusion"] == "success"
    refused = wait_for(lambda: github.calls_to("POST", "^/repos/octo/noperm/issues/1/comments$"), 30, "a try")
    assert [c.status for c in refused] == [403]
    assert github.comments_on("octo/noperm", 1) == []


def test_rerun_and_explain_commands(server: Server, github: FakeGitHub, tmp_path: Path) -> None:
    pull = make_pull(github, tmp_path, "cmds", scenario={"findings": 2})
    server.post("pull_request", pull.payload("opened"))
    first = wait_for(pull.completed, 60, "the first run")
    response = server.post("issue_comment", comment_on(pull, "/patchgate rerun"))
    assert (response.status_code, response.json()["status"]) == (202, "queued")

    def reruns() -> list[dict[str, Any]]:
        return [r for r in pull.runs() if r["id"] != first["id"] and r["status"] == "completed"]

    rerun = wait_for(reruns, 60, "the rerun")
    # The command was taken: the comment got a thumbs-up before the run.
    assert ("octo/cmds", 492700400, "+1") in github.reactions
    assert rerun[0]["head_sha"] == pull.head_sha
    assert [j["trigger"] for j in jobs(server, "octo/cmds")][-1] == "issue_comment.rerun"
    server.post("issue_comment", comment_on(pull, "/patchgate explain\nwhy did it fail?"))
    [reply] = wait_for(lambda: github.comments_on("octo/cmds", 1), 60, "the explain reply")
    assert "2 new findings" in reply["body"] and f"/runs/{rerun[0]['id']})" in reply["body"]
    assert MARKER not in reply["body"]
    assert github.problems == []


@pytest.mark.parametrize(
    ("word", "guess"), [("retry", "rerun"), ("RERUN", "rerun"), ("explian", "explain"), ("deploy", None)]
)
def test_a_word_that_is_no_command_is_answered_with_the_nearest_one(word: str, guess: str | None) -> None:
    assert nearest_command(word) == guess
    reply = help_reply(word)
    assert reply.startswith(f"patchgate has no command `{word}`")
    assert (f"did you mean `/patchgate {guess}`?" in reply) == (guess is not None)
    assert all(f"- `/patchgate {name}`" in reply for name in ("rerun", "judge", "explain", "help"))


def test_the_help_reply_lists_every_command_the_intake_takes() -> None:
    from bot.github.events import COMMANDS

    listed = {line.split("`")[1].split()[1] for line in help_reply().splitlines() if line.startswith("- `")}
    assert listed == COMMANDS


def test_help_and_unknown_commands_are_answered_even_on_a_pr_never_gated(
    server: Server, github: FakeGitHub, tmp_path: Path
) -> None:
    pull = make_pull(github, tmp_path, "helpme")  # never opened: patchgate has gated nothing here
    assert (
        server.post("issue_comment", comment_on(pull, "/patchgate retry", comment_id=11)).json()["status"]
        == "queued"
    )
    [reply] = wait_for(lambda: github.comments_on("octo/helpme", 1), 60, "the reply")
    assert "patchgate has no command `retry`: did you mean `/patchgate rerun`?" in reply["body"]
    wait_for(lambda: ("octo/helpme", 11, "confused") in github.reactions, 30, "the confused reaction")
    assert (
        server.post("issue_comment", comment_on(pull, "/patchgate help", comment_id=12)).json()["status"]
        == "queued"
    )
    replies = wait_for(lambda: github.comments_on("octo/helpme", 1)[1:], 60, "the help reply")
    assert "- `/patchgate rerun`" in replies[0]["body"] and "did you mean" not in replies[0]["body"]
    wait_for(lambda: ("octo/helpme", 12, "+1") in github.reactions, 30, "the reaction")
    # A stranger's typo gets nothing: no reply, no reaction.
    stranger = comment_on(pull, "/patchgate retry", "NONE", comment_id=13)
    assert server.post("issue_comment", stranger).json()["status"] == "ignored"
    # Replies are never check runs (a neutral run would stand in for a verdict).
    assert pull.runs() == []
    assert [j["state"] for j in jobs(server, "octo/helpme")] == ["done", "done"]
    assert not [r for r in github.reactions if r[1] == 13]
    assert github.problems == []


def test_commands_from_others_and_on_ungated_prs_do_nothing(
    server: Server, github: FakeGitHub, tmp_path: Path
) -> None:
    pull = make_pull(github, tmp_path, "strangers")
    response = server.post("issue_comment", comment_on(pull, "/patchgate rerun", "CONTRIBUTOR"))
    assert (response.status_code, response.json()["status"]) == (202, "ignored")
    # A trusted command on a PR patchgate never gated: recorded, nothing queued.
    response = server.post("issue_comment", comment_on(pull, "/patchgate judge", "OWNER"))
    assert response.status_code == 202 and response.json()["status"] != "queued"
    assert jobs(server, "octo/strangers") == []
    # The same delivery twice is one delivery, as for every event.
    delivery = comment_on(pull, "/patchgate explain", "OWNER")
    assert server.post("issue_comment", delivery, delivery="dup-1").status_code == 202
    assert server.post("issue_comment", delivery, delivery="dup-1").json()["status"] == "duplicate"


def test_an_explain_reply_github_refuses_adds_no_check_run(
    server: Server, github: FakeGitHub, tmp_path: Path, read_only: None
) -> None:
    pull = make_pull(github, tmp_path, "explainfail", scenario={"findings": 1})
    server.post("pull_request", pull.payload("opened"))
    wait_for(pull.completed, 60, "the run")
    server.post("issue_comment", comment_on(pull, "/patchgate explain"))
    [job] = wait_for(
        lambda: [j for j in jobs(server, "octo/explainfail") if j["trigger"] == "issue_comment.explain"
                 and j["state"] == "done"], 60, "the explain job")  # fmt: skip
    assert "the explain reply failed" in job["detail"] and job["check_run_id"] is None
    # Only the gate's own run: a neutral one would stand in for the failure on a required check.
    assert [r["conclusion"] for r in pull.runs()] == ["failure"]
