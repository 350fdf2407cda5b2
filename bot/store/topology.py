"""Which processes share the store and the queue, and whether the configured ones can be shared. No I/O.

The embedded SQLite store lives in one file on one disk: it is the store of
one process (``patchgate serve`` with its workers inside). Once jobs travel
to another process - through Redis, or because ``serve --no-workers`` and
``patchgate worker`` split the work - every process must reach the same
database, and only a server (PostgreSQL) gives them that. A container that
quietly writes its own SQLite file instead would answer ``/readyz`` happily
while its jobs vanish into another container's database.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from bot.settings import Settings, SettingsError

POSTGRES_HINT = "set PATCHGATE_DATABASE_URL=postgresql+psycopg://USER:PASSWORD@HOST/DB (in the config file)"


def is_sqlite(database_url: str) -> bool:
    """Return True when ``database_url`` names an embedded SQLite database."""
    try:
        return make_url(database_url).get_backend_name() == "sqlite"
    except ArgumentError:
        return database_url.startswith("sqlite")


def check_store(settings: Settings, *, jobs_elsewhere: bool) -> None:
    """Refuse a SQLite store that more than one process would share.

    ``jobs_elsewhere`` is True for a process that does not run its own jobs
    (``serve --no-workers``) or runs jobs another process recorded
    (``patchgate worker``). Raises SettingsError naming the fix.
    """
    if not is_sqlite(settings.database_url):
        return
    if settings.broker != "memory":
        raise SettingsError(
            "PATCHGATE_DATABASE_URL is SQLite but PATCHGATE_BROKER is Redis: web and workers are "
            f"separate processes and each would write its own database file; {POSTGRES_HINT}"
        )
    if jobs_elsewhere:
        raise SettingsError(
            "PATCHGATE_DATABASE_URL is SQLite, which only one process may use: run `patchgate serve` "
            f"with its in-process workers, or {POSTGRES_HINT}"
        )


def redact_url(url: str) -> str:
    """Return ``url`` without its password and query (where drivers also take credentials)."""
    parts = urlsplit(url)
    if not parts.netloc:  # memory, a SQLite path: nothing secret, and no netloc to rebuild
        return url.split("?", 1)[0]
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 literal keeps its brackets
        host = f"[{host}]"
    netloc = host + (f":{parts.port}" if parts.port else "")
    if parts.username or parts.password is not None:
        netloc = f"{parts.username or ''}{':***' if parts.password is not None else ''}@{netloc}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def describe(settings: Settings) -> dict[str, str]:
    """Return the effective database and broker, safe to log."""
    return {"database": redact_url(settings.database_url), "broker": redact_url(settings.broker)}
