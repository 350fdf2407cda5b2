"""The sandbox port the layers run commands through, and the context a layer is given.

The pipeline builds one :class:`LayerContext` per run; the shape gates and the
behaviour layer run every command through its :class:`Runner`
(sandbox.docker.DockerSandbox in production, fakes speaking the same
one-method protocol in tests).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from checks.policy import Policy
from checks.workspace import Workspace
from sandbox.spec import RunResult, RunSpec


class Runner(Protocol):
    """Runs one sandboxed command (sandbox.docker.DockerSandbox in production)."""

    def run(self, spec: RunSpec) -> RunResult:
        """Run ``spec.argv`` in a fresh sandbox and return what happened.

        A command that fails, is missing, times out, is OOM-killed or prints
        past ``spec.limits.output_bytes`` is a RunResult, never an exception:
        that is the command's outcome. Raises sandbox.errors.EngineUnavailable
        when no engine answers, ImageMissing when ``spec.image`` is not built,
        SandboxError for any other failure of the sandbox itself, and
        ValueError for a malformed spec (an invalid environment variable).
        """
        ...


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
    # The image head runs in when the change's dependency files ask for more than base's (the head
    # environment, checks/environment.py); empty: head runs in ``image`` too.
    head_image: str = ""

    def image_of(self, tree: Literal["base", "head"]) -> str:
        """The image runs of ``tree`` use."""
        return self.head_image or self.image if tree == "head" else self.image
