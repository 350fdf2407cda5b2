"""The report: patchgate's public output contract (JSON Schema via `patchgate schema report`).

Shape, behaviour and quality stay separate all the way to the output;
nothing here blends them into one score.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

REPORT_VERSION = "1"

Conclusion = Literal["success", "failure", "neutral", "action_required"]
# passed/failed judge the PR; error means the gate itself broke (infrastructure);
# skipped means policy turned it off or an earlier layer made it moot.
LayerStatus = Literal["passed", "failed", "error", "skipped", "unavailable"]
Severity = Literal["info", "warning", "error"]
# hidden, held_out: the server-side suites; repository: the base tree's own tests run against head
# (not hidden from the agent: weaker evidence); own: the tests the change adds (its author's word,
# shown and counted for nothing).
SuiteKind = Literal["hidden", "held_out", "repository", "own"]
SUITE_LABELS: dict[SuiteKind, str] = {
    "hidden": "hidden",
    "held_out": "held-out",
    "repository": "repository tests (from base)",
    "own": "the change's own tests (written by its author)",
}
# One word or two for a table's kind column and a failing test's line.
SHORT_LABELS: dict[SuiteKind, str] = {
    "hidden": "hidden",
    "held_out": "held-out",
    "repository": "repository",
    "own": "own tests",
}
# Suites whose numbers decide behaviour; the change's own tests never do.
COUNTED_KINDS: frozenset[SuiteKind] = frozenset({"hidden", "held_out", "repository"})
Verdict = Literal["pass", "fail", "n/a", "unverified", "error"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


# The rule of a finding that says a gate could not examine a changed file whole (too large, not
# parsed, dropped by its tool): never a notice, never a pass, never a PR failure by itself - it
# always asks for a maintainer (checks.decide), whatever the gate's thresholds and the policy.
NOT_EXAMINED = "not-examined"


class Finding(_Model):
    """One problem a shape gate found, located in the head tree."""

    tool: str
    rule: str
    path: str
    start_line: int = Field(ge=0)
    end_line: int = Field(ge=0)
    severity: Severity
    message: str
    introduced: bool = True
    # Set by the pipeline from the workspace: only findings on changed lines become annotations.
    on_changed_line: bool = True
    needs_maintainer: bool = False

    @property
    def shown_severity(self) -> Severity:
        """The one severity every output shows: a finding that asks for a maintainer blocks nothing."""
        return "warning" if self.needs_maintainer and self.severity == "error" else self.severity


class ToolRun(_Model):
    """How one gate's tool ran: `error` is never a PR failure.

    ``internal`` says the tool could not run for a reason other than the sandbox's (it timed out, ran
    out of memory, crashed, printed what is not its report, or the gate's own code raised): the
    change's content may have provoked it, so a maintainer decides rather than ``neutral``.
    """

    tool: str
    status: Literal["ok", "error", "skipped"]
    seconds: float = 0.0
    detail: str = ""
    internal: bool = False


class ShapeResult(_Model):
    status: LayerStatus = "skipped"
    # The layer ended in an error of patchgate's own (a bug, perhaps one the change's content provoked),
    # not infrastructure: a maintainer decides, never ``neutral`` (which passes a required check).
    internal: bool = False
    findings: list[Finding] = Field(default_factory=list)
    preexisting: int = 0
    tools: list[ToolRun] = Field(default_factory=list)
    notices: list[str] = Field(default_factory=list)


class TestFailure(_Model):
    """A failing hidden test: an id, and a message only when policy allows it."""

    __test__ = False  # not a pytest test class, whatever its name says

    id: str
    message: str = ""
    # A repository test the change rewrote: where its edit is at head ("tests/test_x.py:12", "deleted").
    edit: str = ""


class SuiteResult(_Model):
    name: str
    kind: SuiteKind
    status: LayerStatus = "passed"
    passed: int = 0
    failed: int = 0
    errors: int = 0
    total: int = 0
    # Tests whose head runs disagreed: counted as failed, except those flaky on base too (left out).
    flaky: int = 0
    flaky_on_base: int = 0
    # Skipped or xfailed on base and head alike: left out of the counts (the expectation is base's).
    skipped_on_base: int = 0
    pass_rate: float = 0.0
    # Resource figures are a channel the code under test controls: held-out suites never show them.
    wall_s: float | None = None
    peak_memory_bytes: int | None = None
    timed_out: int = 0
    # "in-process": the suite opted out of the grader/subject split; the code under test can forge it.
    isolation: Literal["subject", "in-process"] = "subject"
    # Its base runs came from an earlier job with the same base, suites, policy and image.
    base_reused: bool = False
    # Of its tests, how many were measured in-process (they cannot cross the isolation): forgeable.
    in_process_tier: int = 0
    # Of those, how many are there only because they ran out of time isolated on head (base passed them
    # slowly): the change chose that, so such a pass always asks a maintainer (checks/decide.py).
    slow_in_process: int = 0
    # Repository tests failing on base and on head: the base's own failures, left out of the counts.
    failing_on_base: int = 0
    # Tests failing on base and passing on head (for the change's own tests: they test the change).
    fail_to_pass: int = 0
    # Repository tests the change edited (or removed) whose base version fails on head: a maintainer
    # decides whether the change meant to change that behaviour (action_required, never a silent pass).
    rewritten: list[TestFailure] = Field(default_factory=list)
    # Hidden suites only; a held-out suite never carries ids or messages.
    failures: list[TestFailure] = Field(default_factory=list)
    flaky_ids: list[str] = Field(default_factory=list)
    flaky_on_base_ids: list[str] = Field(default_factory=list)
    timed_out_ids: list[str] = Field(default_factory=list)
    detail: str = ""


class Survivor(_Model):
    """A mutant of a changed line the hidden suite did not kill (hidden suites only)."""

    path: str
    line: int
    operator: str
    mutated: str = ""


class StrengthResult(_Model):
    """How well the suites exercise the change: changed-line coverage and a mutation score.

    Coverage is measured in the code under test's own process (it is an
    observation of the subject, like its return values, and shown as its
    report), for the hidden suite only: nothing the subject measures is
    published about a held-out run.
    """

    status: Literal["measured", "skipped", "error"] = "skipped"
    # The suite the figures are of: the hidden one, or the repository's own tests when there is none.
    suite: SuiteKind = "hidden"
    changed_lines: int = 0
    hidden_covered: int | None = None
    # Of the changed lines, those inside a function's body (run only when it is called, never by an
    # import), and how many of them the suite ran: a ``def`` line runs whenever its module is imported.
    body_lines: int = 0
    body_covered: int | None = None
    uncovered: list[str] = Field(default_factory=list)  # "path:line", hidden suite only
    # Changed files whose statements could not be worked out (a symlink, past the size limit, not
    # decodable or parseable): every changed line of each is counted. "path: why".
    read_whole: list[str] = Field(default_factory=list)
    # No longer measured (a held-out run publishes nothing the code under test reports); kept, always
    # None, so that stored reports still read.
    held_out_covered: int | None = None
    mutants: int = 0
    killed: int = 0
    not_run: int = 0
    survivors: list[Survivor] = Field(default_factory=list)
    # Changed files no mutant was made of, and why ("path: why"): their lines are not in the score.
    not_mutated: list[str] = Field(default_factory=list)
    # Set when a floor of the policy is not met: why the suite is too weak for this change.
    too_weak: list[str] = Field(default_factory=list)
    detail: str = ""
    # The mutants are still running: the report was delivered first (policy strength.report_first),
    # and its conclusion may still be lowered when they finish.
    pending: bool = False

    @property
    def measured_by(self) -> str:
        """The words for the suite these figures are of: ``hidden suite`` or ``repository tests``."""
        return "repository tests" if self.suite == "repository" else "hidden suite"

    @property
    def hidden_coverage(self) -> float | None:
        if self.hidden_covered is None or not self.changed_lines:
            return None
        return self.hidden_covered / self.changed_lines

    @property
    def mutation_score(self) -> float | None:
        ran = self.mutants - self.not_run
        return self.killed / ran if ran > 0 else None


class EfficiencyResult(_Model):
    """One function's growth against its reference, measured in one run (hidden suites and base only)."""

    status: Literal["passed", "failed", "error", "not_run"]
    sizes: list[int] = Field(default_factory=list)
    head_exponent: float | None = None
    reference_exponent: float | None = None
    # The change's time over the reference's at the largest size measured (median of paired inputs).
    ratio: float | None = None
    largest: int | None = None
    # "cpu": the reference's thread and the container's CPU time; "wall": the cgroup could not be read.
    clock: Literal["cpu", "wall"] = "cpu"
    cpu_quota: float | None = None
    detail: str = ""


