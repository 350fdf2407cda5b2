"""A host-wide lock so two processes never build the same image at once."""

from __future__ import annotations

import fcntl
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def build_lock(name: str, say: Callable[[str], None]) -> Iterator[None]:
    """Hold an exclusive lock named ``name`` for the duration of the block."""
    path = Path(tempfile.gettempdir()) / f"patchgate-image-{name}.lock"
    with path.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"waiting for another build holding {path}")
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
