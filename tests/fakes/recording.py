"""A real sandbox that also keeps every spec it ran (what a gate asked the sandbox for)."""

from __future__ import annotations

from dataclasses import dataclass, field

from sandbox.docker import DockerSandbox
from sandbox.spec import RunResult, RunSpec


@dataclass
class Recording:
    """A real DockerSandbox that also keeps every spec it ran."""

    inner: DockerSandbox
    specs: list[RunSpec] = field(default_factory=list)

    def run(self, spec: RunSpec) -> RunResult:
        self.specs.append(spec)
        return self.inner.run(spec)
