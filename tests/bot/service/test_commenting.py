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

from checks.render.comment import MARKER
from tests.bot.harness import POLICY, Pull, Server, fixture, jobs, make_pull, wait_for
from tests.fakes.github_server import FakeGitHub


def comment_on(pull: Pull, body: str, association: str = "MEMBER") -> dict[str, Any]:
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
    data["comment"] = {**data["comment"], "body": body, "author_association": association}
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
    assert rerun[0]["head_sha"] == pull.head_sha
    assert [j["trigger"] for j in jobs(server, "octo/cmds")][-1] == "issue_comment.rerun"
    server.post("issue_comment", comment_on(pull, "/patchgate explain\nwhy did it fail?"))
    [reply] = wait_for(lambda: github.comments_on("octo/cmds", 1), 60, "the explain reply")
    assert "2 new findings" in reply["body"] and f"/runs/{rerun[0]['id']})" in reply["body"]
    assert MARKER not in reply["body"]
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
