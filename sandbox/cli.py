"""The sandbox's command-line entry points (wired by bot/cli/commands/sandbox.py)."""

from __future__ import annotations

import sys
import time

from sandbox.errors import SandboxError
from sandbox.images import ensure_base_image


def build_command(from_registry: bool, force: bool) -> int:
    """Build the base image (a no-op when it is up to date), printing progress; return the exit code.

    0 when the image is there, 1 when the engine or the build failed (the
    reason is printed on stderr).
    """
    started = time.monotonic()

    def progress(line: str) -> None:
        print(f"[sandbox {time.monotonic() - started:6.1f}s] {line}", file=sys.stderr, flush=True)

    try:
        tag = ensure_base_image(from_registry=from_registry, force=force, log=progress)
    except SandboxError as exc:
        print(f"patchgate sandbox build failed: {exc}", file=sys.stderr)
        return 1
    print(tag)
    return 0
