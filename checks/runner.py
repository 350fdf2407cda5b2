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
class ChangeContext:
    """What every layer is given: the change and the base branch's policy.

    Every layer's entry point has the same shape, ``run_<layer>(ctx, <its own
    inputs>)``: shape and behaviour run commands, so theirs is a
    :class:`LayerContext`; the quality judge only reads the change.
    """

    workspace: Workspace
    policy: Policy


@dataclass(frozen=True)
class LayerContext(ChangeContext):
    """A context for a layer that runs commands: the change, the policy, the sandbox and the image."""

    runner: Runner
    # The environment image built from the base branch's dependency files.
    image: str
