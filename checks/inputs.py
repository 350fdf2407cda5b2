"""What one gate run is given: the change, the policy, the sandbox, the suites, the task."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
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
    timeout_s: float = 60.0
    num_retries: int = 2
    # (input, output) USD per token; registers a price for models litellm does not know
    # (local models: (0.0, 0.0)) so the report's cost is measured, not missing.
    cost_per_token: tuple[float, float] | None = None


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
    # Asked between layers: a reason (superseded, PR closed) makes the pipeline raise
    # checks.pipeline.Stopped instead of running the next layer (and paying the judge).
    stop: Callable[[], str | None] = field(default=lambda: None, repr=False)
