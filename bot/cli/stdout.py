"""Keep stdout for the report: whatever else a command's libraries print goes to stderr.

`patchgate run --format json` must print parseable JSON whatever the judge
does, but libraries print on stdout when they fail (litellm's "Give Feedback
/ Get Help" banner is one; a subprocess that inherits file descriptor 1 is
another). While gating, both Python's ``sys.stdout`` and file descriptor 1
point at stderr; the command writes its report after the block.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Iterator
from pathlib import Path


def _fileno(stream: object) -> int | None:
    try:
        return stream.fileno()  # type: ignore[attr-defined, no-any-return]
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return None


def emit(text: str, out: Path | None) -> None:
    """Write a command's result to ``out`` (``--out``) or, without one, to stdout."""
    if out is not None:
        out.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)


@contextlib.contextmanager
def to_stderr() -> Iterator[None]:
    """Send everything written to stdout inside the block, from Python or below it, to stderr."""
    out, err = sys.stdout, sys.stderr
    out.flush()
    out_fd, err_fd = _fileno(out), _fileno(err)
    saved = os.dup(out_fd) if out_fd is not None and err_fd is not None else None
    if saved is not None and out_fd is not None and err_fd is not None:
        os.dup2(err_fd, out_fd)
    try:
        with contextlib.redirect_stdout(err):
            yield
    finally:
        # Text buffered in the real stdout object while fd 1 was stderr belongs to stderr too.
        for stream in (out, err):
            with contextlib.suppress(Exception):  # a closed stream must not hide the block's own error
                stream.flush()
        if saved is not None and out_fd is not None:
            os.dup2(saved, out_fd)
            os.close(saved)
