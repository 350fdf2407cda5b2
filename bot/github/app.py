"""The App itself: its JWT, the installation clients it hands out, the TLS context they share,
and the manifest exchange that creates an App. REST calls as an installation are in client.py.
"""

from __future__ import annotations

import contextlib
import functools
import ssl
from typing import Any

import httpx
from githubkit import AppAuthStrategy, GitHub
from githubkit.cache import MemCacheStrategy
from githubkit.exception import GitHubException, RequestFailed
from githubkit_schemas.latest import models
from pydantic import ValidationError

from bot.github.client import GitHubError, Installation
from bot.github.retry import Retry
from bot.settings import Settings


@functools.cache
def tls_context() -> ssl.SSLContext:
    """Return the one TLS context every GitHub client of this process verifies with.

    githubkit opens an httpx client per request, and httpx builds a fresh context for each
    unless it is given one: loading the CA bundle took ~30 ms of the event loop per GitHub
    call, which stalled the webhook's answers behind every job (bench/README.md, ingress.py).
    An SSLContext is safe to share between connections and threads once configured.
    """
    # httpx's own recipe (certifi, or SSL_CERT_FILE / SSL_CERT_DIR), built once.
    return httpx.create_ssl_context()


def warm_up() -> None:
    """Load githubkit's REST namespaces and models now rather than inside the first job."""
    tls_context()
    gh = GitHub("warm-up", http_cache=False)
    for namespace in (gh.rest.checks, gh.rest.pulls, gh.rest.repos, gh.rest.apps):
        _ = namespace
    with contextlib.suppress(ValidationError):
        models.PullRequest.model_validate({})


class GitHubApp:
    """The App: signs JWTs and hands out per-installation clients sharing one token cache."""

    def __init__(self, settings: Settings) -> None:
        app_id, key = settings.require_app()
        self.settings = settings
        self._auth = AppAuthStrategy(app_id, key)
        self._cache = MemCacheStrategy()
        self._tls = tls_context()
        self._retry = Retry(settings.github_retries, settings.retry_backoff_s, settings.max_rate_limit_wait_s)
        self._bot_login: str | None = None

    def as_app(self) -> GitHub[Any]:
        """Return a client acting as the App itself (JWT): installation look-ups and ``GET /app``."""
        return GitHub(
            self._auth,
            base_url=self.settings.github_api_url + "/",
            user_agent="patchgate",
            timeout=self.settings.http_timeout_s,
            ssl_verify=self._tls,
            http_cache=False,
            auto_retry=self._retry,
        )

    async def bot_login(self) -> str:
        """Return the login of the App's bot user (``{slug}[bot]``), who writes what the App writes.

        GET /app, as the App (JWT), once per process; a failure is not kept, the next call asks again:
        https://docs.github.com/en/rest/apps/apps#get-the-authenticated-app
        """
        if self._bot_login is None:
            gh = self.as_app()
            try:
                async with gh:
                    resp = await gh.rest.apps.async_get_authenticated()
            except GitHubException as exc:
                status = exc.response.status_code if isinstance(exc, RequestFailed) else None
                retryable = status is None or status >= 500 or status == 429
                raise GitHubError(f"read the App's slug: {exc}", retryable=retryable, status=status) from exc
            # ``slug`` is optional in GitHub's schema of an App, but GET /app always sends it.
            answer: Any = resp.json()
            slug = answer.get("slug") if isinstance(answer, dict) else None
            if not isinstance(slug, str) or not slug:
                raise GitHubError("GET /app answered without the App's slug", retryable=False)
            self._bot_login = f"{slug}[bot]"
        return self._bot_login

    async def installation_on(self, repository: str) -> Installation | None:
        """Return a client for the installation that covers ``repository``; None when there is none.

        GET /repos/{owner}/{repo}/installation, as the App (JWT):
        https://docs.github.com/en/rest/apps/apps#get-a-repository-installation-for-the-authenticated-app
        """
        owner, name = repository.split("/", 1)
        gh = self.as_app()
        try:
            async with gh:
                resp = await gh.rest.apps.async_get_repo_installation(owner, name)
        except GitHubException as exc:
            if isinstance(exc, RequestFailed) and exc.response.status_code == 404:
                return None
            raise GitHubError(f"find the installation on {repository}: {exc}") from exc
        return self.installation(int(resp.json()["id"]))

    def installation(self, installation_id: int) -> Installation:
        """Return a client acting as ``installation_id``."""
        gh = GitHub(
            self._auth.as_installation(installation_id),
            base_url=self.settings.github_api_url + "/",
            user_agent="patchgate",
            timeout=self.settings.http_timeout_s,
            ssl_verify=self._tls,
            cache_strategy=self._cache,
            http_cache=False,
            auto_retry=self._retry,
        )
        return Installation(gh, installation_id, self.settings, self.bot_login)


def convert_manifest(github_api_url: str, code: str) -> dict[str, Any]:
    """Exchange an App manifest's code for the App's credentials (unauthenticated, single use).

    https://docs.github.com/en/rest/apps/apps#create-a-github-app-from-a-manifest
    """
    gh: GitHub[Any] = GitHub(base_url=github_api_url + "/", user_agent="patchgate", http_cache=False)
    return dict(gh.rest.apps.create_from_manifest(code).json())
