"""The last exec of a run: end leftovers, read peak memory and OOM kills, collect files."""

from __future__ import annotations

import io
import re
import tarfile
from dataclasses import dataclass

# First end every process the command left (as the sandbox uid, `kill -1` reaches all of
# them, setsid or not, and never this shell). Then the peak memory and OOM kills of the
# container's cgroup (v1 files first, then v2) on stderr, and a tarball of the collect
# paths (positional parameters) on stdout.
COLLECT_SCRIPT = r"""
kill -KILL -1 2>/dev/null
peak=$(cat /sys/fs/cgroup/memory/memory.max_usage_in_bytes 2>/dev/null \
       || cat /sys/fs/cgroup/memory.peak 2>/dev/null)
oom=$(sed -n 's/^oom_kill //p' /sys/fs/cgroup/memory/memory.oom_control \
      /sys/fs/cgroup/memory.events 2>/dev/null | head -n 1)
echo "patchgate-stats peak=${peak} oom_kill=${oom}" >&2
[ $# -gt 0 ] || exit 0
exec tar -c -f - -C / --ignore-failed-read -- "$@" 2>/dev/null
"""

_STATS = re.compile(rb"patchgate-stats peak=(\d*) oom_kill=(\d*)")


@dataclass(frozen=True)
class Collected:
    """What the last exec of a run brings back: memory figures and the files asked for."""

    peak_memory_bytes: int | None
    oom_killed: bool
    # {container path: content}, regular files only.
    files: dict[str, bytes]
    # The collect exec's output passed its cap: the files are those before the cut.
    over_cap: bool = False


def parse_collect(stdout: bytes, stderr: bytes) -> Collected:
    """Return the peak memory, whether the OOM killer struck, and the files from the collect exec.

    Only regular files come back; a truncated tarball yields the members before the cut.
    """
    peak: int | None = None
    oom = False
    if match := _STATS.search(stderr):
        peak = int(match[1]) if match[1] else None
        oom = bool(match[2]) and int(match[2]) > 0
    files: dict[str, bytes] = {}
    if stdout:
        try:
            with tarfile.open(fileobj=io.BytesIO(stdout), mode="r:") as tar:
                for member in tar:
                    handle = tar.extractfile(member) if member.isreg() else None
                    if handle is not None:
                        files["/" + member.name.lstrip("/")] = handle.read()
        except (tarfile.TarError, EOFError):
            pass  # cut at the collect cap: keep what came before
    return Collected(peak_memory_bytes=peak, oom_killed=oom, files=files)
