"""SQLite's WAL checkpoints on a thread of their own, never inside a commit.

SQLite copies the write-ahead log back into the database file when a commit
leaves the log past 1,000 pages, inside that commit and with an fsync of both
files (with ``synchronous=NORMAL`` the checkpoints are the only syncs): every
few hundred deliveries, one webhook's commit waited for two fsyncs, which on a
disk other work shares take hundreds of milliseconds. The store's connections
turn that off (``wal_autocheckpoint=0``) and this thread runs a PASSIVE
checkpoint every second instead: it never waits for a writer nor blocks one,
and copies what no reader still needs. A power cut can lose at most the
commits since the last checkpoint (about a second), never corrupt the file.
"""

from __future__ import annotations

import logging
import sqlite3
import threading

log = logging.getLogger(__name__)

EVERY_S = 1.0


class Checkpointer:
    """Checkpoint one SQLite database's WAL every ``every_s`` seconds, on a connection of its own."""

    def __init__(self, path: str, *, every_s: float = EVERY_S) -> None:
        self.path = path
        self.every_s = every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="patchgate-checkpoints", daemon=True)
        self.done = 0  # checkpoints run by the thread

    def start(self) -> Checkpointer:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop checkpointing (the last connection to close checkpoints what is left)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=30)

    def checkpoint(self) -> tuple[int, int, int]:
        """Run one PASSIVE checkpoint; return SQLite's (busy, frames in the log, frames copied)."""
        conn = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        try:
            row = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        finally:
            conn.close()
        busy, frames, copied = (int(v) for v in row)
        return busy, frames, copied

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            try:
                self.checkpoint()
                self.done += 1
            except sqlite3.Error:  # the next one will do; a commit never depends on this
                log.warning("checkpointing %s failed", self.path, exc_info=True)
