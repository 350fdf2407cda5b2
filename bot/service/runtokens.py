"""Tokens in a run's details URL: per run, expiring, and rotatable on their own. No I/O.

A token is ``<expiry>.<mac>``: the UNIX second after which it is refused, and
an HMAC-SHA256 of ``job id.expiry``. The key is ``PATCHGATE_RUN_TOKEN_KEY``
(derived from the webhook secret when unset, as before), so the links can be
revoked by rotating that key without touching the webhook secret; during a
rotation ``PATCHGATE_RUN_TOKEN_PREVIOUS_KEY`` still opens the links the old
key issued.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from dataclasses import dataclass
from typing import Literal

from bot.settings import Settings

Verdict = Literal["ok", "expired", "bad"]
_MAC_CHARS = 32


def _derive(secret: bytes) -> bytes:
    # A key of its own: a details token never doubles as anything signed with the secret itself.
    return hashlib.sha256(b"patchgate details url\0" + secret).digest()


def _mac(key: bytes, subject: str, expires: int) -> str:
    return hmac.new(key, f"{subject}.{expires}".encode(), hashlib.sha256).hexdigest()[:_MAC_CHARS]


def repository_subject(repository: str) -> str:
    """The subject of a repository page's token (no job id has a colon: the two never collide)."""
    return f"repo:{repository}"


@dataclass(frozen=True)
class RunTokens:
    """Issue and check details-URL tokens; the first key signs, every key verifies."""

    keys: tuple[bytes, ...]
    ttl_s: float

    def issue(self, job_id: int | str, now: float | None = None, *, until: int | None = None) -> str:
        """Return a token for ``job_id`` (or another subject: ``repository_subject``), good for ``ttl_s``.

        ``until``: expire then instead, if sooner. A token handed out from a page opened with
        another token never outlives it: a leaked link cannot be refreshed into a lasting one.
        """
        expires = int((time.time() if now is None else now) + self.ttl_s)
        if until is not None:
            expires = min(expires, until)
        return f"{expires}.{_mac(self.keys[0], str(job_id), expires)}"

    def check(self, token: str, job_id: int | str, now: float | None = None) -> Verdict:
        """Return ``ok``, ``expired`` (a genuine token past its time) or ``bad``."""
        subject = str(job_id)
        expiry, dot, mac = token.partition(".")
        if not dot or not expiry.isdigit() or len(expiry) > 12 or len(mac) != _MAC_CHARS:
            return "bad"
        expires = int(expiry)
        # Every key is tried, so the time taken does not tell which one matched.
        genuine = [hmac.compare_digest(mac.encode(), _mac(k, subject, expires).encode()) for k in self.keys]
        if not any(genuine):
            return "bad"
        return "ok" if (time.time() if now is None else now) <= expires else "expired"


def run_tokens(settings: Settings) -> RunTokens:
    """Return the service's token keys: the run-token key (or the webhook secret's), then the previous one."""
    current = settings.run_token_key
    first = current.get_secret_value().encode() if current is not None else settings.require_webhook_secret()
    keys = [_derive(first)]
    if settings.run_token_previous_key is not None:
        keys.append(_derive(settings.run_token_previous_key.get_secret_value().encode()))
    return RunTokens(tuple(keys), settings.run_token_ttl_s)


def expiry_of(token: str) -> int:
    """Return the expiry a (checked) token carries."""
    return int(token.partition(".")[0])
