"""Suite strength: how much the hidden suite's pass is worth for this change.

Two figures, next to the behaviour numbers:

- *changed-line coverage*: which of the change's executable lines the hidden
  suite's head runs ran, as the code under test reports it (recorded in the
  subject's own process by the grader's coverage.py: incontainer/subject/tracer.py);
  never for a held-out suite, whose every published figure the grader
  computes (a figure the subject reports would carry what it chose to encode);
- *mutation score*: mutants of the changed lines (checks/behaviour/mutants.py)
  run against the hidden suite, one fresh sandbox run each, only when
  behaviour passed. A mutant is killed when a test that passed in every head
  run does not pass on it; a mutant run that times out, crashes or hits a
  limit counts as killed. Mutants not started within the time budget are
  reported as not run. A file is mutated in its own encoding (a BOM, a
  coding cookie) and written back in it; a changed file that cannot be
  (a symlink, past the size limit, not decodable or parseable) is named in
  the report as not mutated, and under a mutation-score floor that is a
  reason the suite is too weak: its lines were never tested by a mutant.

Below a policy floor the suite is *too weak for this change*: the decision
asks a maintainer (action_required), never fails the change.
"""

from __future__ import annotations

import dataclasses
import io
import logging
import time
import tokenize
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from checks.behaviour.changedlines import ChangedLines, read_module, total
from checks.behaviour.mutants import Mutant, apply, describe, find, select
from checks.behaviour.outcomes import Part, parse_log
from checks.behaviour.plan import CONTAINER_REPO, Staging, parts, plan_one
from checks.behaviour.result import MAX_LISTED, SuiteOutcome
from checks.behaviour.views import run_view
from checks.policy import Strength
from checks.report import StrengthResult, Survivor, percent
from checks.runner import LayerContext
from sandbox.spec import Mount

log = logging.getLogger(__name__)

PARALLEL_RUNS = 2
# A mutant's run may take this many times the slowest head run (at least MIN_RUN_S), within the budget.
RUN_FACTOR = 3.0
MIN_RUN_S = 30.0


@dataclass(frozen=True)
class PendingMutants:
    """The mutant runs of one change, kept (with the layer's work folder) until the verdict's own runs end.

    The pipeline runs them while the judge reads (checks/pipeline.py); the
    environment image, the staged suite and the head tree are the behaviour
    layer's own, reused.
    """

    ctx: LayerContext
    staging: Staging
    outcome: SuiteOutcome
    executable: ChangedLines
    head: Path

    def measure(self, measured: StrengthResult) -> StrengthResult:
        """Return ``measured`` with the mutation figures added and the floors applied again.

        Raises SandboxError when the sandbox itself fails.
        """
        settings = self.ctx.policy.strength
        result = measured.model_copy(deep=True, update={"pending": False})
        _mutation(self.ctx, self.staging, self.outcome, self.executable, self.head, settings, result)
        result.too_weak = floors(result, settings)
        return result


def measure_strength(
    ctx: LayerContext,
    hidden: Staging | None,
    hidden_outcome: SuiteOutcome | None,
    executable: ChangedLines,
    head: Path,
    *,
    mutate: bool,
) -> tuple[StrengthResult, PendingMutants | None]:
    """Return the coverage figures of this change's suites, and its mutant runs still to do.

    ``hidden`` is the suite that measures: the hidden one, or the repository's own tests when no
    hidden suite is configured (the result says which). Mutants are left for later (``pending``
    set on the result) only when ``mutate``.
    """
    settings = ctx.policy.strength
    if not settings.enabled:
        return StrengthResult(status="skipped", detail="disabled by policy"), None
    lines = executable.lines
    changed = total(lines)
    if not changed:
        return StrengthResult(
            status="skipped", detail="the change has no executable lines outside tests"
        ), None
    result = StrengthResult(status="measured", changed_lines=changed, read_whole=executable.notes())
    if hidden_outcome is not None:
        result.suite = hidden_outcome.kind
    if hidden_outcome is not None and hidden_outcome.covered is not None:
        ran = hidden_outcome.covered
        uncovered = [f"{p}:{n}" for p in sorted(lines) for n in lines[p] if n not in ran.get(p, ())]
        result.hidden_covered = changed - len(uncovered)
        bodies = executable.bodies
        result.body_lines = total(bodies)
        result.body_covered = sum(1 for p in bodies for n in bodies[p] if n in ran.get(p, ()))
        result.uncovered = uncovered[:MAX_LISTED]
    result.too_weak = floors(result, settings)
    if mutate and hidden is not None and hidden_outcome is not None and settings.max_mutants > 0:
        result.pending = True
        return result, PendingMutants(ctx, hidden, hidden_outcome, executable, head)
    return result, None


