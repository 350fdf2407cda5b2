"""Watch a local container's cgroup for the moment it hits its pids or memory limit.

The engine reports an OOM kill only after the fact and a pids limit not at
all: a fork bomb would spin at the limit until the run's wall-clock budget.
The kernel counts both in the container's cgroup (``pids.events`` ``max``,
``memory.events`` / ``memory.oom_control`` ``oom_kill``), so the host reads
those counters while the run goes on and ends it at once. Works when the
engine runs on this machine with the cgroupfs or systemd driver, v1 or v2;
elsewhere ``locate`` finds nothing and only the wall-clock budget applies.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from sandbox.spec import LimitHit

CGROUP_ROOT = Path("/sys/fs/cgroup")
_COUNTER = re.compile(rb"^(max|oom_kill) (\d+)$", re.MULTILINE)


@dataclass(frozen=True)
class CgroupFiles:
    pids_events: Path | None
    memory_events: Path | None


def _first(candidates: list[Path]) -> Path | None:
    return next((p for p in candidates if p.is_file()), None)


def locate(container_id: str, root: Path = CGROUP_ROOT) -> CgroupFiles | None:
    """Return the event files of ``container_id``'s cgroup on this host, or None if not found."""
    if not re.fullmatch(r"[0-9a-f]{64}", container_id):
        return None
    dirs = [f"docker/{container_id}", f"system.slice/docker-{container_id}.scope"]
    # cgroup v1 keeps one hierarchy per controller; v2 one for all.
    pids = _first(
        [root / "pids" / d / "pids.events" for d in dirs] + [root / d / "pids.events" for d in dirs]
    )
    memory = _first(
        [root / "memory" / d / "memory.oom_control" for d in dirs]
        + [root / d / "memory.events" for d in dirs]
    )
    if pids is None and memory is None:
        return None
    return CgroupFiles(pids, memory)


def _counter(path: Path | None, name: bytes) -> int:
    if path is None:
        return 0
    try:
        text = path.read_bytes()
    except OSError:  # the cgroup is gone with its container
        return 0
    for key, value in _COUNTER.findall(text):
        if key == name:
            return int(value)
    return 0


def limit_hit(files: CgroupFiles) -> LimitHit | None:
    """Return which limit the container has hit so far (memory first: it kills), or None."""
    if _counter(files.memory_events, b"oom_kill") > 0:
        return "memory"
    if _counter(files.pids_events, b"max") > 0:
        return "pids"
    return None
