"""Repository policy: `.github/patchgate.yml`, read at the base sha only.

Suite locations are deliberately absent: suites live server-side, never in
the repository under test.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

POLICY_PATH = ".github/patchgate.yml"
# Where the policy's JSON Schema is published (`patchgate schema policy` prints it); a policy file may
# name it in a `$schema` key or a `# yaml-language-server: $schema=...` comment for editors.
POLICY_SCHEMA_ID = "https://patchgate.dev/schemas/policy.json"
# YAML 1.1 reads these as booleans, YAML 1.2 (and JSON Schema-aware editors) as strings: refused, so
# patchgate and an editor checking the schema never disagree about a value.
_YAML11_BOOLEANS = frozenset({"yes", "no", "on", "off", "y", "n"})


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Agents(_Model):
    """Which pull requests are agent PRs; any one match is enough."""

    authors: list[str] = Field(default_factory=lambda: ["*[bot]"])
    labels: list[str] = Field(default_factory=lambda: ["agent"])
    branch_prefixes: list[str] = Field(default_factory=lambda: ["agent/", "copilot/", "codex/"])
    include_drafts: bool = False
    # What a PR that is not an agent PR gets: no check run at all, or a neutral one.
    others: Literal["skip", "neutral"] = "skip"

    def matches(self, author: str, labels: list[str], head_ref: str) -> bool:
        """Return True when the PR's author, a label or its head branch marks it as an agent PR."""
        if any(_login_matches(author, pattern) for pattern in self.authors):
            return True
        if set(labels) & set(self.labels):
            return True
        return any(head_ref.startswith(prefix) for prefix in self.branch_prefixes)


def _login_matches(login: str, pattern: str) -> bool:
    # Only `*` is a wildcard: logins like `name[bot]` hold brackets that fnmatch would read as a class.
    regex = ".*".join(re.escape(part) for part in pattern.split("*"))
    return re.fullmatch(regex, login, flags=re.IGNORECASE) is not None


class GateSwitch(_Model):
    enabled: bool = True


class ToolSwitch(GateSwitch):
    # The tool's sandbox budget for both trees; None keeps the tool's own default
    # (ruff and bandit 300 s / 1024 MiB, mypy 600 s / 2048 MiB, semgrep 420 s / 2048 MiB).
    # Running out is an error (neutral), never a PR failure.
    timeout_s: float | None = Field(default=None, ge=30, le=3600)
    memory_mb: int | None = Field(default=None, ge=256, le=16384)


class MypyGate(ToolSwitch):
    max_new_errors: int = Field(default=0, ge=0)


class RuffGate(ToolSwitch):
    max_new_findings: int = Field(default=0, ge=0)


class BanditGate(ToolSwitch):
    block_severity: Literal["low", "medium", "high"] = "medium"


class SemgrepGate(ToolSwitch):
    block_severity: Literal["INFO", "WARNING", "ERROR"] = "WARNING"


class HygieneGate(GateSwitch):
    # Agent hygiene findings (deleted tests, new skips, edits to CI or test config)
    # need a human: by default they ask for a maintainer rather than fail the PR.
    on_finding: Literal["action_required", "failure", "warn"] = "action_required"


class Gates(_Model):
    loads: GateSwitch = Field(default_factory=GateSwitch)
    ruff: RuffGate = Field(default_factory=RuffGate)
    mypy: MypyGate = Field(default_factory=MypyGate)
    bandit: BanditGate = Field(default_factory=BanditGate)
    semgrep: SemgrepGate = Field(default_factory=SemgrepGate)
    hygiene: HygieneGate = Field(default_factory=HygieneGate)
    dependencies: GateSwitch = Field(default_factory=GateSwitch)


class DependencyPolicy(_Model):
    """What the change may do to the repository's dependencies (the ``dependencies`` gate).

    A requirement the change adds that names a URL, a VCS or a local path is refused whatever this says.
    """

    # False: every added or changed dependency fails the PR.
    allow_changes: bool = True
    # When not empty, only these projects (PEP 503 names) may be added or changed.
    allow: list[str] = Field(default_factory=list)

    def refusal(self, name: str) -> str:
        """Why the policy refuses adding or changing project ``name`` (a PEP 503 name); empty: it may."""
        if not self.allow_changes:
            return "the policy allows no dependency changes"
        allowed = {_pep503(n) for n in self.allow}
        if allowed and _pep503(name) not in allowed:
            return "not on the policy's dependencies.allow list"
        return ""


