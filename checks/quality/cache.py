"""Verdict caching: the same rubric, model and shown content get the same verdicts without a call."""

from __future__ import annotations

import hashlib
import threading
from typing import Protocol

from checks.report import CriterionResult


class VerdictCache(Protocol):
    """Where verdicts are kept between runs (in memory here; the store keeps them in its database)."""

    def get(self, key: str) -> list[CriterionResult] | None: ...

    def put(self, key: str, value: list[CriterionResult]) -> None: ...


def cache_key(rubric_digest: str, model: str, content_digest: str) -> str:
    """Return the cache key of (rubric hash, model, content hash) as one fixed-length hex string."""
    return hashlib.sha256("\0".join((rubric_digest, model, content_digest)).encode()).hexdigest()


class MemoryVerdictCache:
    """A thread-safe in-memory VerdictCache (for `patchgate run` and tests)."""

    def __init__(self) -> None:
        self._items: dict[str, list[CriterionResult]] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> list[CriterionResult] | None:
        with self._lock:
            found = self._items.get(key)
            return [c.model_copy(deep=True) for c in found] if found is not None else None

    def put(self, key: str, value: list[CriterionResult]) -> None:
        with self._lock:
            self._items[key] = [c.model_copy(deep=True) for c in value]

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)
