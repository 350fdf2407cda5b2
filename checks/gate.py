"""The one small Protocol every shape gate satisfies, and the explicit registry of gates.

Repository policy (`gates.<name>`) and rubric YAML refer to gates by these names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from checks.policy import Policy
from checks.report import Finding, ToolRun
from checks.workspace import Workspace
from sandbox.spec import RunResult, RunSpec


class Runner(Protocol):
    """Runs one sandboxed command (sandbox.docker.DockerSandbox in production)."""

    def run(self, spec: RunSpec) -> RunResult: ...


@dataclass(frozen=True)
class GateContext:
    workspace: Workspace
    policy: Policy
    runner: Runner
    # The environment image built from the base branch's dependency files.
    image: str


@dataclass(frozen=True)
class GateResult:
    tool: ToolRun
    findings: tuple[Finding, ...] = field(default=())
    preexisting: int = 0
    # Things the maintainer should know that are not findings (e.g. a capped list).
    notices: tuple[str, ...] = field(default=())


class Gate(Protocol):
    """A shape gate: examines the workspace and reports findings the PR introduced."""

    name: str

    def run(self, ctx: GateContext) -> GateResult: ...


GATES: dict[str, Gate] = {}


def register(gate: Gate) -> Gate:
    """Add ``gate`` to the registry under its name."""
    if gate.name in GATES:
        raise ValueError(f"gate {gate.name!r} is registered twice")
    GATES[gate.name] = gate
    return gate