def _pep503(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name.strip()).lower()


class Differential(_Model):
    """Differential checks: the change's function against a reference on drawn inputs (``*.diff.yml``)."""

    enabled: bool = True
    # Per function: how many inputs Hypothesis draws (a suite may ask fewer), and the wall time for
    # drawing, comparing and shrinking; past it, what was compared stands.
    max_examples: int = Field(default=2000, ge=1, le=100_000)
    time_limit_s: float = Field(default=60, gt=0, le=3600)
    # One call of the change's function (or the reference's) on one drawn input.
    call_timeout_s: float = Field(default=5, gt=0, le=600)
    # Functions agreeing / functions checked that a differential suite must reach.
    min_pass_rate: float = Field(default=1.0, ge=0, le=1)
    # Where no reference is given: compare head with base on the functions the change touched, for
    # changes labelled as refactors (a label, or a title prefix, case-insensitive).
    compare_refactors_with_base: bool = False
    refactor_labels: list[str] = Field(default_factory=lambda: ["refactor"])
    refactor_title_prefixes: list[str] = Field(default_factory=lambda: ["refactor:", "refactor("])

    def is_refactor(self, labels: list[str], title: str) -> bool:
        """Whether a change with these labels and title is one to compare with base."""
        if not self.compare_refactors_with_base:
            return False
        wanted = {label.lower() for label in self.refactor_labels}
        heading = title.strip().lower()
        return bool(wanted & {label.lower() for label in labels}) or any(
            heading.startswith(prefix.lower()) for prefix in self.refactor_title_prefixes
        )


class Efficiency(_Model):
    """Efficiency checks: growth against the reference at the sizes a differential suite declares."""

    enabled: bool = True
    # Inputs of each size (a suite may ask another number), and the wall time of one function's check.
    repetitions: int = Field(default=5, ge=1, le=50)
    time_limit_s: float = Field(default=120, gt=0, le=3600)
    # One timed call of the change's function: past it, the check fails at that size.
    call_timeout_s: float = Field(default=30, gt=0, le=600)
    # Fails when the change's growth exponent exceeds the reference's by more than this (and it is the
    # slower at the largest size), or when it is more than max_slowdown times slower there.
    max_exponent_margin: float = Field(default=0.3, gt=0, le=5)
    max_slowdown: float = Field(default=5.0, ge=1, le=1000)


class Behaviour(_Model):
    enabled: bool = True
    # With no suites in the test store, behaviour is unmeasured: neutral, not success.
    require_suites: bool = True
    # Pass rates (0..1) a suite must reach for behaviour to pass.
    min_hidden_pass_rate: float = Field(default=1.0, ge=0, le=1)
    min_held_out_pass_rate: float = Field(default=1.0, ge=0, le=1)
    max_regressions: int = Field(default=0, ge=0)
    # How much of a failing hidden test the report shows. Held-out: counts, always.
    show_hidden_failures: Literal["counts", "ids", "ids+messages"] = "ids"
    # A hidden/held-out pass-rate gap above this is reported as overfitting.
    overfitting_gap: float = Field(default=0.2, ge=0, le=1)
    timeout_s: float = Field(default=600, gt=0)
    memory_mb: int = Field(default=2048, gt=0)
    # Importing the change's code and collecting a suite must finish within this many seconds.
    import_timeout_s: float = Field(default=60, gt=0, le=3600)
    # Whether a suite that opted in to `isolation: in-process` (its numbers can be forged by the code
    # under test) may give `success`; when it may not, a passing run is action_required.
    allow_in_process_success: bool = False
    # Tests that cannot cross the isolation (trusted base runs decide) are measured in-process in a
    # run of their own, labelled forgeable; above this share of a suite a passing behaviour asks a
    # maintainer (action_required).
    max_in_process_share: float = Field(default=0.05, ge=0, le=1)
    # The base tree's own tests, run against head as a suite of their own (from base: the change's
    # edits to them never run there): auto runs them when base has tests, required makes a base
    # without tests an error (neutral), off never runs them.
    repository_tests: Literal["auto", "off", "required"] = "auto"
    # Whether a pass on the repository's own tests alone (no hidden or held-out suite configured) may
    # give success; when it may not, a maintainer is asked (action_required). The agent could read
    # those tests: a pass there is weaker evidence than a hidden one.
    repository_tests_suffice: bool = True
    # The tests the change adds: run in-process on head and base, shown, counted for nothing (run),
    # or not run at all (off).
    own_tests: Literal["run", "off"] = "run"
    differential: Differential = Field(default_factory=Differential)
    efficiency: Efficiency = Field(default_factory=Efficiency)

    def min_pass_rate(self, kind: str) -> float:
        """Return the pass rate a suite of ``kind`` must reach.

        The repository's own tests must all pass but for base's own failures (left out of the counts);
        the change's own tests decide nothing.
        """
        floors = {"hidden": self.min_hidden_pass_rate, "held_out": self.min_held_out_pass_rate, "own": 0.0}
        return floors.get(kind, 1.0)


