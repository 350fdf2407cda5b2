"""Logs as JSON lines (python-json-logger), each carrying the delivery, job and run it is about.

The ids live in context variables: a webhook request binds its delivery id, a
job attempt its job id and run key, and every record logged meanwhile - by
patchgate, taskiq or uvicorn, in the event loop or a worker thread that
copied the context - carries them, so one ``jq 'select(.job_id == 7)'``
follows a job across processes. Secrets never reach a log: settings hold
them as SecretStr, and nothing logs a header, a token or a request body.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TextIO

from pythonjsonlogger.json import JsonFormatter

DELIVERY_ID: ContextVar[str | None] = ContextVar("delivery_id", default=None)
JOB_ID: ContextVar[int | None] = ContextVar("job_id", default=None)
RUN_KEY: ContextVar[str | None] = ContextVar("run_key", default=None)
_FIELDS = (("delivery_id", DELIVERY_ID), ("job_id", JOB_ID), ("run_key", RUN_KEY))


class _Context(logging.Filter):
    """Copy the bound ids onto each record (a handler filter: it sees every logger's records)."""

    def filter(self, record: logging.LogRecord) -> bool:
        for name, var in _FIELDS:
            value = var.get()
            if value is not None and not hasattr(record, name):
                setattr(record, name, value)
        return True


def formatter() -> JsonFormatter:
    """Return the JSON formatter: time, level, logger and message, then the record's extra fields."""
    return JsonFormatter(
        "{asctime}{levelname}{name}{message}",
        style="{",
        rename_fields={"asctime": "time", "levelname": "level", "name": "logger"},
    )


def configure(level: int = logging.INFO, stream: TextIO | None = None) -> None:
    """Send every logger's records to ``stream`` (stderr) as JSON lines; call once at start."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(formatter())
    handler.addFilter(_Context())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    # uvicorn installs handlers of its own unless told not to (log_config=None); its
    # records then reach the root handler like everyone else's.
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).handlers.clear()
        logging.getLogger(name).propagate = True


@contextmanager
def bound(
    *, delivery_id: str | None = None, job_id: int | None = None, run_key: str | None = None
) -> Iterator[None]:
    """Attach the given ids to every record logged inside the block (this task or thread only)."""
    delivery = DELIVERY_ID.set(delivery_id) if delivery_id is not None else None
    job = JOB_ID.set(job_id) if job_id is not None else None
    key = RUN_KEY.set(run_key) if run_key is not None else None
    try:
        yield
    finally:
        if key is not None:
            RUN_KEY.reset(key)
        if job is not None:
            JOB_ID.reset(job)
        if delivery is not None:
            DELIVERY_ID.reset(delivery)
