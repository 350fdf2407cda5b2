"""What one gate run is given: the change, the policy, the sandbox, the suites, the task."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from checks.gate import Runner
from checks.policy import Policy
from checks.workspace import Workspace

if TYPE_CHECKING:
    from checks.quality import JudgeRecord, VerdictCache


@dataclass(frozen=True)
class Suites:
    """Server-side test suites for one repository; never read from the repository itself."""

    hidden: Path | None = None
    held_out: Path | None = None
    # The suites' commit when they come from a repository: the report records it for reproduction.
    commit: str | None = None
    # Why the suites could not be read (e.g. the App cannot read the suites repository):
    # behaviour is then an error (neutral), never a pass and never the PR's failure.
    error: str | None = None


@dataclass(frozen=True)
class Task:
    """What the PR was asked to do, as the judge may see it."""

    title: str = ""
    body: str = ""
    issue: str = ""


@dataclass(frozen=True)
class JudgeSettings:
    """How to reach the judge model; the key never enters a log, a report or a prompt."""

    api_base: str | None = None
    api_key: str | None = field(default=None, repr=False)
    # One request's timeout, and litellm's retries of it.
    timeout_s: float = 60.0
    num_retries: int = 2
    # (input, output) USD per token; registers a price for models litellm does not know
    # (local models: (0.0, 0.0)) so the report's cost is measured, not missing.
    cost_per_token: tuple[float, float] | None = None
    # All judge calls of one gate run (quality, shadow, pairwise) share this much wall time:
    # a hanging endpoint once held a run for 389 s. None: no budget.
    budget_s: float | None = 180.0
    # The run's clock, set by `started` and shared by every copy of these settings.
    clock: JudgeClock | None = field(default=None, repr=False, compare=False)

    def started(self) -> JudgeSettings:
        """Return these settings with a clock for one run's budget (unchanged if they have one)."""
        if self.clock is not None or self.budget_s is None:
            return self
        return replace(self, clock=JudgeClock(self.budget_s))

    def remaining(self) -> float | None:
        """Return the seconds left in the run's budget, starting its clock (None: no budget)."""
        return None if self.clock is None else self.clock.remaining()


@dataclass
class JudgeClock:
    """The wall time one run's judge calls may take together; it starts at the first call.

    Importing litellm and counting tokens come before the first call and take
    seconds; they are not the judge's time.
    """

    budget_s: float
    started_at: float | None = None

    def remaining(self) -> float:
        """Return the seconds left, starting the clock on the first question."""
        now = time.monotonic()
        if self.started_at is None:
            self.started_at = now
        return self.started_at + self.budget_s - now


@dataclass(frozen=True)
class PipelineInputs:
    workspace: Workspace
    policy: Policy
    runner: Runner
    suites: Suites = field(default_factory=Suites)
    task: Task = field(default_factory=Task)
    # None: no judge configured, quality is reported as skipped.
    judge: JudgeSettings | None = None
    # Stable id of this run (delivery/PR/sha); used for deterministic shadow sampling.
    run_key: str = ""
    # Judge verdicts cached by (rubric hash, model, content hash), and the stored shadow
    # verdicts that give the judge its measured false-acceptance rate.
    verdict_cache: VerdictCache | None = None
    judge_records: Sequence[JudgeRecord] = ()
    # Who wrote the change: the PR's author, commit authors and Co-authored-by trailers
    # (checks.quality.provenance). Never shown to the judge; it sets the self-preference note.
    provenance: tuple[str, ...] = ()
    # Asked between layers: a reason (superseded, PR closed) makes the pipeline raise
    # checks.pipeline.Stopped instead of running the next layer (and paying the judge).
    stop: Callable[[], str | None] = field(default=lambda: None, repr=False)