class Strength(_Model):
    """How much a passing verdict is worth for this change: the hidden suite against the changed lines."""

    enabled: bool = True
    # Mutants of the changed lines run against the hidden suite (0: coverage only).
    max_mutants: int = Field(default=20, ge=0, le=500)
    # Wall-clock budget of all mutant runs together; mutants not run by then are reported as such.
    timeout_s: float = Field(default=300, gt=0, le=7200)
    # Floors (0..1); below one the conclusion is action_required ("hidden suite too weak for this
    # change"), never failure. None: report only.
    min_changed_line_coverage: float | None = Field(default=None, ge=0, le=1)
    min_mutation_score: float | None = Field(default=None, ge=0, le=1)
    # The mutants run after the verdict's own runs. True: the check run is completed with the
    # verdict first and updated when they finish (a floor then breached lowers its conclusion
    # to action_required); false: it is completed once, with the strength figures.
    report_first: bool = False


class Quality(_Model):
    enabled: bool = True
    rubrics: list[str] = Field(default_factory=lambda: ["default"])
    model: str = "openai/gpt-4o-mini"
    # Whether a blocking criterion with a verified FAIL fails the PR.
    blocking: bool = False
    # Shadow-judge this fraction of PRs whose behaviour verdict is known, for calibration.
    shadow_sample_rate: float = Field(default=0.25, ge=0, le=1)
    calibration_min_n: int = Field(default=30, ge=1)
    max_prompt_tokens: int = Field(default=24000, gt=0)


class Ranking(_Model):
    """Best of k: open agent PRs for one issue are ranked against each other (docs/ranking.md)."""

    enabled: bool = True
    # Besides GitHub's closing keywords in the PR body ("closes #12"), how a PR names the issue it
    # competes for: label and branch templates where {n} is the issue number and * any text,
    # e.g. labels ["issue-{n}"], branches ["agent/issue-{n}-*"].
    labels: list[str] = Field(default_factory=list)
    branches: list[str] = Field(default_factory=list)

    @field_validator("labels", "branches")
    @classmethod
    def _one_number(cls, templates: list[str]) -> list[str]:
        for template in templates:
            if template.count("{n}") != 1:
                raise ValueError(f"{template!r} must hold {{n}} (the issue number) exactly once")
        return templates


class ReportOptions(_Model):
    """Where the report goes besides the check run."""

    # One sticky PR comment (edited in place on each run) with the conclusion and the layer table:
    # off, on-failure (created when a run does not succeed, then kept up to date) or always.
    comment: Literal["off", "on-failure", "always"] = "off"


class Policy(_Model):
    """The whole repository policy; a missing file means these defaults."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, json_schema_extra={"$id": POLICY_SCHEMA_ID, "title": "patchgate policy"}
    )
    # An editor's schema association; patchgate itself ignores the value.
    schema_: str | None = Field(default=None, alias="$schema", exclude=True)

    agents: Agents = Field(default_factory=Agents)
    gates: Gates = Field(default_factory=Gates)
    dependencies: DependencyPolicy = Field(default_factory=DependencyPolicy)
    behaviour: Behaviour = Field(default_factory=Behaviour)
    strength: Strength = Field(default_factory=Strength)
    quality: Quality = Field(default_factory=Quality)
    ranking: Ranking = Field(default_factory=Ranking)
    report: ReportOptions = Field(default_factory=ReportOptions)
