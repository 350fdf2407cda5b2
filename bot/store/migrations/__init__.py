"""Alembic migrations of the store; ``upgrade`` runs them on an engine, one process at a time.

The server and every worker upgrade the schema at start. Started together on an
empty PostgreSQL database, two would both create the tables and one would fail;
the upgrade therefore runs in one transaction that first takes a
transaction-scoped advisory lock: the second process waits, then finds the schema
at head and does nothing. SQLite needs no lock of ours: the store's transactions
begin with ``BEGIN IMMEDIATE``, which already takes the database's write lock.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, Engine, text

HERE = Path(__file__).resolve().parent
# The advisory lock key of schema upgrades ("patchgat" in ASCII): one per database.
MIGRATION_LOCK = 0x7061746368676174


def config() -> Config:
    """Return an Alembic config pointing at these migrations (no ini file, no URL)."""
    cfg = Config()
    cfg.set_main_option("script_location", str(HERE))
    return cfg


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Migrate the database behind ``engine`` to ``revision`` (waiting for a concurrent upgrade)."""
    with engine.begin() as conn:
        upgrade_in(conn, revision)


def upgrade_in(conn: Connection, revision: str = "head") -> None:
    """Migrate inside ``conn``'s open transaction; on PostgreSQL, hold the upgrade lock until it ends."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})
    cfg = config()
    # env.py uses this connection: the URL (and its password) never enters Alembic's config.
    cfg.attributes["connection"] = conn
    command.upgrade(cfg, revision)
