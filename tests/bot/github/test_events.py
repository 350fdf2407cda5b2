"""Routing of real recorded deliveries, githubkit parsing with the raw-dict fallback, agent detection."""

from __future__ import annotations

import copy

import pytest
from githubkit import webhooks
from pydantic import ValidationError

from bot.github import events, payloads
from bot.github.events import (
    CancelRequest,
    GateRequest,
    Ignore,
    InstallationChange,
    classify,
    route,
    routed,
    run_key,
)
from bot.github.payloads import parse
from checks.policy import Policy
from checks.policyfile import load_policy
from tests.bot.harness import fixture


def routes_of(name: str, **changes: object) -> list[events.Action]:
    event = name.split(".", maxsplit=1)[0]
    data = copy.deepcopy(fixture(name))
    data.update(changes)
    return route(event, parse(event, data))


@pytest.mark.parametrize(
    ("event", "action", "handled"),
    [
        ("pull_request", "opened", True),
        ("pull_request", "synchronize", True),
        ("pull_request", "reopened", True),
        ("pull_request", "ready_for_review", True),
        ("pull_request", "closed", True),
        ("pull_request", "labeled", False),
        ("pull_request", None, False),
        ("check_suite", "rerequested", True),
        ("check_suite", "requested", False),
        ("check_run", "rerequested", True),
        ("check_run", "requested_action", True),
        ("check_run", "created", False),
        ("installation", "created", True),
        ("installation", "deleted", True),
        ("installation_repositories", "added", True),
        ("installation_repositories", "removed", True),
        ("push", None, False),
        ("ping", None, False),
        ("issues", "opened", False),
    ],
)
def test_routed_pairs(event: str, action: str | None, handled: bool) -> None:
    assert routed(event, action) is handled


@pytest.mark.slow
def test_githubkit_parses_what_it_can_and_the_raw_dict_covers_the_rest() -> None:
    # GitHub's own pull_request.opened example does not fit githubkit's model...
    with pytest.raises(ValidationError):
        webhooks.parse_obj("pull_request", fixture("pull_request.opened"))
    # ...but synchronize does; both give the same routing facts.
    webhooks.parse_obj("pull_request", fixture("pull_request.synchronize"))
    opened = parse("pull_request", fixture("pull_request.opened"))
    synced = parse("pull_request", fixture("pull_request.synchronize"))
    assert isinstance(opened, payloads.PullRequestPayload)
    assert isinstance(synced, payloads.PullRequestPayload)
    assert (opened.repository.full_name, synced.repository.full_name) == ("Codertocat/Hello-World",) * 2
    assert synced.pull_request.head.sha == "ec26c3e57ca3a959ca5aad62de7213c562f8c821"


def test_a_payload_without_the_needed_fields_is_a_validation_error() -> None:
    data = copy.deepcopy(fixture("pull_request.synchronize"))
    del data["pull_request"]["head"]
    with pytest.raises(ValidationError):
        parse("pull_request", data)


def test_pull_request_actions() -> None:
    # GitHub's example of `opened` comes from a repository webhook: no installation in it.
    assert routes_of("pull_request.opened") == [Ignore("the delivery names no installation")]
    [opened] = routes_of("pull_request.opened", installation={"id": 1})
    head = fixture("pull_request.opened")["pull_request"]["head"]["sha"]
    assert opened == GateRequest(1, "Codertocat/Hello-World", head, "pull_request.opened", 2)
    [synced] = routes_of("pull_request.synchronize")
    assert isinstance(synced, GateRequest)
    assert synced.supersedes and not synced.rerun
    # A closed PR's running job stops, and a job takes it out of its issue's ranking (best of k).
    closed, withdrawn = routes_of("pull_request.closed", installation={"id": 1})
    assert closed == CancelRequest("Codertocat/Hello-World", 2, "the pull request was closed")
    head = fixture("pull_request.closed")["pull_request"]["head"]["sha"]
    assert withdrawn == GateRequest(1, "Codertocat/Hello-World", head, "pull_request.closed", 2, rerun=True)
    for action in ("reopened", "ready_for_review"):
        [req] = routes_of(f"pull_request.{action}", installation={"id": 1})
        assert isinstance(req, GateRequest)
        assert req.trigger == f"pull_request.{action}"


