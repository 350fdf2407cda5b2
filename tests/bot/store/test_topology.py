"""SQLite is one process's store; URLs are logged without their credentials."""

from __future__ import annotations

import pytest

from bot.settings import Settings, SettingsError
from bot.store.topology import check_store, describe, redact_url

PG = "postgresql+psycopg://gate:hunter2@db:5432/patchgate"
SQLITE = "sqlite:///.state/patchgate.db"
REDIS = "redis://:hunter2@redis:6379/0"


@pytest.mark.parametrize(
    ("database", "broker", "jobs_elsewhere", "refused"),
    [
        (SQLITE, "memory", False, None),  # patchgate serve: one process, its own workers
        (SQLITE, "memory", True, "only one process"),  # serve --no-workers, or patchgate worker
        (SQLITE, REDIS, False, "Redis"),
        (SQLITE, REDIS, True, "Redis"),
        ("sqlite://", REDIS, False, "Redis"),  # in-memory SQLite is no more shared
        (PG, REDIS, True, None),
        (PG, "memory", True, None),
        (PG, "memory", False, None),
    ],
)
def test_sqlite_is_refused_whenever_another_process_shares_the_store(
    database: str, broker: str, jobs_elsewhere: bool, refused: str | None
) -> None:
    settings = Settings(database_url=database, broker=broker)
    if refused is None:
        check_store(settings, jobs_elsewhere=jobs_elsewhere)
        return
    with pytest.raises(SettingsError, match=refused) as info:
        check_store(settings, jobs_elsewhere=jobs_elsewhere)
    assert "PATCHGATE_DATABASE_URL=postgresql" in str(info.value)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (PG, "postgresql+psycopg://gate:***@db:5432/patchgate"),
        ("postgresql+psycopg://gate@db/patchgate?password=hunter2", "postgresql+psycopg://gate@db/patchgate"),
        (REDIS, "redis://:***@redis:6379/0"),
        ("rediss://user:hunter2@[::1]:6380/1", "rediss://user:***@[::1]:6380/1"),
        ("redis://redis:6379/0", "redis://redis:6379/0"),
        (SQLITE, SQLITE),
        ("memory", "memory"),
    ],
)
def test_urls_are_logged_without_credentials(url: str, shown: str) -> None:
    assert redact_url(url) == shown
    assert "hunter2" not in redact_url(url)


def test_describe_names_the_effective_database_and_broker() -> None:
    assert describe(Settings(database_url=PG, broker=REDIS)) == {
        "database": "postgresql+psycopg://gate:***@db:5432/patchgate",
        "broker": "redis://:***@redis:6379/0",
    }
