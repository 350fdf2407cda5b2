"""The durable store: deliveries and jobs, runs, judge records, the judge's verdict cache.

SQLite (WAL) by default, PostgreSQL by URL; the schema comes from the Alembic
migrations in bot/store/migrations. ``Store`` is the database and its parts,
each a module of this package: ``store.deliveries``, ``store.leases`` (jobs and
their leases), ``store.candidates`` (best of k), ``store.runs``, ``store.judge``
(judge records and verdicts); the tables are in tables.py. Only this package
imports SQLAlchemy (.importlinter).
"""

from __future__ import annotations

from bot.store.candidates import Candidates
from bot.store.database import PING_AFTER_IDLE_S, STORE_ERRORS, Database
from bot.store.deliveries import Deliveries, Incoming, Recorded
from bot.store.judge import Judge, JudgeRow
from bot.store.leases import JobView, Leases
from bot.store.runs import RepositoryRun, RunRecord, Runs, StoredRun, run_record
from checks.report import CriterionResult

__all__ = [
    "STORE_ERRORS",
    "Incoming",
    "JobView",
    "JudgeRow",
    "Recorded",
    "RepositoryRun",
    "RunRecord",
    "Store",
    "StoreVerdictCache",
    "StoredRun",
    "run_record",
]


class Store(Database):
    """All database access of the service, by part; every operation is one transaction."""

    def __init__(self, url: str, *, ping_after_idle_s: float = PING_AFTER_IDLE_S) -> None:
        super().__init__(url, ping_after_idle_s=ping_after_idle_s)
        self.deliveries = Deliveries(self)
        self.leases = Leases(self)
        self.candidates = Candidates(self)
        self.runs = Runs(self)
        self.judge = Judge(self)


class StoreVerdictCache:
    """The store as a checks.quality.VerdictCache: judge verdicts survive restarts and are shared."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def get(self, key: str) -> list[CriterionResult] | None:
        return self.store.judge.verdicts(key)

    def put(self, key: str, value: list[CriterionResult]) -> None:
        self.store.judge.put_verdicts(key, value)