def floors(result: StrengthResult, settings: Strength) -> list[str]:
    """Return why the suite is too weak for this change under the policy's floors (empty: it is not)."""
    reasons = []
    coverage, floor = result.hidden_coverage, settings.min_changed_line_coverage
    if floor is not None and (coverage is None or coverage < floor):
        if coverage is None:
            reasons.append("changed-line coverage could not be measured")
        else:
            reasons.append(
                f"{result.measured_by} runs {result.hidden_covered}/{result.changed_lines} changed lines "
                f"({percent(coverage)}), needs {percent(floor)}"
            )
    score, floor = result.mutation_score, settings.min_mutation_score
    if floor is not None and score is not None and score < floor:
        ran = result.mutants - result.not_run
        reasons.append(
            f"{result.measured_by} kills {result.killed}/{ran} mutants ({percent(score)}), "
            f"needs {percent(floor)}"
        )
    if floor is not None and result.not_mutated:
        # Fail closed: a file the change made unmutable is not a file the score vouches for.
        count = len(result.not_mutated)
        reasons.append(f"{count} changed file{'s' if count != 1 else ''} could not be mutated")
    return reasons


@dataclass(frozen=True)
class _Source:
    """A changed file as decoded for mutating, and the encoding to write a mutant of it back in."""

    text: str
    encoding: str

    def encode(self, text: str) -> bytes | None:
        try:
            return text.encode(self.encoding, "surrogateescape")
        except (UnicodeEncodeError, LookupError):
            return None


def source_of(head: Path, path: str, unread: Mapping[str, str]) -> _Source | str:
    """Return ``path``'s source decoded as Python decodes it (a BOM, a coding cookie), or why not."""
    if path in unread:
        return unread[path]
    data = read_module(head / path)
    if isinstance(data, str):
        return data
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError:
        # Stricter than Python's import (a byte that is not UTF-8 in a first-line comment): the
        # file parsed (else it would be unread), so it is UTF-8 where it matters.
        encoding = "utf-8"
    try:
        # utf-8-sig strips a BOM here and writes it back in the mutant; bytes that do not decode
        # where Python lets them be (a comment) travel as surrogates and are written back as they were.
        return _Source(data.decode(encoding, "surrogateescape"), encoding)
    except (LookupError, UnicodeDecodeError):
        return "does not decode (its coding cookie, or UTF-8)"


def _mutation(  # noqa: PLR0917 - the layer's facts, passed once
    ctx: LayerContext,
    staging: Staging,
    outcome: SuiteOutcome,
    executable: ChangedLines,
    head: Path,
    settings: Strength,
    result: StrengthResult,
) -> None:
    sources: dict[str, _Source] = {}
    found: list[Mutant] = []
    for path, lines in sorted(executable.lines.items()):
        source = source_of(head, path, executable.unread)
        if isinstance(source, str):
            result.not_mutated.append(f"{path}: {source}")
            continue
        sources[path] = source
        found += find(source.text, path, lines)
    chosen = select(found, settings.max_mutants)
    if not chosen or not outcome.head_passed:
        result.detail = "no mutant of the changed lines" if not chosen else "no test passed on head"
        return
    deadline = time.monotonic() + settings.timeout_s
    run_s = min(staging.policy.timeout_s, max(MIN_RUN_S, RUN_FACTOR * outcome.head_wall_s))
    quiet = dataclasses.replace(staging, lines={}, messages=False)
    work = staging.work / "mutants"
    work.mkdir(exist_ok=True)

    def attempt(number: int, mutant: Mutant) -> bool | None:
        if time.monotonic() >= deadline:
            return None  # not run: the budget is spent
        source = sources[mutant.path]
        mutated = apply(source.text, mutant)
        data = source.encode(mutated) if mutated is not None else None
        if data is None:
            return None
        folder = work / str(number)
        folder.mkdir()
        (folder / "module.py").write_bytes(data)
        overlay = (Mount(folder / "module.py", f"{CONTAINER_REPO}/{mutant.path}"),)
        return any(
            _kills(ctx, quiet, outcome, part, overlay, head, run_s, f"mutant {number}")
            for part in parts(staging.suite)
        )

    with ThreadPoolExecutor(max_workers=PARALLEL_RUNS, thread_name_prefix="mutant") as pool:
        verdicts = list(pool.map(lambda item: attempt(*item), enumerate(chosen, 1)))
    result.mutants = len(chosen)
    result.killed = sum(1 for v in verdicts if v is True)
    result.not_run = sum(1 for v in verdicts if v is None)
    survivors = [m for m, v in zip(chosen, verdicts, strict=True) if v is False]
    result.survivors = [
        Survivor(path=d.path, line=d.line, operator=d.operator, mutated=d.mutated)
        for d in (describe(sources[m.path].text, m) for m in survivors[:MAX_LISTED])
    ]


def _kills(  # noqa: PLR0917 - one run's facts
    ctx: LayerContext,
    staging: Staging,
    outcome: SuiteOutcome,
    part: Part,
    overlay: tuple[Mount, ...],
    head: Path,
    run_s: float,
    label: str,
) -> bool:
    """Run one part of the hidden suite on a mutant; True when a test that passed on head does not."""
    plan = plan_one(staging, part, label, "head", head, overlay=overlay, timeout_s=run_s)
    run = ctx.runner.run(plan.spec)
    run_log = parse_log(run.files.get(plan.report), plan.nonce, plan.part)
    if not run_log.started or run_log.problems:
        return True
    view = run_view(plan, run, run_log, staging.suite, staging.policy)
    case_ids = set(staging.suite.case_ids)
    wanted = [i for i in outcome.head_passed if (i in case_ids) == (part == "cases")]
    return any(not view.outcome(i).passed for i in wanted)
