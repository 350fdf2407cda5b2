"""Read a suites repository on GitHub as the App installation that covers it."""

from __future__ import annotations

from typing import Any

from githubkit import GitHub
from githubkit.exception import GitHubException, RequestFailed

from bot.github.client import GitHubApp, GitHubError, InstallationGone, NotFound
from bot.service.suitestore import SuitesUnavailable


class GitHubSuites:
    """``github:org/suites``: find the installation on org/suites, then read it with its token.

    The token travels in the Authorization header only (githubkit follows the
    tarball's redirect to codeload without putting it in the URL).
    """

    def __init__(self, app: GitHubApp) -> None:
        self.app = app

    async def _installation(self, repository: str) -> Any:
        owner, name = repository.split("/", 1)
        # GET /repos/{owner}/{repo}/installation, as the App (JWT):
        # https://docs.github.com/en/rest/apps/apps#get-a-repository-installation-for-the-authenticated-app
        gh: GitHub[Any] = self.app.as_app()
        try:
            async with gh:
                resp = await gh.rest.apps.async_get_repo_installation(owner, name)
        except GitHubException as exc:
            status = exc.response.status_code if isinstance(exc, RequestFailed) else None
            if status == 404:
                raise SuitesUnavailable(
                    f"suites repository {repository}: the App is not installed on it (404)"
                ) from None
            raise GitHubError(f"find the installation on {repository}: {exc}") from exc
        return self.app.installation(int(resp.json()["id"]))

    async def commit_sha(self, repository: str, ref: str) -> str:
        """Return the commit ``ref`` names in ``repository``."""
        client = await self._installation(repository)
        try:
            return str(await client.commit_sha(repository, ref))
        except (NotFound, InstallationGone) as exc:
            raise SuitesUnavailable(f"suites repository {repository}: cannot read {ref!r}: {exc}") from None
        except GitHubError as exc:
            if not exc.retryable:
                raise SuitesUnavailable(f"suites repository {repository}: {exc}") from None
            raise

    async def tarball(self, repository: str, ref: str) -> bytes:
        """Download ``repository`` at ``ref`` (a commit) as GitHub's tarball."""
        client = await self._installation(repository)
        try:
            data: bytes = await client.tarball(repository, ref)
        except (NotFound, InstallationGone) as exc:
            raise SuitesUnavailable(
                f"suites repository {repository}: cannot download {ref[:12]}: {exc}"
            ) from None
        return data
