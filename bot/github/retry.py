"""githubkit's retry policy for patchgate: back off on server and network errors, wait out short
rate limits, and never repeat a request whose repetition would duplicate (a check run's creation,
an update carrying annotations). Used by every client ``bot.github.app.GitHubApp`` hands out.
"""

from __future__ import annotations

import re
from datetime import timedelta

import httpx
from githubkit.exception import GitHubException, RateLimitExceeded, RequestError, RequestFailed
from githubkit.retry import RetryOption

from bot import metrics


class Retry:
    """githubkit retry policy: back off on 5xx and network errors, wait out short rate limits."""

    def __init__(self, retries: int, backoff_s: float, max_rate_limit_wait_s: float) -> None:
        self.retries = retries
        self.backoff_s = backoff_s
        self.max_wait = max_rate_limit_wait_s

    def __call__(self, exc: GitHubException, count: int) -> RetryOption:
        exc = unwrap(exc)
        if count >= self.retries:
            return RetryOption(False)
        if isinstance(exc, RateLimitExceeded):
            wait = exc.retry_after
            if wait.total_seconds() > self.max_wait:
                return RetryOption(False)
            metrics.RATE_LIMIT_WAITS.inc()
            metrics.RATE_LIMIT_WAIT_SECONDS.inc(wait.total_seconds())
            return RetryOption(True, wait)
        backoff = RetryOption(True, timedelta(seconds=self.backoff_s * 2**count))
        if isinstance(exc, RequestFailed):
            if exc.response.status_code < 500:
                return RetryOption(False)
            # A failed create may have created the run, and a failed update may have added its
            # annotations (GitHub appends them): the caller looks before it retries.
            if _unrepeatable(exc):
                return RetryOption(False)
            return backoff
        if isinstance(exc, RequestError):
            return RetryOption(False) if _unrepeatable(exc) else backoff
        return RetryOption(False)


def unwrap(exc: GitHubException) -> GitHubException:
    """Return the HTTP failure inside a RequestError (a failed token request surfaces that way)."""
    cause = exc.__cause__
    if isinstance(exc, RequestError) and isinstance(cause, GitHubException):
        return cause
    return exc


def _unrepeatable(exc: GitHubException) -> bool:
    """A check run's creation, or an update carrying annotations: repeating either duplicates."""
    request = getattr(exc, "request", None)
    if request is None and isinstance(exc, RequestFailed):
        request = exc.response.raw_request
    if request is None:
        return False
    if request.method == "POST" and request.url.path.endswith("/check-runs"):
        return True
    if request.method != "PATCH" or not re.search(r"/check-runs/\d+$", request.url.path):
        return False
    try:
        content: bytes = request.content
    except httpx.RequestNotRead:  # a streamed body: never one of ours; assume the worst
        return True
    return b'"annotations"' in content
