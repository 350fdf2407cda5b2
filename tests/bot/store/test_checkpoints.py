"""WAL checkpoints run on the store's own thread, never inside a commit (a webhook's among them)."""

from __future__ import annotations

from pathlib import Path

from bot.github.events import Ignore
from bot.store import Store
from bot.store.checkpoints import Checkpointer
from tests.bot.harness import wait_for


def test_the_stores_commits_never_checkpoint_themselves(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        store.migrate()
        raw = store.engine.raw_connection()
        try:
            assert raw.cursor().execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
            assert raw.cursor().execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        finally:
            raw.close()
    finally:
        store.close()


def test_a_checkpoint_copies_the_log_into_the_database(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    store = Store(f"sqlite:///{path}")
    try:
        store.migrate()
        store._checkpoints.stop()  # type: ignore[union-attr]  # this test checkpoints by hand
        for i in range(300):
            store.deliveries.record(f"d{i}", "ping", "", [Ignore("ping")])
        busy, frames, copied = Checkpointer(str(path)).checkpoint()
        assert busy == 0
        assert frames > 0
        assert copied == frames  # nobody was reading: the whole log went in
        assert Checkpointer(str(path)).checkpoint()[2] == frames  # nothing new since
    finally:
        store.close()


def test_the_thread_checkpoints_until_the_store_closes(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    store = Store(f"sqlite:///{path}")
    store.migrate()
    checkpoints = store._checkpoints
    assert checkpoints is not None
    checkpoints.every_s = 0.05
    store.deliveries.record("d1", "ping", "", [Ignore("ping")])
    wait_for(lambda: checkpoints.done >= 2, 30, "two checkpoints")
    store.close()
    assert not checkpoints._thread.is_alive()


def test_a_postgresql_store_has_no_checkpointer() -> None:
    store = Store("postgresql+psycopg://nobody@127.0.0.1:1/none")  # never connected
    try:
        assert store._checkpoints is None
    finally:
        store.close()