class FunctionCheck(_Model):
    """One function of a differential suite against its reference (hidden suites and base only)."""

    id: str
    function: str
    # The suite's function (``ref.parse_duration``), or ``base`` for a refactor compared with base.
    reference: str
    status: Literal["agreed", "disagreed", "error", "not_run"]
    # Distinct inputs compared (drawn and shrunk).
    inputs: int = 0
    # The smallest disagreement Hypothesis found: "head returned ... for f(...); reference raised ...".
    counterexample: str = ""
    efficiency: EfficiencyResult | None = None
    # Why it could not be checked (error: the suite's problem; not_run: the run ended first).
    detail: str = ""


class DifferentialResult(_Model):
    """A differential suite: functions agreeing with their references, and their efficiency checks.

    A held-out suite shows its counts only; its inputs, functions, counterexamples and figures never
    leave its run.
    """

    name: str
    source: Literal["hidden", "held_out", "base"]
    status: LayerStatus = "passed"
    checked: int = 0
    agreed: int = 0
    pass_rate: float = 0.0
    inputs: int | None = None
    efficiency_checked: int = 0
    efficiency_passed: int = 0
    # Derived on the host from the suite's content and the base sha; `patchgate run` draws the same inputs.
    seed: str = ""
    # The version of Hypothesis that drew them (the sandbox image's, or the environment image's).
    hypothesis: str = ""
    functions: list[FunctionCheck] = Field(default_factory=list)
    detail: str = ""


