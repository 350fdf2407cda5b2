"""GitHub REST as one installation, through githubkit: PRs, files, tarballs, check runs, SARIF.

The App (its JWT, the clients it hands out) is in app.py, the retry policy in retry.py.

The installation token lives in githubkit's in-memory cache until a minute
before it expires; it travels only in the ``Authorization`` header - never in
a URL, a log line or a file. Server errors and network failures are retried
with exponential backoff; rate limits are waited out when the wait is short
enough (``max_rate_limit_wait_s``), and otherwise surface as GitHubError,
which the worker treats as infrastructure trouble, never as a PR failure.
"""

from __future__ import annotations

import asyncio
import base64
import gzip
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Literal, TypeVar

from githubkit import GitHub
from githubkit.exception import GitHubException, RateLimitExceeded, RequestFailed
from pydantic import BaseModel, ValidationError

from bot import metrics
from bot.github.checkrun import CompleteBody, Completion, CreateBody, CreateCompletedBody, UpdateBody
from bot.github.linked import Issue, PullCommit
from bot.github.payloads import PullRequest
from bot.github.retry import unwrap
from bot.settings import Settings
from checks.workspace import TreeEntry
from sandbox.trees import TreeBoundExceeded

# Code scanning's upload limits: results per run beyond 5,000 are dropped and over 25,000 the
# upload is refused; the gzipped log may be at most 10 MB.
SARIF_MAX_RESULTS = 5000
SARIF_MAX_BYTES = 10 * 1024 * 1024

# The reactions patchgate puts on a command's comment (GitHub's set has more).
Reaction = Literal["+1", "confused"]
log = logging.getLogger(__name__)
# httpx logs every request URL at INFO; URLs carry no secrets, but keep the log about patchgate.
logging.getLogger("httpx").setLevel(logging.WARNING)

_T = TypeVar("_T")
_M = TypeVar("_M", bound=BaseModel)


