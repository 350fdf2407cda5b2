"""What a sandboxed run is asked to do, and what it reports back."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

MiB = 1024 * 1024


class Limits(BaseModel):
    """Resource limits of one run; validated when configured, not when used."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    memory_mb: int = Field(default=1024, gt=0)
    pids: int = Field(default=256, gt=0)
    cpus: float = Field(default=1.0, gt=0)
    timeout_s: float = Field(default=300.0, gt=0)
    output_bytes: int = Field(default=4 * MiB, gt=0)
    tmpfs_mb: int = Field(default=512, gt=0)


@dataclass(frozen=True)
class Mount:
    """A host directory or file made visible inside the container, read-only unless copied."""

    source: Path
    target: str


@dataclass(frozen=True)
class RunSpec:
    """One command in one fresh container.

    ``copy_in`` trees are copied into the container's writable scratch space
    (a size-capped tmpfs): the container may change them, the host copy never
    changes. ``mounts`` are read-only. ``collect`` names container paths
    (files or directories) whose contents come back in ``RunResult.files``.
    """

    image: str
    argv: tuple[str, ...]
    copy_in: tuple[Mount, ...] = ()
    mounts: tuple[Mount, ...] = ()
    workdir: str = "/work"
    env: Mapping[str, str] = field(default_factory=dict)
    limits: Limits = field(default_factory=Limits)
    collect: tuple[str, ...] = ()


@dataclass(frozen=True)
class RunResult:
    """What happened to one command. A non-zero exit is data, not an exception."""

    exit_code: int | None
    stdout: bytes
    stderr: bytes
    wall_s: float
    timed_out: bool = False
    oom_killed: bool = False
    output_limit_exceeded: bool = False
    peak_memory_bytes: int | None = None
    files: Mapping[str, bytes] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Return True when the command exited 0 within every limit."""
        return (
            self.exit_code == 0
            and not self.timed_out
            and not self.oom_killed
            and not self.output_limit_exceeded
        )