class BehaviourResult(_Model):
    status: LayerStatus = "skipped"
    # The layer ended in an error of patchgate's own (a bug, perhaps one the change's content provoked),
    # not infrastructure: a maintainer decides, never ``neutral`` (which passes a required check).
    internal: bool = False
    suites: list[SuiteResult] = Field(default_factory=list)
    regressions: int = 0
    fail_to_pass: int = 0
    fail_to_pass_total: int = 0
    pass_to_pass: int = 0
    overfitting: bool = False
    # Some suite ran in-process: its numbers are the code under test's to forge.
    forgeable: bool = False
    # Parts of the change the host can tell no suite tested (decided from trusted facts): a passing
    # behaviour with any of these asks a maintainer.
    untested: list[str] = Field(default_factory=list)
    strength: StrengthResult = Field(default_factory=StrengthResult)
    # Differential and efficiency checks, one entry per differential suite (and base, for a refactor).
    differential: list[DifferentialResult] = Field(default_factory=list)
    detail: str = ""


class Citation(_Model):
    path: str
    start_line: int
    end_line: int
    quote: str
    verified: bool = False
    # Why an unverified citation did not verify (checks.quality.evidence).
    detail: str = ""


class CriterionResult(_Model):
    id: str
    rubric: str
    question: str
    severity: Literal["blocking", "advisory"]
    verdict: Verdict
    reason: str = ""
    evidence: list[Citation] = Field(default_factory=list)


class QualityResult(_Model):
    status: LayerStatus = "skipped"
    # The layer ended in an error of patchgate's own (a bug, perhaps one the change's content provoked),
    # not infrastructure: a maintainer decides, never ``neutral`` (which passes a required check).
    internal: bool = False
    criteria: list[CriterionResult] = Field(default_factory=list)
    rubrics: list[str] = Field(default_factory=list)
    model: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    calibration: str = "uncalibrated"
    omitted_files: list[str] = Field(default_factory=list)
    # Set when the change's authors name an agent of the judge model's family (provenance.py).
    self_preference: str = ""
    detail: str = ""


class Reuse(_Model):
    """Where a reused report comes from: an earlier run of identical inputs (bot/service/reuse.py)."""

    job_id: int
    check_run_id: int | None = None
    url: str = ""


class Report(_Model):
    """The whole verdict on one change."""

    version: str = REPORT_VERSION
    conclusion: Conclusion
    reasons: list[str] = Field(default_factory=list)
    base_sha: str = ""
    head_sha: str = ""
    # The commit of the suites repository the behaviour layer ran (None: a plain directory).
    suites_commit: str | None = None
    # Set when this report was not gated again but answered from an identical earlier run.
    reused_from: Reuse | None = None
    shape: ShapeResult = Field(default_factory=ShapeResult)
    behaviour: BehaviourResult = Field(default_factory=BehaviourResult)
    quality: QualityResult = Field(default_factory=QualityResult)
    timings: dict[str, float] = Field(default_factory=dict)
    # Timings that include a held-out run's duration, which the code under test chooses (it could
    # encode what it learned there): never serialized, never shown; the server's metrics read them.
    private_timings: dict[str, float] = Field(default_factory=dict, exclude=True)


def percent(rate: float) -> str:
    """Return ``rate`` as a percentage that never rounds up: 100% only when all passed (515/516: 99.8%)."""
    if rate >= 1.0:
        return "100%"
    tenths = math.floor(rate * 1000 + 1e-9) / 10
    return f"{tenths:.0f}%" if tenths == int(tenths) else f"{tenths:.1f}%"
