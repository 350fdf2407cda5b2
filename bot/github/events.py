"""Webhook routing: which (event, action) pairs become which work. Pure: no I/O.

The payloads are read into payloads.py's lenient models first.
Event reference: https://docs.github.com/en/webhooks/webhook-events-and-payloads
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Literal

from bot.github.payloads import (
    CheckSuitePayload,
    InstallationPayload,
    IssueCommentPayload,
    Payload,
    PullRequestPayload,
)
from checks.policy import Policy

log = logging.getLogger(__name__)

# pull_request actions that (re)start a gate run; `closed` cancels one.
PR_GATE_ACTIONS = frozenset({"opened", "synchronize", "reopened", "ready_for_review"})
ROUTES: dict[str, frozenset[str]] = {
    "pull_request": PR_GATE_ACTIONS | {"closed"},
    "check_suite": frozenset({"rerequested"}),
    "check_run": frozenset({"rerequested", "requested_action"}),
    "installation": frozenset({"created", "deleted", "suspend", "unsuspend", "new_permissions_accepted"}),
    "installation_repositories": frozenset({"added", "removed"}),
    # Comment commands (/patchgate rerun|judge|explain); an edited comment is not a new command.
    "issue_comment": frozenset({"created"}),
}
# Check-run buttons (`actions`): identifiers are at most 20 characters.
# https://docs.github.com/en/rest/checks/runs#check-runs-and-requested-actions
RERUN = "rerun"
JUDGE = "judge"
# Comment commands and who may give them: people with write access to the repository, by
# the comment's author_association.
# https://docs.github.com/en/graphql/reference/enums#commentauthorassociation
COMMANDS = frozenset({"rerun", "judge", "explain", "help"})
TRUSTED_ASSOCIATIONS = frozenset({"OWNER", "MEMBER", "COLLABORATOR"})
EXPLAIN = "issue_comment.explain"
# Replies that gate nothing: the list of commands, and the answer to a word that is none of them.
HELP = "issue_comment.help"
UNKNOWN = "issue_comment.unknown"
REPLIES = frozenset({HELP, UNKNOWN})
# What is kept of a word that is no command (it is quoted back in the reply, as code).
MAX_ARGUMENT = 40
# Triggers of the job that takes a closed or merged PR out of its issue's ranking (bot/service/ranking.py).
WITHDRAWN_CLOSED = "pull_request.closed"
WITHDRAWN_MERGED = "pull_request.merged"


@dataclass(frozen=True)
class GateRequest:
    """Gate one head sha of one PR (the PR number may have to be found from the sha)."""

    installation_id: int
    repository: str
    head_sha: str
    trigger: str
    pr_number: int | None = None
    # A rerun asks for a fresh check run even when this sha was gated already.
    rerun: bool = False
    judge_anyway: bool = False
    # synchronize: older runs of the same PR are superseded by this sha.
    supersedes: bool = False
    # check_run events: the run key of the check run whose button was pressed.
    external_id: str | None = None
    # Comment commands: the comment (it gets a reaction) and, for an unknown one, the word typed.
    comment_id: int | None = None
    argument: str = ""


@dataclass(frozen=True)
class CancelRequest:
    repository: str
    pr_number: int
    reason: str


@dataclass(frozen=True)
class InstallationChange:
    installation_id: int
    account: str
    action: str
    active: bool
    repos_added: tuple[str, ...] = ()
    repos_removed: tuple[str, ...] = ()


@dataclass(frozen=True)
class Ignore:
    reason: str


Action = GateRequest | CancelRequest | InstallationChange | Ignore


def routed(event: str, action: str | None) -> bool:
    """Return True when patchgate acts on this (event, action)."""
    return action is not None and action in ROUTES.get(event, frozenset())


def route(event: str, payload: Payload) -> list[Action]:
    """Turn one parsed delivery into the work it asks for."""
    if isinstance(payload, InstallationPayload):
        return [_installation(event, payload)]
    if payload.installation is None:
        return [Ignore("the delivery names no installation")]
    inst, repo = payload.installation.id, payload.repository.full_name
    if isinstance(payload, IssueCommentPayload):
        return [_comment_command(inst, repo, payload)]
    if isinstance(payload, PullRequestPayload):
        pr = payload.pull_request
        if payload.action == "closed":
            # The running job stops; a candidate for an issue leaves its ranking (best of k).
            trigger = WITHDRAWN_MERGED if pr.merged else WITHDRAWN_CLOSED
            return [
                CancelRequest(repo, payload.number, "the pull request was closed"),
                GateRequest(inst, repo, pr.head.sha, trigger, payload.number, rerun=True),
            ]
        return [
            GateRequest(
                inst,
                repo,
                pr.head.sha,
                f"pull_request.{payload.action}",
                payload.number,
                supersedes=payload.action == "synchronize",
            )
        ]
    if isinstance(payload, CheckSuitePayload):
        suite = payload.check_suite
        trigger = "check_suite.rerequested"
        # Fork PRs are missing from `pull_requests`; the store finds them by sha.
        numbers: list[int | None] = [p.number for p in suite.pull_requests] or [None]
        return [GateRequest(inst, repo, suite.head_sha, trigger, n, rerun=True) for n in numbers]
    run = payload.check_run
    number = run.pull_requests[0].number if run.pull_requests else None
    if payload.action == "rerequested":
        return [
            GateRequest(
                inst,
                repo,
                run.head_sha,
                "check_run.rerequested",
                number,
                rerun=True,
                external_id=run.external_id,
            )
        ]
    identifier = payload.requested_action.identifier if payload.requested_action else ""
    if identifier not in (RERUN, JUDGE):
        return [Ignore(f"unknown check-run button {identifier!r}")]
    return [
        GateRequest(
            inst,
            repo,
            run.head_sha,
            f"check_run.requested_action.{identifier}",
            number,
            rerun=True,
            judge_anyway=identifier == JUDGE,
            external_id=run.external_id,
        )
    ]


def command_of(body: str) -> str | None:
    """Return the command a comment gives (``/patchgate rerun`` on its first line), or None."""
    parsed = parse_command(body)
    return parsed[0] if parsed is not None and parsed[0] != "unknown" else None


def parse_command(body: str) -> tuple[str, str] | None:
    """Return (command, word typed) of a comment whose first line starts with ``/patchgate``.

    ``/patchgate`` alone asks for help; a word that is no command, or a command followed by
    more words, is ``unknown`` (answered with the nearest command). None: no /patchgate line.
    """
    words = body.strip().split("\n", 1)[0].split()
    if not words or words[0] != "/patchgate":
        return None
    if len(words) == 1:
        return "help", ""
    if len(words) == 2 and words[1] in COMMANDS:
        return words[1], ""
    return "unknown", " ".join(words[1:])[:MAX_ARGUMENT]


def _comment_command(inst: int, repo: str, payload: IssueCommentPayload) -> Action:
    comment, number = payload.comment, payload.issue.number
    parsed = parse_command(comment.body or "")
    if parsed is None:
        return Ignore("the comment gives no /patchgate command")
    command, argument = parsed
    if payload.issue.pull_request is None:
        return Ignore(f"/patchgate {command} on an issue, not a pull request")
    login = comment.user.login if comment.user else "?"
    if comment.author_association not in TRUSTED_ASSOCIATIONS:
        # Anyone may comment on a public PR; reruns and judge calls cost compute and money.
        log.info("ignored /patchgate %s on %s#%s by %s (%s)", command, repo, number, login,
                 comment.author_association)  # fmt: skip
        return Ignore(f"/patchgate {command} by {login} ({comment.author_association}): "
                      "only owners, members and collaborators may give commands")  # fmt: skip
    # No sha in the payload: the PR's latest gated head is rerun (bot.store.deliveries finds it).
    return GateRequest(
        inst,
        repo,
        "",
        f"issue_comment.{command}",
        number,
        rerun=True,
        judge_anyway=command == "judge",
        comment_id=comment.id,
        argument=argument,
    )


def _installation(event: str, payload: InstallationPayload) -> InstallationChange:
    inst = payload.installation
    account = inst.account.login if inst.account else ""
    if event == "installation":
        added = tuple(r.full_name for r in payload.repositories) if payload.action == "created" else ()
        active = payload.action not in ("deleted", "suspend")
        return InstallationChange(inst.id, account, payload.action, active, repos_added=added)
    return InstallationChange(
        inst.id,
        account,
        payload.action,
        True,
        repos_added=tuple(r.full_name for r in payload.repositories_added),
        repos_removed=tuple(r.full_name for r in payload.repositories_removed),
    )


AgentVerdict = Literal["agent", "not_agent", "draft"]


def classify(policy: Policy, *, author: str, labels: list[str], head_ref: str, draft: bool) -> AgentVerdict:
    """Decide whether a PR is an agent PR, by the BASE branch's policy (never the head's)."""
    if not policy.agents.matches(author, labels, head_ref):
        return "not_agent"
    if draft and not policy.agents.include_drafts:
        return "draft"
    return "agent"


def run_key(repository: str, pr_number: int, head_sha: str, suffix: str = "") -> str:
    """Return the run key: the check run's ``external_id`` and the job's unique name."""
    key = f"{repository}#{pr_number}@{head_sha}"
    return f"{key}~{suffix}" if suffix else key
