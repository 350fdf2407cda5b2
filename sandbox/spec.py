"""What a sandboxed run is asked to do, and what it reports back."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

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


# Where a grader's private files live inside the container: a tmpfs only GRADER_UID can enter.
GRADER_HOME = "/grader"
# The grader's listening socket lives here: the subject may connect, never create or remove.
RENDEZVOUS = "/run/patchgate-rpc"
LimitHit = Literal["pids", "memory"]


@dataclass(frozen=True)
class Grader:
    """A trusted command that runs beside the untrusted one, in the same container.

    It runs as its own uid (the sandbox's GRADER_UID), starts first, and the
    run lasts as long as it does. ``private`` sources are copied into
    ``GRADER_HOME`` (mode 0700, owned by the grader) before anything else
    runs, through the exec's standard input: no host file the untrusted
    command could read ever holds them. ``collect`` names paths under
    ``GRADER_HOME`` that come back in ``RunResult.files``. The grader's output
    is the run's stdout/stderr; the untrusted command's is kept apart, capped.
    """

    argv: tuple[str, ...]
    private: tuple[Mount, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    collect: tuple[str, ...] = ()
    workdir: str = GRADER_HOME


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
    grader: Grader | None = None


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
    # The run was ended at once because the container hit its pids or memory limit.
    limit_hit: LimitHit | None = None
    # With a grader: the untrusted command's own output (capped) and exit code.
    subject_output: bytes = b""
    subject_exit_code: int | None = None

    @property
    def ok(self) -> bool:
        """Return True when the command exited 0 within every limit."""
        return (
            self.exit_code == 0
            and not self.timed_out
            and not self.oom_killed
            and not self.output_limit_exceeded
            and self.limit_hit is None
        )
