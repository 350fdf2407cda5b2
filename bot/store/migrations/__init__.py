"""Alembic migrations of the store; ``upgrade`` runs them on an engine."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine

HERE = Path(__file__).resolve().parent


def config() -> Config:
    """Return an Alembic config pointing at these migrations (no ini file, no URL)."""
    cfg = Config()
    cfg.set_main_option("script_location", str(HERE))
    return cfg


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Migrate the database behind ``engine`` to ``revision``."""
    cfg = config()
    with engine.begin() as conn:
        # env.py uses this connection: the URL (and its password) never enters Alembic's config.
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)