class GitHubError(Exception):
    """GitHub did not answer usefully (after retries): infrastructure trouble.

    ``retryable`` is False for answers that will not change by asking again (4xx); ``status``
    is GitHub's HTTP status when it answered one (None: the network, or refused before sending).
    """

    def __init__(self, message: str, *, retryable: bool = True, status: int | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.status = status


class NotFound(GitHubError):
    """The object does not exist or the App cannot see it."""


class InstallationGone(Exception):
    """The App was uninstalled or suspended, or lost access: nothing can be reported any more."""


def written_by(comment: dict[str, Any], login: str) -> bool:
    """Say whether GitHub names the bot ``login`` as the author of ``comment`` (a REST issue comment).

    A login ending in ``[bot]`` belongs to one App's bot user: nobody can sign up with one, and
    the App's slug is unique. ``user`` is null once its account is deleted.
    https://docs.github.com/en/rest/issues/comments#get-an-issue-comment
    """
    user = comment.get("user") or {}
    return user.get("type") == "Bot" and user.get("login") == login


def _lenient(model: type[_M], parsed: Callable[[], object], raw: Callable[[], Any]) -> _M:
    """Read a response through githubkit's model, or the raw JSON when GitHub strays from it."""
    try:
        return model.model_validate(parsed())
    except ValidationError:
        return model.model_validate(raw())


class Installation:
    """REST calls as one installation; every method raises GitHubError, NotFound or InstallationGone."""

    def __init__(
        self,
        gh: GitHub[Any],
        installation_id: int,
        settings: Settings,
        bot_login: Callable[[], Awaitable[str]],
    ) -> None:
        self.gh = gh
        self.installation_id = installation_id
        self.settings = settings
        # The login of what this App writes (``{slug}[bot]``): GitHubApp.bot_login, asked once.
        self.bot_login = bot_login

    async def _call(self, what: str, call: Callable[[], Awaitable[_T]]) -> _T:
        try:
            return await call()
        except GitHubException as raised:
            exc = unwrap(raised)
            status = exc.response.status_code if isinstance(exc, RequestFailed) else "network"
            metrics.GITHUB_ERRORS.labels(status=str(status)).inc()
            raise self._translate(what, exc) from raised

    def _translate(self, what: str, exc: GitHubException) -> Exception:
        """Map a githubkit failure onto GitHubError (retryable or not), NotFound or InstallationGone."""
        if isinstance(exc, RequestFailed):
            status = exc.response.status_code
            path = exc.response.raw_request.url.path
            if path.endswith("/access_tokens") and status == 401:
                return GitHubError(
                    "GitHub refused the App's JWT (401): check PATCHGATE_APP_ID and the private key",
                    retryable=False,
                    status=401,
                )
            if path.endswith("/access_tokens") and status in (403, 404):
                return InstallationGone(
                    f"installation {self.installation_id}: GitHub refused a token ({status}): "
                    "the App was uninstalled or suspended"
                )
            if status == 401:
                return InstallationGone(f"{what}: GitHub rejected the installation token (401)")
            if status == 404:
                return NotFound(f"{what}: not found (404)", retryable=False, status=404)
            limited = isinstance(exc, RateLimitExceeded)
            return GitHubError(
                f"{what}: GitHub answered {status}{' (rate limited)' if limited else ''}",
                retryable=status >= 500 or limited,
                status=status,
            )
        return GitHubError(f"{what}: {type(exc).__name__}: {exc}")

    async def pull(self, repository: str, number: int) -> PullRequest:
        """Return the pull request as it is now."""
        owner, name = repository.split("/", 1)
        resp = await self._call(
            f"get {repository}#{number}", lambda: self.gh.rest.pulls.async_get(owner, name, number)
        )
        return _lenient(PullRequest, lambda: resp.parsed_data, resp.json)

    async def issue(self, repository: str, number: int) -> Issue | None:
        """Return an issue, or None when it cannot be read: gone (404, 410) or not permitted (403).

        Reading issues needs the App's ``issues: read`` permission, which an installation made
        before patchgate asked for it may not have granted yet; the judge then goes without.
        """
        owner, name = repository.split("/", 1)
        try:
            resp = await self._call(
                f"read issue {repository}#{number}",
                lambda: self.gh.rest.issues.async_get(owner, name, number),
            )
        except GitHubError as exc:
            if exc.retryable:
                raise
            log.info("linked issue %s#%s not read: %s", repository, number, exc)
            return None
        return Issue.model_validate(resp.json())

    async def pull_commits(self, repository: str, number: int) -> list[PullCommit]:
        """Return the first 100 commits of a pull request (none when GitHub refuses for good)."""
        owner, name = repository.split("/", 1)
        try:
            resp = await self._call(
                f"list commits of {repository}#{number}",
                lambda: self.gh.rest.pulls.async_list_commits(owner, name, number, per_page=100),
            )
        except GitHubError as exc:
            if exc.retryable:
                raise
            log.info("commits of %s#%s not read: %s", repository, number, exc)
            return []
        data: Any = resp.json()  # read leniently: GitHub's commits stray from githubkit's model
        items = data if isinstance(data, list) else []
        return [PullCommit.model_validate(c) for c in items if isinstance(c, dict)]

    async def file_at(self, repository: str, path: str, ref: str) -> str | None:
        """Return a text file at ``ref`` (``None`` when it does not exist)."""
        owner, name = repository.split("/", 1)
        try:
            resp = await self._call(
                f"read {path} at {ref[:12]}",
                lambda: self.gh.rest.repos.async_get_content(owner, name, path, ref=ref),
            )
        except NotFound:
            return None
        data = resp.json()
        # Asking again will not change these answers (a directory; a file over 1 MB has no content).
        if not isinstance(data, dict) or data.get("type") != "file":
            raise GitHubError(f"{path} at {ref[:12]} is not a file", retryable=False)
        if data.get("encoding") != "base64":
            raise GitHubError(
                f"{path} at {ref[:12]}: unexpected encoding {data.get('encoding')!r}", retryable=False
            )
        return base64.b64decode(str(data.get("content", ""))).decode("utf-8", "replace")

    async def commit_sha(self, repository: str, ref: str) -> str:
        """Return the commit sha ``ref`` (a branch, tag or sha) names."""
        owner, name = repository.split("/", 1)
        # https://docs.github.com/en/rest/commits/commits#get-a-commit
        resp = await self._call(
            f"resolve {ref} in {repository}", lambda: self.gh.rest.repos.async_get_commit(owner, name, ref)
        )
        return str(resp.json()["sha"])

    async def find_comment(self, repository: str, number: int, marker: str) -> int | None:
        """Return the id of the first comment this App wrote on PR ``number`` that starts with ``marker``.

        Only the App's own: anyone can write the marker, and a comment the PR's author owns,
        taken for patchgate's, would be edited by patchgate and then edited back by its owner.
        Raises GitHubError when the App's own login cannot be learnt.
        """
        mine = await self.bot_login()
        owner, name = repository.split("/", 1)
        # https://docs.github.com/en/rest/issues/comments#list-issue-comments (a PR is an issue here)
        for page in range(1, 11):  # 1,000 comments: a PR busier than that gets a fresh comment

            async def listed(page: int = page) -> Any:
                issues = self.gh.rest.issues
                resp = await issues.async_list_comments(owner, name, number, per_page=100, page=page)
                return resp.json()

            what = f"list comments of {repository}#{number}"
            comments: list[dict[str, Any]] = await self._call(what, listed)
            for comment in comments:
                if written_by(comment, mine) and str(comment.get("body") or "").startswith(marker):
                    return int(comment["id"])
            if len(comments) < 100:
                return None
        return None

    async def react(self, repository: str, comment_id: int, content: Reaction) -> None:
        """React to a comment of a PR's conversation (GitHub answers 200 when that reaction exists)."""
        owner, name = repository.split("/", 1)
        # https://docs.github.com/en/rest/reactions/reactions#create-reaction-for-an-issue-comment
        await self._call(
            f"react to comment {comment_id} on {repository}",
            lambda: self.gh.rest.reactions.async_create_for_issue_comment(
                owner,
                name,
                comment_id,
                content=content,
            ),
        )

    async def comment(self, repository: str, number: int, body: str, *, comment_id: int | None = None) -> int:
        """Create a comment on PR ``number``, or edit ``comment_id`` in place; return its id."""
        owner, name = repository.split("/", 1)
        # https://docs.github.com/en/rest/issues/comments#create-an-issue-comment
        # https://docs.github.com/en/rest/issues/comments#update-an-issue-comment
        if comment_id is None:
            resp = await self._call(
                f"comment on {repository}#{number}",
                lambda: self.gh.rest.issues.async_create_comment(owner, name, number, body=body),
            )
        else:
            resp = await self._call(
                f"edit comment {comment_id} on {repository}",
                lambda: self.gh.rest.issues.async_update_comment(owner, name, comment_id, body=body),
            )
        return int(resp.json()["id"])

    async def tarball(self, repository: str, ref: str) -> bytes:
        """Download the tree at ``ref`` as a gzipped tar (one top-level folder, like GitHub's)."""
        owner, name = repository.split("/", 1)
        cap = self.settings.max_tarball_bytes

        async def fetch() -> bytes:
            async with self.gh:
                resp = await self.gh.rest.repos.async_download_tarball_archive(owner, name, ref, stream=True)
                chunks: list[bytes] = []
                size = 0
                async for chunk in resp.aiter_bytes():
                    size += len(chunk)
                    if size > cap:
                        # The tree's own size, the PR's doing on its head: refused, never infrastructure.
                        raise TreeBoundExceeded(".", "bytes", cap)
                    chunks.append(chunk)
                return b"".join(chunks)

        return await self._call(f"download {repository} at {ref[:12]}", fetch)

    async def git_tree(self, repository: str, sha: str) -> tuple[list[TreeEntry], bool]:
        """The files of the commit ``sha``'s tree, recursively, and whether GitHub cut the list short."""
        owner, name = repository.split("/", 1)
        # https://docs.github.com/en/rest/git/trees#get-a-tree (a commit's sha names its tree)
        resp = await self._call(
            f"list the tree of {repository} at {sha[:12]}",
            lambda: self.gh.rest.git.async_get_tree(owner, name, sha, recursive="1"),
        )
        tree = resp.parsed_data
        entries = [
            TreeEntry(str(e.path), str(e.mode), str(e.sha), int(e.size or 0))
            for e in tree.tree
            if e.type in ("blob", "commit") and isinstance(e.path, str) and isinstance(e.sha, str)
        ]
        return entries, bool(tree.truncated)

    async def git_blob(self, repository: str, sha: str) -> bytes:
        """One blob of the repository, as git holds it."""
        owner, name = repository.split("/", 1)
        # https://docs.github.com/en/rest/git/blobs#get-a-blob
        resp = await self._call(
            f"read blob {sha[:12]} of {repository}", lambda: self.gh.rest.git.async_get_blob(owner, name, sha)
        )
        blob = resp.parsed_data
        if blob.encoding != "base64":
            raise GitHubError(f"blob {sha[:12]}: unexpected encoding {blob.encoding!r}", retryable=False)
        return base64.b64decode(blob.content)

    async def find_check_run(self, repository: str, head_sha: str, external_id: str) -> int | None:
        """Return the id of our check run with ``external_id`` on ``head_sha``, if one exists.

        Reads every page (https://docs.github.com/en/rest/using-the-rest-api/using-pagination-in-the-rest-api):
        a busy commit has more than 100 runs of the check after enough reruns.
        """
        owner, name = repository.split("/", 1)
        per_page = 100
        page = 1
        while True:
            resp = await self._call(
                f"list check runs on {head_sha[:12]} (page {page})",
                lambda page=page: self.gh.rest.checks.async_list_for_ref(  # type: ignore[misc]
                    owner,
                    name,
                    head_sha,
                    check_name=self.settings.check_name,
                    filter_="all",
                    per_page=per_page,
                    page=page,
                ),
            )
            data = resp.json()
            runs = [r for r in data.get("check_runs", []) if isinstance(r, dict)]
            for run in runs:
                if run.get("external_id") == external_id:
                    return int(run["id"])
            if len(runs) < per_page or page * per_page >= int(data.get("total_count") or 0):
                return None
            page += 1

    async def upload_sarif(self, repository: str, *, commit_sha: str, ref: str, sarif: dict[str, Any]) -> str:
        """Upload a SARIF log to code scanning (gzip, then base64, as GitHub asks); return its id.

        https://docs.github.com/rest/code-scanning/code-scanning#upload-an-analysis-as-sarif-data
        A log over GitHub's limits is refused here rather than sent (GitHubError, not retried).
        """
        owner, name = repository.split("/", 1)
        results = sum(len(run.get("results", [])) for run in sarif.get("runs", []))
        packed = gzip.compress(json.dumps(sarif, separators=(",", ":")).encode(), mtime=0)
        if results > SARIF_MAX_RESULTS or len(packed) > SARIF_MAX_BYTES:
            raise GitHubError(
                f"SARIF for {commit_sha[:12]}: {results} results, {len(packed)} bytes gzipped: "
                f"over code scanning's limits ({SARIF_MAX_RESULTS} results, {SARIF_MAX_BYTES} bytes)",
                retryable=False,
            )
        encoded = base64.b64encode(packed).decode("ascii")
        resp = await self._call(
            f"upload SARIF for {commit_sha[:12]}",
            lambda: self.gh.rest.code_scanning.async_upload_sarif(
                owner, name, data={"commit_sha": commit_sha, "ref": ref, "sarif": encoded}
            ),
        )
        return str(resp.json().get("id", ""))

    async def create_check_run(self, repository: str, body: CreateBody | CreateCompletedBody) -> int:
        """Create a check run exactly once, even when GitHub fails after creating it."""
        owner, name = repository.split("/", 1)
        external_id = body.get("external_id", "")
        attempt = 0
        while True:
            try:
                resp = await self._call(
                    f"create check run on {body['head_sha'][:12]}",
                    lambda: self.gh.rest.checks.async_create(owner, name, data=body),
                )
                return int(resp.json()["id"])
            except GitHubError as exc:
                if not exc.retryable or attempt >= self.settings.github_retries:
                    raise
            if external_id:
                found = await self.find_check_run(repository, body["head_sha"], external_id)
                if found is not None:
                    return found
            await asyncio.sleep(self.settings.retry_backoff_s * 2**attempt)
            attempt += 1

    async def complete_check_run(self, repository: str, check_run_id: int, rendered: Completion) -> None:
        """Send the annotations and complete the run; none is sent twice, also across attempts.

        An update carrying annotations is never retried blindly (GitHub may have
        appended them before failing): the run's annotation count is read again
        first, and only what is missing is sent.
        """
        attempt = 0
        while True:
            sent = await self.annotations_count(repository, check_run_id) if rendered.annotations else 0
            updates, final = rendered.bodies(sent=sent)
            try:
                for body in updates:
                    await self.update_check_run(repository, check_run_id, body)
                await self.update_check_run(repository, check_run_id, final)
                return
            except GitHubError as exc:
                if not exc.retryable or attempt >= self.settings.github_retries:
                    raise
                log.warning("completing check run %s: %s; retrying", check_run_id, exc)
            await asyncio.sleep(self.settings.retry_backoff_s * 2**attempt)
            attempt += 1

    async def annotations_count(self, repository: str, check_run_id: int) -> int:
        """Return how many annotations the check run already has."""
        owner, name = repository.split("/", 1)
        resp = await self._call(
            f"read check run {check_run_id}",
            lambda: self.gh.rest.checks.async_get(owner, name, check_run_id),
        )
        data: dict[str, Any] = dict(resp.json())
        output = data.get("output") or {}
        return int(output.get("annotations_count") or 0)

    async def update_check_run(
        self, repository: str, check_run_id: int, body: UpdateBody | CompleteBody
    ) -> None:
        """Update (or complete) a check run."""
        owner, name = repository.split("/", 1)
        await self._call(
            f"update check run {check_run_id}",
            lambda: self.gh.rest.checks.async_update(owner, name, check_run_id, data=body),
        )
