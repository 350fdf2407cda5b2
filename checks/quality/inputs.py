"""What the quality layer is given: the task the PR was set, and how to reach the judge."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from checks.quality.cache import VerdictCache
    from checks.quality.calibration import JudgeRecord


@dataclass(frozen=True)
class Task:
    """What the PR was asked to do, as the judge may see it."""

    title: str = ""
    body: str = ""
    issue: str = ""


@dataclass(frozen=True)
class QualityInputs:
    """The quality layer's own inputs, beside the change (``run_quality(ctx, inputs)``).

    ``records`` are stored shadow verdicts; they set the calibration label.
    ``rubric_dirs`` are searched for rubrics before the shipped ones.
    ``provenance`` names who wrote the change (never shown to the judge): it
    sets the self-preference note.
    """

    task: Task
    judge: JudgeSettings
    cache: VerdictCache | None = None
    records: Sequence[JudgeRecord] = ()
    rubric_dirs: Sequence[Path] = ()
    provenance: Sequence[str] = ()


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
