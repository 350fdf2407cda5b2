"""The conclusion: a pure function of the three layer results and the repository's policy.

Precedence: a PR failure beats a request for a maintainer, which beats
infrastructure trouble, which beats success. Infrastructure trouble alone is
never a `failure`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from checks.policy import Policy
from checks.refusal import TREE_TOOL, tree_reason
from checks.report import (
    COUNTED_KINDS,
    NOT_EXAMINED,
    SUITE_LABELS,
    BehaviourResult,
    Conclusion,
    QualityResult,
    ShapeResult,
    SuiteResult,
    percent,
)

ONLY_REPOSITORY = "behaviour: the repository's own tests alone; no hidden suite configured"


@dataclass(frozen=True)
class Decision:
    conclusion: Conclusion
    reasons: tuple[str, ...]


def suite_numbers(suite: SuiteResult) -> str:
    """Return e.g. ``hidden 43/50 (86%)`` for one suite."""
    return f"{SUITE_LABELS[suite.kind]} {suite.passed}/{suite.total} ({percent(suite.pass_rate)})"


def _shape_failure_reasons(shape: ShapeResult) -> list[str]:
    introduced = [f for f in shape.findings if f.introduced and not f.needs_maintainer]
    # A tree beyond bounds is named outright: it is why nothing else could be examined.
    trees = [tree_reason(f) for f in introduced if f.tool == TREE_TOOL]
    by_tool = Counter(f.tool for f in introduced if f.tool != TREE_TOOL)
    if not by_tool:
        return trees or ["shape: failed"]
    parts = ", ".join(f"{n} {tool}" for tool, n in sorted(by_tool.items()))
    count = sum(by_tool.values())
    return [*trees, f"shape: {count} new finding{'s' if count != 1 else ''} ({parts})"]


def _behaviour_failure_reasons(behaviour: BehaviourResult, policy: Policy) -> list[str]:
    reasons = []
    for suite in behaviour.suites:
        if suite.kind == "own":
            continue  # shown, counted for nothing
        if suite.kind == "repository":
            if suite.status == "failed":
                failing = suite.failed + suite.errors - len(suite.rewritten)
                tests = "1 test" if failing == 1 else f"{failing} tests"
                fail = "fails" if failing == 1 else "fail"
                reasons.append(
                    f"behaviour: {suite_numbers(suite)}: {tests} the change did not touch {fail} on head"
                )
            continue
        floor = policy.behaviour.min_pass_rate(suite.kind)
        if suite.pass_rate < floor or suite.status == "failed":
            reasons.append(f"behaviour: {suite_numbers(suite)}, needs {percent(floor)}")
    if behaviour.regressions > policy.behaviour.max_regressions:
        reasons.append(f"behaviour: {behaviour.regressions} regression(s) (pass on base, fail on head)")
    for d in behaviour.differential:
        if d.status != "failed":
            continue
        if d.agreed < d.checked:
            reasons.append(f"behaviour: differential ({d.name}) {d.agreed}/{d.checked} functions agree "
                           "with their references")  # fmt: skip
        if d.efficiency_passed < d.efficiency_checked:
            slow = d.efficiency_checked - d.efficiency_passed
            reasons.append(f"behaviour: efficiency ({d.name}) {slow} of {d.efficiency_checked} functions "
                           "beyond the policy's bounds against their references")  # fmt: skip
    return reasons or [f"behaviour: failed{': ' + behaviour.detail if behaviour.detail else ''}"]


def decide(
    shape: ShapeResult, behaviour: BehaviourResult, quality: QualityResult, policy: Policy
) -> Decision:
    """Decide the check run's conclusion and the reasons a maintainer reads first."""
    failures: list[str] = []
    maintainer: list[str] = []
    infra: list[str] = []

    # An error of patchgate's own: it may be the change's content that provoked it, so a maintainer
    # decides - never neutral, which GitHub counts as passing a required check.
    maintainer += [
        f"{name}: not measured ({', '.join(notes)}); the change may have provoked it, so a maintainer decides"
        for name, result, notes in (
            (
                "shape",
                shape,
                [f"{t.tool}: {t.detail}" for t in shape.tools if t.internal] or shape.notices[-1:],
            ),
            ("behaviour", behaviour, [behaviour.detail]),
            ("quality", quality, [quality.detail]),
        )
        if result.internal and (name != "quality" or policy.quality.blocking)
    ]
    if shape.status == "failed":
        failures += _shape_failure_reasons(shape)
    elif shape.status == "error" and any(t.status == "error" and not t.internal for t in shape.tools):
        broken = [t.tool for t in shape.tools if t.status == "error" and not t.internal]
        infra.append(f"shape: could not run {', '.join(broken)}")
    elif shape.status == "error" and not shape.internal:
        infra.append("shape: could not run its tools")

    # Whatever the thresholds and hygiene's on_finding say: what no tool saw, a maintainer reads.
    maintainer += _not_examined_reasons(shape)
    hygiene = [f for f in shape.findings if f.needs_maintainer and f.introduced and f.rule != NOT_EXAMINED]
    if hygiene:
        rules = ", ".join(sorted({f.rule for f in hygiene}))
        line = (
            f"hygiene: {len(hygiene)} finding{'s' if len(hygiene) != 1 else ''} need a maintainer ({rules})"
        )
        on_finding = policy.gates.hygiene.on_finding
        if on_finding == "failure":
            failures.append(line)
        elif on_finding == "action_required":
            maintainer.append(line)

    if behaviour.status == "failed":
        failures += _behaviour_failure_reasons(behaviour, policy)
    elif behaviour.status in ("error", "unavailable") and not behaviour.internal:
        infra.append(f"behaviour: not measured ({behaviour.detail or 'infrastructure error'})")
    elif behaviour.status == "skipped" and policy.behaviour.enabled and policy.behaviour.require_suites:
        infra.append(f"behaviour: not measured ({behaviour.detail or 'no suites'})")
    maintainer += _rewritten_reasons(behaviour)
    only_repository = behaviour.status == "passed" and _only_repository(behaviour)
    if only_repository and not policy.behaviour.repository_tests_suffice:
        maintainer.append(
            "behaviour: only the repository's own tests ran (no hidden suite configured): the agent could "
            "read them, and the policy (behaviour.repository_tests_suffice) asks a maintainer"
        )
    if behaviour.overfitting:
        maintainer.append("behaviour: hidden and held-out pass rates differ (overfitting signal)")
    if behaviour.untested and behaviour.status == "passed":
        maintainer += [f"behaviour: {why}" for why in behaviour.untested]
    strength = behaviour.strength
    if behaviour.status == "passed" and strength.changed_lines and strength.hidden_covered == 0:
        # Whatever the floors say: a pass that never ran the change is no evidence about it.
        lines = strength.changed_lines
        maintainer.append(f"behaviour: no suite ran the change's code (0 of {lines} changed lines)")
    elif behaviour.status == "passed" and strength.body_lines and strength.body_covered == 0:
        # Nor is one that only imported it: its ``def`` lines ran, no function it changed was called.
        lines = strength.body_lines
        maintainer.append(
            f"behaviour: no suite called the change's code (0 of {lines} changed lines in function "
            "bodies ran; only lines an import runs did)"
        )
    if behaviour.strength.too_weak and behaviour.status == "passed":
        # Not proven wrong, but the suite is not proven able to tell either: a maintainer decides.
        why = "; ".join(behaviour.strength.too_weak)
        maintainer.append(f"behaviour: hidden suite too weak for this change ({why})")
    share = policy.behaviour.max_in_process_share
    for suite in behaviour.suites if behaviour.status == "passed" else []:
        if suite.kind in COUNTED_KINDS and suite.total and suite.in_process_tier / suite.total > share:
            label = SUITE_LABELS[suite.kind]
            maintainer.append(
                f"behaviour: {suite.in_process_tier} of {suite.total} {label} tests measured in-process "
                f"({percent(suite.in_process_tier / suite.total)}, the policy allows {percent(share)}): "
                "the code under test could forge them"
            )
        if suite.kind in COUNTED_KINDS and suite.slow_in_process:
            # Whatever the share: base passed them isolated, slowly; the change's code could run out
            # of time on purpose to be measured where it can forge what they report.
            maintainer.append(
                f"behaviour: {suite.slow_in_process} {SUITE_LABELS[suite.kind]} test"
                f"{'s' if suite.slow_in_process != 1 else ''} ran out of time isolated on head and "
                "passed in-process: the code under test could forge them"
            )
    if behaviour.forgeable and behaviour.status == "passed" and not policy.behaviour.allow_in_process_success:
        maintainer.append(
            "behaviour: a suite ran in-process (isolation: in-process): the code under test can forge it"
        )

    if quality.status == "error":
        # The judge never ran because its configuration is broken (e.g. an unknown rubric).
        maintainer.append(f"quality: configuration problem ({quality.detail or 'the judge could not start'})")
    if quality.status == "failed" and not quality.criteria:
        # Failed with nothing judged: the change's own tree stopped the layer (see checks.refusal).
        failures.append(f"quality: failed: {quality.detail}")
    elif quality.status == "failed" and policy.quality.blocking:
        blocking = [c.id for c in quality.criteria if c.verdict == "fail" and c.severity == "blocking"]
        failures.append(f"quality (judged): blocking criteria failed: {', '.join(blocking)}")
    if policy.quality.blocking:
        maintainer += _unjudged_reasons(quality)
        if quality.status == "unavailable" and not quality.criteria and not quality.internal:
            infra.append(f"quality: not judged ({quality.detail or 'the judge is unavailable'})")

    if failures:
        return Decision("failure", tuple(failures + maintainer + infra))
    if maintainer:
        return Decision("action_required", tuple(maintainer + infra))
    if infra:
        return Decision("neutral", tuple(infra))
    if only_repository:
        return Decision("success", (f"all gates passed ({ONLY_REPOSITORY})",))
    return Decision("success", ("all gates passed",))


