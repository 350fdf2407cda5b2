"""The webhook payloads patchgate reads: small lenient models keeping only the fields it needs.

Validating the whole payload with githubkit's webhook models first cost about
5 ms of the event loop per delivery (and GitHub regularly strays from those
models anyway, so the raw dict was read in the end): the webhook's
acknowledgement latency is worth more. events.py routes what these hold.
Event reference: https://docs.github.com/en/webhooks/webhook-events-and-payloads
"""

from __future__ import annotations

import contextlib
from typing import Any

from githubkit.utils import UNSET
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import PydanticUseDefault


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore", from_attributes=True, frozen=True)

    @field_validator("*", mode="before")
    @classmethod
    def _unset_is_default(cls, value: Any) -> Any:
        # githubkit marks absent optional fields with UNSET, not None.
        if value is UNSET:
            raise PydanticUseDefault
        return value


class Account(_Lenient):
    login: str = ""


class Repository(_Lenient):
    full_name: str


class Installation(_Lenient):
    id: int
    account: Account | None = None


class Label(_Lenient):
    name: str


class Branch(_Lenient):
    sha: str
    ref: str
    # None when a fork was deleted.
    repo: Repository | None = None


class PullRequest(_Lenient):
    number: int
    head: Branch
    base: Branch
    state: str = "open"
    title: str = ""
    body: str | None = None
    draft: bool | None = False
    # Set on a closed PR: closed by merging it.
    merged: bool | None = False
    user: Account | None = None
    labels: list[Label] = Field(default_factory=list)


class PullRequestPayload(_Lenient):
    action: str
    number: int
    pull_request: PullRequest
    repository: Repository
    installation: Installation | None = None


class ShortBranch(_Lenient):
    sha: str
    ref: str


class ShortPull(_Lenient):
    """A PR as check_suite / check_run payloads list it (empty for fork PRs)."""

    number: int
    head: ShortBranch
    base: ShortBranch


class CheckSuite(_Lenient):
    head_sha: str
    pull_requests: list[ShortPull] = Field(default_factory=list)


class CheckSuitePayload(_Lenient):
    action: str
    check_suite: CheckSuite
    repository: Repository
    installation: Installation | None = None


class CheckRun(_Lenient):
    id: int
    head_sha: str
    name: str = ""
    external_id: str | None = None
    pull_requests: list[ShortPull] = Field(default_factory=list)


class RequestedAction(_Lenient):
    identifier: str


class CheckRunPayload(_Lenient):
    action: str
    check_run: CheckRun
    requested_action: RequestedAction | None = None
    repository: Repository
    installation: Installation | None = None


class RepositoryRef(_Lenient):
    full_name: str


class InstallationPayload(_Lenient):
    action: str
    installation: Installation
    repositories: list[RepositoryRef] = Field(default_factory=list)
    repositories_added: list[RepositoryRef] = Field(default_factory=list)
    repositories_removed: list[RepositoryRef] = Field(default_factory=list)


class Comment(_Lenient):
    id: int
    body: str | None = ""
    author_association: str = "NONE"
    user: Account | None = None


class CommentedIssue(_Lenient):
    number: int
    # Present (an object of links) only when the issue is a pull request:
    # https://docs.github.com/en/webhooks/webhook-events-and-payloads#issue_comment
    pull_request: dict[str, Any] | None = None


class IssueCommentPayload(_Lenient):
    action: str
    issue: CommentedIssue
    comment: Comment
    repository: Repository
    installation: Installation | None = None


Payload = PullRequestPayload | CheckSuitePayload | CheckRunPayload | InstallationPayload | IssueCommentPayload
_MODELS: dict[str, type[Payload]] = {
    "pull_request": PullRequestPayload,
    "check_suite": CheckSuitePayload,
    "check_run": CheckRunPayload,
    "installation": InstallationPayload,
    "installation_repositories": InstallationPayload,
    "issue_comment": IssueCommentPayload,
}


def warm_up() -> None:
    """Build the payload validators now rather than inside the first delivery."""
    for model in _MODELS.values():
        with contextlib.suppress(ValidationError):
            model.model_validate({})


def parse(event: str, data: dict[str, Any]) -> Payload:
    """Read the fields patchgate needs from a routed event's payload.

    Raises pydantic's ValidationError when any of them is absent or mistyped.
    """
    return _MODELS[event].model_validate(data)
