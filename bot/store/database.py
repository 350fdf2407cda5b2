"""The store's database connection: SQLite (WAL) by default, PostgreSQL by URL.

Every operation is one short transaction; the async callers run them in a
thread. State changes that race between workers are single conditional
statements, so whoever changed the row won.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy import inspect as sa_inspect
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DisconnectionError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker

from bot.store.checkpoints import Checkpointer
from bot.store.migrations import upgrade
from checks.hostfiles import wal_mode

# What the store raises when the database itself fails (a lost connection, a locked file, a full disk).
STORE_ERRORS: tuple[type[Exception], ...] = (SQLAlchemyError,)

# A server connection used this recently is taken as it is; one idle for longer answers a ping first.
PING_AFTER_IDLE_S = 1.0
# Transactions the intake runs at once (bot/web/intake.py): SQLite has one writer; a server overlaps
# one transaction's round trips with another's.
SERVER_WRITERS = 4


def make_engine(url: str, *, ping_after_idle_s: float = PING_AFTER_IDLE_S) -> Engine:
    """Create an engine; SQLite gets WAL, a busy timeout and write-locking transactions."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        engine = create_engine(url, pool_size=SERVER_WRITERS + 5)
        _ping_when_idle(engine, ping_after_idle_s)
        return engine
    if parsed.database and parsed.database != ":memory:":
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, connect_args={"timeout": 30})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Let SQLAlchemy, not pysqlite, issue BEGIN (see "Serializable isolation /
        # Savepoints / Transactional DDL" in SQLAlchemy's SQLite dialect docs).
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        wal_mode(dbapi_conn)
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.execute("PRAGMA foreign_keys=ON")
        # WAL with synchronous=NORMAL syncs at checkpoints, not at every commit: a commit can
        # be lost to a power cut (never to a crash of this process), and the file is never
        # corrupted. FULL made every webhook wait for an fsync.
        cursor.execute("PRAGMA synchronous=NORMAL")
        # Checkpoints (and their fsyncs) run on the Checkpointer's thread, never inside a commit.
        cursor.execute("PRAGMA wal_autocheckpoint=0")
        cursor.execute("PRAGMA temp_store=MEMORY")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        # IMMEDIATE takes the write lock up front: a read-then-write transaction can
        # otherwise fail with SQLITE_BUSY instead of waiting.
        conn.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def _ping_when_idle(engine: Engine, idle_s: float) -> None:
    """Ping a pooled connection at checkout when it has been idle ``idle_s``; a dead one is replaced.

    ``pool_pre_ping`` pinged at every checkout: a round trip more for every transaction, a
    webhook's among them, on a connection that had answered a moment before. A connection
    that broke within ``idle_s`` of its last use fails its transaction instead, and the pool
    then replaces every connection it had (SQLAlchemy invalidates the pool on a disconnect):
    the intake records a failed delivery again on a fresh one (bot/web/intake.py).
    """

    @event.listens_for(engine, "connect")
    def _connected(_dbapi_conn: Any, record: Any) -> None:
        record.info["returned"] = time.monotonic()

    @event.listens_for(engine, "checkin")
    def _checked_in(_dbapi_conn: Any, record: Any) -> None:
        record.info["returned"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _checked_out(dbapi_conn: Any, record: Any, _proxy: Any) -> None:
        if time.monotonic() - record.info.get("returned", 0.0) < idle_s:
            return
        try:
            engine.dialect.do_ping(dbapi_conn)
        except engine.dialect.loaded_dbapi.Error as exc:
            # The pool discards this connection and checks out another (SQLAlchemy's recipe).
            raise DisconnectionError(f"a pooled connection idle for {idle_s}s is gone") from exc


class Database:
    """A connection to the store's database and the transaction helpers the parts share."""

    def __init__(self, url: str, *, ping_after_idle_s: float = PING_AFTER_IDLE_S) -> None:
        self.url = url
        self.engine = make_engine(url, ping_after_idle_s=ping_after_idle_s)
        self._session = sessionmaker(self.engine, expire_on_commit=False)
        # SQLite has one writer at a time, and every transaction here writes (BEGIN IMMEDIATE).
        # Threads that wait in SQLite's busy handler sleep in growing steps and wake late;
        # waiting on a lock of this process hands the database over the moment it is free.
        # Other processes (the CLI's `calibrate`) still meet the busy handler.
        self._writer = threading.Lock() if self.engine.dialect.name == "sqlite" else None
        self._checkpoints: Checkpointer | None = None
        path = self.engine.url.database
        if self._writer is not None and path and path != ":memory:":
            self._checkpoints = Checkpointer(path).start()

    @property
    def writers(self) -> int:
        """Return how many write transactions are worth running at once (SQLite: one)."""
        return 1 if self._writer is not None else SERVER_WRITERS

    def migrate(self) -> None:
        """Bring the schema up to date (Alembic ``upgrade head``)."""
        upgrade(self.engine)

    def close(self) -> None:
        if self._checkpoints is not None:
            self._checkpoints.stop()
        self.engine.dispose()

    def ping(self) -> None:
        """Raise unless the database answers."""
        with self.engine.connect() as conn:
            conn.execute(text("SELECT 1"))

    @contextmanager
    def _tx(self) -> Iterator[Session]:
        if self._writer is None:
            with self._session.begin() as session:
                yield session
            return
        with self._writer, self._session.begin() as session:
            yield session

    def _insert_ignore(self, session: Session, model: type[Any], values: dict[str, Any]) -> bool:
        """INSERT unless the unique key exists; return whether a row was inserted."""
        return self._insert_returning(session, model, values) is not None

    def _insert_returning(self, session: Session, model: type[Any], values: dict[str, Any]) -> Any:
        """INSERT unless a unique key exists; return the new row's primary key, or None."""
        dialect = self.engine.dialect.name
        insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
        # RETURNING, not rowcount: drivers disagree on rowcount for ON CONFLICT DO NOTHING.
        key = sa_inspect(model).primary_key[0]
        stmt = insert(model).values(**values).on_conflict_do_nothing().returning(key)
        return session.execute(stmt).scalar()


class Part:
    """One part of the store (deliveries, leases, ...): its own queries over the shared database."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.engine = db.engine

    def _tx(self) -> AbstractContextManager[Session]:
        return self.db._tx()

    def _insert_ignore(self, session: Session, model: type[Any], values: dict[str, Any]) -> bool:
        return self.db._insert_ignore(session, model, values)

    def _insert_returning(self, session: Session, model: type[Any], values: dict[str, Any]) -> Any:
        return self.db._insert_returning(session, model, values)