def _unjudged_reasons(quality: QualityResult) -> list[str]:
    """Why a blocking judge did not judge the whole change: what it did not see cannot block, so ask.

    The judge's FAIL blocks only when verified, so a blocking criterion that
    is unverified or not judged (``error``), or a changed file the judge was
    not shown (the prompt budget, over 1 MB, binary or undecodable), would
    otherwise pass by default - and the change chooses what the judge sees.
    """
    reasons = []
    if quality.omitted_files:
        paths = quality.omitted_files
        named = ", ".join(paths[:5]) + (" …" if len(paths) > 5 else "")
        files = "file" if len(paths) == 1 else "files"
        reasons.append(
            f"quality (judged): {len(paths)} changed {files} not shown to the judge (prompt budget, "
            f"size, binary or unreadable): {named}"
        )
    unsettled = [
        c for c in quality.criteria if c.severity == "blocking" and c.verdict in ("unverified", "error")
    ]
    if unsettled:
        named = ", ".join(
            f"{c.id} ({'not judged' if c.verdict == 'error' else c.verdict})" for c in unsettled
        )
        reasons.append(f"quality (judged): blocking criteria without a verified verdict: {named}")
    return reasons


def _not_examined_reasons(shape: ShapeResult) -> list[str]:
    """One reason naming the changed files a shape gate could not examine whole, if any."""
    unseen = [f for f in shape.findings if f.rule == NOT_EXAMINED and f.introduced]
    if not unseen:
        return []
    paths = sorted({f.path for f in unseen})
    tools = ", ".join(sorted({f.tool for f in unseen}))
    named = ", ".join(paths[:5]) + (" …" if len(paths) > 5 else "")
    files = "file" if len(paths) == 1 else "files"
    return [f"shape: {len(paths)} changed {files} not examined whole ({tools}): {named}"]


