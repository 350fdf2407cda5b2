"""The sandbox port the layers run commands through, and the context a layer is given.

The pipeline builds one :class:`LayerContext` per run; the shape gates and the
behaviour layer run every command through its :class:`Runner`
(sandbox.docker.DockerSandbox in production, fakes speaking the same
one-method protocol in tests).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from checks.policy import Policy
from checks.workspace import Workspace
from sandbox.spec import RunResult, RunSpec


class Runner(Protocol):
    """Runs one sandboxed command (sandbox.docker.DockerSandbox in production)."""

    def run(self, spec: RunSpec) -> RunResult: ...


@dataclass(frozen=True)
class LayerContext:
    """What a layer is given: the change, the policy, the sandbox and the environment image."""

    workspace: Workspace
    policy: Policy
    runner: Runner
    # The environment image built from the base branch's dependency files.
    image: str