def test_a_merged_pr_is_withdrawn_as_merged() -> None:
    data = copy.deepcopy(fixture("pull_request.closed"))
    data["installation"] = {"id": 1}
    data["pull_request"]["merged"] = True
    _, withdrawn = route("pull_request", parse("pull_request", data))
    assert isinstance(withdrawn, GateRequest)
    assert withdrawn.trigger == "pull_request.merged"


def test_check_suite_rerequested_reruns_each_listed_pr() -> None:
    actions = routes_of("check_suite.rerequested")
    suite = fixture("check_suite.rerequested")["check_suite"]
    assert suite["pull_requests"], "the recorded example lists its PR"
    assert [a.pr_number for a in actions if isinstance(a, GateRequest)] == [
        p["number"] for p in suite["pull_requests"]
    ]
    assert all(isinstance(a, GateRequest) and a.rerun for a in actions)


def test_check_suite_of_a_fork_pr_has_no_pr_number() -> None:
    data = copy.deepcopy(fixture("check_suite.rerequested"))
    data["check_suite"]["pull_requests"] = []
    [req] = route("check_suite", parse("check_suite", data))
    assert isinstance(req, GateRequest)
    assert req.pr_number is None


def test_check_run_rerequested_and_buttons() -> None:
    [rerun] = routes_of("check_run.rerequested")
    assert isinstance(rerun, GateRequest)
    assert rerun.rerun and not rerun.judge_anyway
    data = copy.deepcopy(fixture("check_run.requested_action"))
    data["check_run"]["external_id"] = "octo/x#3@abc"
    for identifier, judge in (("rerun", False), ("judge", True)):
        data["requested_action"] = {"identifier": identifier}
        [req] = route("check_run", parse("check_run", data))
        assert isinstance(req, GateRequest)
        assert (req.rerun, req.judge_anyway, req.external_id) == (True, judge, "octo/x#3@abc")
    data["requested_action"] = {"identifier": "launch"}
    assert route("check_run", parse("check_run", data)) == [Ignore("unknown check-run button 'launch'")]


def test_installation_events_are_recorded() -> None:
    [created] = routes_of("installation.created")
    assert isinstance(created, InstallationChange)
    assert created.active and created.repos_added
    [deleted] = routes_of("installation.deleted")
    assert isinstance(deleted, InstallationChange)
    assert not deleted.active
    [added] = routes_of("installation_repositories.added")
    [removed] = routes_of("installation_repositories.removed")
    assert isinstance(added, InstallationChange)
    assert isinstance(removed, InstallationChange)
    assert added.repos_added and not added.repos_removed
    assert removed.repos_removed and removed.active


POLICY = load_policy("agents:\n  authors: ['*[bot]']\n  labels: [agent]\n  branch_prefixes: [agent/]\n")
DRAFTS = load_policy("agents:\n  authors: ['*[bot]']\n  include_drafts: true\n")


@pytest.mark.parametrize(
    "case",
    [
        (POLICY, "copilot-swe-agent[bot]", [], "fix", False, "agent"),
        (POLICY, "alice", ["agent"], "fix", False, "agent"),
        (POLICY, "alice", [], "agent/fix", False, "agent"),
        (POLICY, "alice", ["bug"], "fix", False, "not_agent"),
        (POLICY, "alice", [], "feature/agent/x", False, "not_agent"),
        (POLICY, "patchbot[bot]", [], "fix", True, "draft"),
        (DRAFTS, "patchbot[bot]", [], "fix", True, "agent"),
        (POLICY, "alice", [], "fix", True, "not_agent"),
    ],
)
def test_classify(case: tuple[Policy, str, list[str], str, bool, str]) -> None:
    policy, author, labels, head_ref, draft, verdict = case
    assert classify(policy, author=author, labels=labels, head_ref=head_ref, draft=draft) == verdict


def test_run_key() -> None:
    assert run_key("o/r", 5, "abc") == "o/r#5@abc"
    assert run_key("o/r", 5, "abc", "d1") == "o/r#5@abc~d1"


def comment_payload(body: str, association: str = "MEMBER", *, on_pull: bool = True) -> dict[str, object]:
    """GitHub's issue_comment.created example, made a PR comment (its example is on an issue)."""
    data = copy.deepcopy(fixture("issue_comment.created"))
    data["installation"] = {"id": 77, "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uNzc="}
    data["comment"]["body"] = body
    data["comment"]["author_association"] = association
    if on_pull:
        api = "https://api.github.com/repos/Codertocat/Hello-World/pulls/1"
        data["issue"]["pull_request"] = {
            "url": api, "html_url": "https://github.com/Codertocat/Hello-World/pull/1",
            "diff_url": "https://github.com/Codertocat/Hello-World/pull/1.diff",
            "patch_url": "https://github.com/Codertocat/Hello-World/pull/1.patch", "merged_at": None,
        }  # fmt: skip
    return data


