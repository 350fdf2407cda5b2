"""Alembic environment: run migrations on the connection bot.store.migrations.upgrade hands over."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

from bot.settings import load_settings
from bot.store.database import make_engine
from bot.store.tables import Base

target_metadata = Base.metadata


def _run(connection: Connection) -> None:
    context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


def _main() -> None:
    connection = context.config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    # Invoked by the `alembic` command line: the URL comes from the settings, never the ini file.
    engine = make_engine(load_settings().database_url)
    with engine.begin() as conn:
        _run(conn)
    engine.dispose()


if context.is_offline_mode():
    raise SystemExit("offline (SQL script) migrations are not supported; run against a database")
_main()
