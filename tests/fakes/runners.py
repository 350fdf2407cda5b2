"""Runners that stand in for the sandbox where a test proves nothing runs at all."""

from __future__ import annotations

from dataclasses import dataclass

from sandbox.spec import RunResult, RunSpec


@dataclass
class NoRunner:
    """A Runner that fails the test when called: ``who`` is what must never run anything."""

    who: str = "the code under test"

    def run(self, spec: RunSpec) -> RunResult:
        raise AssertionError(f"{self.who} tried to run {spec.argv!r}: no sandbox run expected")