def _rewritten_reasons(behaviour: BehaviourResult) -> list[str]:
    """One reason per suite with repository tests the change rewrote whose base version fails on head."""
    reasons = []
    for suite in behaviour.suites:
        if not suite.rewritten:
            continue
        n = len(suite.rewritten)
        named = ", ".join(f"{t.id} ({t.edit})" for t in suite.rewritten[:5]) + (" …" if n > 5 else "")
        reasons.append(
            f"behaviour: the change rewrote {n} repository test{'s' if n != 1 else ''} whose base version "
            f"fails on head: {named}"
        )
    return reasons


def _only_repository(behaviour: BehaviourResult) -> bool:
    """Whether the repository's own tests are the only suite that measured the change."""
    measured = [s.kind for s in behaviour.suites if s.kind in COUNTED_KINDS and s.status != "skipped"]
    return measured == ["repository"]


# Worse first, as decide ranks them: a failure beats a request for a maintainer, which beats
# infrastructure trouble, which beats success.
_SEVERITY: dict[Conclusion, int] = {"success": 0, "neutral": 1, "action_required": 2, "failure": 3}


def settle(first: Decision, later: Decision) -> Decision:
    """Return the decision once the mutants are measured: it may lower ``first``, never raise it.

    ``later`` is decide() again with the strength figures; whatever they say
    (the mutant runs execute the change's code), a conclusion already
    reached is never made better by them.
    """
    return later if _SEVERITY[later.conclusion] >= _SEVERITY[first.conclusion] else first