def test_issue_comment_created_is_routed_and_githubs_example_parses() -> None:
    assert routed("issue_comment", "created") and not routed("issue_comment", "edited")
    example = parse("issue_comment", fixture("issue_comment.created"))
    assert isinstance(example, payloads.IssueCommentPayload)
    assert (example.issue.number, example.comment.author_association) == (1, "OWNER")
    # The example comment is on an issue and names no installation: nothing to do.
    assert route("issue_comment", example) == [Ignore("the delivery names no installation")]


@pytest.mark.parametrize(
    ("body", "command"),
    [
        ("/patchgate rerun", "rerun"),
        ("  /patchgate judge  \nplease", "judge"),
        ("/patchgate explain\r\n", "explain"),
        ("/patchgate help", "help"),
        ("/patchgate", "help"),
        ("/patchgate deploy", None),
        ("/patchgate rerun now", None),
        ("please /patchgate rerun", None),
        ("LGTM", None),
    ],
)
def test_command_of(body: str, command: str | None) -> None:
    assert events.command_of(body) == command


@pytest.mark.parametrize("association", ["OWNER", "MEMBER", "COLLABORATOR"])
def test_comment_commands_of_trusted_authors_become_jobs(association: str) -> None:
    for command, judge in (("rerun", False), ("judge", True), ("explain", False)):
        data = comment_payload(f"/patchgate {command}", association)
        [req] = route("issue_comment", parse("issue_comment", data))
        assert req == GateRequest(
            77,
            "Codertocat/Hello-World",
            "",
            f"issue_comment.{command}",
            1,
            rerun=True,
            judge_anyway=judge,
            comment_id=492700400,  # the comment gets a reaction when its job takes the command
        )


@pytest.mark.parametrize(
    ("body", "command", "argument"),
    [
        ("/patchgate help", "help", ""),
        ("/patchgate", "help", ""),
        ("/patchgate retry", "unknown", "retry"),
        ("/patchgate rerun now please", "unknown", "rerun now please"),
        ("/patchgate " + "x" * 200, "unknown", "x" * events.MAX_ARGUMENT),
    ],
)
def test_help_and_words_that_are_no_command_become_replies(body: str, command: str, argument: str) -> None:
    [req] = route("issue_comment", parse("issue_comment", comment_payload(body, "OWNER")))
    assert isinstance(req, GateRequest)
    assert (req.trigger, req.argument) == (f"issue_comment.{command}", argument)
    assert req.trigger in events.REPLIES


def test_a_stranger_gets_no_reply_to_a_word_that_is_no_command() -> None:
    [ignored] = route("issue_comment", parse("issue_comment", comment_payload("/patchgate retry", "NONE")))
    assert isinstance(ignored, Ignore) and "only owners, members and collaborators" in ignored.reason


@pytest.mark.parametrize("association", ["CONTRIBUTOR", "FIRST_TIME_CONTRIBUTOR", "FIRST_TIMER", "NONE"])
def test_comment_commands_of_others_are_ignored_and_logged(
    association: str, caplog: pytest.LogCaptureFixture
) -> None:
    data = comment_payload("/patchgate rerun", association)
    with caplog.at_level("INFO", logger="bot.github.events"):
        [ignored] = route("issue_comment", parse("issue_comment", data))
    assert isinstance(ignored, Ignore)
    assert ignored.reason == (
        f"/patchgate rerun by Codertocat ({association}): "
        "only owners, members and collaborators may give commands"
    )
    logged = f"ignored /patchgate rerun on Codertocat/Hello-World#1 by Codertocat ({association})"
    assert logged in caplog.text


def test_comments_that_are_not_commands_or_not_on_a_pull_are_ignored() -> None:
    assert route("issue_comment", parse("issue_comment", comment_payload("LGTM"))) == [
        Ignore("the comment gives no /patchgate command")
    ]
    on_issue = comment_payload("/patchgate rerun", on_pull=False)
    assert route("issue_comment", parse("issue_comment", on_issue)) == [
        Ignore("/patchgate rerun on an issue, not a pull request")
    ]
