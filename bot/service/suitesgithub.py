"""Read a suites repository on GitHub as the App installation that covers it."""

from __future__ import annotations

from bot.github.app import GitHubApp
from bot.github.client import GitHubError, Installation, InstallationGone, NotFound
from bot.service.suitestore import SuitesUnavailable


class GitHubSuites:
    """``github:org/suites``: find the installation on org/suites, then read it with its token.

    The token travels in the Authorization header only (githubkit follows the
    tarball's redirect to codeload without putting it in the URL).
    """

    def __init__(self, app: GitHubApp) -> None:
        self.app = app

    async def _installation(self, repository: str) -> Installation:
        client = await self.app.installation_on(repository)
        if client is None:
            raise SuitesUnavailable(f"suites repository {repository}: the App is not installed on it (404)")
        return client

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
