# ruff: noqa: E501 - a table of decisions reads best one case a line
from __future__ import annotations

from typing import Literal

import pytest

from checks.decide import Decision, decide, settle
from checks.policy import Policy
from checks.policyfile import load_policy
from checks.refusal import tree_finding
from checks.report import (
    BehaviourResult,
    Conclusion,
    CriterionResult,
    Finding,
    QualityResult,
    ShapeResult,
    StrengthResult,
    SuiteKind,
    SuiteResult,
    TestFailure,
    ToolRun,
    Verdict,
)
from sandbox.trees import TreeBoundExceeded


def finding(tool: str = "ruff", *, needs_maintainer: bool = False, introduced: bool = True) -> Finding:
    return Finding(
        tool=tool,
        rule="R1",
        path="a.py",
        start_line=1,
        end_line=1,
        severity="error",
        message="m",
        introduced=introduced,
        needs_maintainer=needs_maintainer,
    )


def suite(kind: SuiteKind = "hidden", passed: int = 10, total: int = 10) -> SuiteResult:
    return SuiteResult(
        name=kind,
        kind=kind,
        passed=passed,
        failed=total - passed,
        total=total,
        pass_rate=passed / total if total else 0.0,
        status="passed" if passed == total else "failed",
    )


SHAPE_OK = ShapeResult(status="passed")
TOO_DEEP = tree_finding(TreeBoundExceeded("d/" * 100 + "d", "depth", 100))
SHAPE_TREE = ShapeResult(status="failed", findings=[TOO_DEEP])
SHAPE_TREE_AND_RUFF = ShapeResult(status="failed", findings=[finding(), TOO_DEEP])
SHAPE_FAIL = ShapeResult(status="failed", findings=[finding(), finding("mypy")])
SHAPE_ERR = ShapeResult(
    status="error", tools=[ToolRun(tool="semgrep", status="error", detail="sandbox down")]
)
# A tool that timed out or crashed on the change's files, a gate's own bug: perhaps the change's doing.
SHAPE_INTERNAL = ShapeResult(
    status="error",
    internal=True,
    tools=[ToolRun(tool="mypy", status="error", detail="mypy did not finish within 600 s", internal=True)],
)
B_INTERNAL = BehaviourResult(status="error", detail="internal error: RecursionError", internal=True)
SHAPE_HYGIENE = ShapeResult(status="passed", findings=[finding("hygiene", needs_maintainer=True)])
B_OK = BehaviourResult(status="passed", suites=[suite(), suite("held_out", 4, 4)])
B_FAIL = BehaviourResult(status="failed", suites=[suite(passed=7), suite("held_out", 1, 4)])
B_ERR = BehaviourResult(status="error", detail="sandbox failure: engine down")
B_NONE = BehaviourResult(status="skipped", detail="no hidden or held-out suites in the test store")
B_OVERFIT = BehaviourResult(status="passed", suites=[suite()], overfitting=True)
B_FORGEABLE = BehaviourResult(status="passed", suites=[suite()], forgeable=True)
WEAK = StrengthResult(
    status="measured",
    changed_lines=4,
    hidden_covered=1,
    too_weak=["hidden suite runs 1/4 changed lines (25%), needs 50%"],
)
B_WEAK = BehaviourResult(status="passed", suites=[suite()], strength=WEAK)
Q_SKIP = QualityResult(status="skipped")
Q_DOWN = QualityResult(status="unavailable", detail="unavailable: timeout")
Q_FAIL = QualityResult(
    status="failed",
    criteria=[
        CriterionResult(id="errors", rubric="default", question="q", severity="blocking", verdict="fail")
    ],
)


def criterion(verdict: Verdict, severity: Literal["blocking", "advisory"] = "blocking") -> CriterionResult:
    return CriterionResult(id="errors", rubric="default", question="q", severity=severity, verdict=verdict)


# What a blocking judge did not settle: a FAIL whose citation does not verify (the change can make
# an honest quote fail), a criterion not judged, a change whose every file was left out.
Q_UNVERIFIED = QualityResult(status="passed", criteria=[criterion("unverified")])
Q_NOT_JUDGED = QualityResult(status="passed", criteria=[criterion("pass"), criterion("error")])
Q_ALL_ERRORS = QualityResult(status="unavailable", criteria=[criterion("error")], detail="unavailable: x")
Q_LEFT_OUT = QualityResult(
    status="skipped",
    omitted_files=["src/big.py"],
    detail="nothing to review: every changed file was left out",
)
Q_SOME_LEFT_OUT = QualityResult(status="passed", criteria=[criterion("pass")], omitted_files=["src/big.py"])
Q_ADVISORY_UNSETTLED = QualityResult(
    status="passed", criteria=[criterion("unverified", "advisory"), criterion("error", "advisory")]
)
BLOCKING = "quality: {blocking: true}"

CASES: list[tuple[str, ShapeResult, BehaviourResult, QualityResult, str, Conclusion, str]] = [
    ("all pass", SHAPE_OK, B_OK, Q_SKIP, "", "success", "all gates passed"),
    ("shape fails", SHAPE_FAIL, B_OK, Q_SKIP, "", "failure", "shape: 2 new findings (1 mypy, 1 ruff)"),
    ("behaviour fails", SHAPE_OK, B_FAIL, Q_SKIP, "", "failure", "behaviour: hidden 7/10 (70%), needs 100%"),
    (
        "sandbox failure under a tool is neutral",
        SHAPE_ERR,
        B_OK,
        Q_SKIP,
        "",
        "neutral",
        "shape: could not run semgrep",
    ),
    # Hostile: a 1,200-deep TOML array raised RecursionError in the behaviour layer, a file made mypy
    # time out: each ended as neutral, which GitHub counts as passing a required check.
    (
        "a tool the change may have broken asks a maintainer",
        SHAPE_INTERNAL,
        B_OK,
        Q_SKIP,
        "",
        "action_required",
        "shape: not measured (mypy: mypy did not finish within 600 s); the change may have provoked it, so a "
        "maintainer decides",
    ),
    (
        "a gate's own bug asks a maintainer",
        SHAPE_OK,
        B_INTERNAL,
        Q_SKIP,
        "",
        "action_required",
        "behaviour: not measured (internal error: RecursionError); the change may have provoked it, so a "
        "maintainer decides",
    ),
    ("a failure still wins", SHAPE_FAIL, B_INTERNAL, Q_SKIP, "", "failure", "shape: 2 new"),
    ("sandbox down is neutral", SHAPE_OK, B_ERR, Q_SKIP, "", "neutral", "behaviour: not measured"),
    ("failure beats infra", SHAPE_FAIL, B_ERR, Q_SKIP, "", "failure", "shape: 2 new"),
    ("no suites is neutral", SHAPE_OK, B_NONE, Q_SKIP, "", "neutral", "behaviour: not measured (no hidden"),
    (
        "no suites allowed",
        SHAPE_OK,
        B_NONE,
        Q_SKIP,
        "behaviour: {require_suites: false}",
        "success",
        "all gates passed",
    ),
    (
        "a tree too deep fails, named",
        SHAPE_TREE,
        B_NONE,
        Q_SKIP,
        "",
        "failure",
        "shape: the change's tree breaks a bound: d/d/d/",
    ),
    (
        "a tree too deep and ruff",
        SHAPE_TREE_AND_RUFF,
        B_OK,
        Q_SKIP,
        "",
        "failure",
        "shape: the change's tree",
    ),
    (
        "a tree too deep in behaviour fails",
        SHAPE_OK,
        BehaviourResult(status="failed", detail="the change's tree breaks a bound: d/d: nested more than 1"),
        Q_SKIP,
        "",
        "failure",
        "behaviour: failed: the change's tree breaks a bound: d/d",
    ),
    (
        "a tree too deep for the judge fails",
        SHAPE_OK,
        B_OK,
        QualityResult(status="failed", detail="the change's tree breaks a bound: d/d: nested more than 1"),
        "",
        "failure",
        "quality: failed: the change's tree breaks a bound",
    ),
    ("hygiene asks a maintainer", SHAPE_HYGIENE, B_OK, Q_SKIP, "", "action_required", "hygiene: 1 finding"),
    (
        "hygiene as failure",
        SHAPE_HYGIENE,
        B_OK,
        Q_SKIP,
        "gates: {hygiene: {on_finding: failure}}",
        "failure",
        "hygiene: 1",
    ),
    (
        "hygiene warn only",
        SHAPE_HYGIENE,
        B_OK,
        Q_SKIP,
        "gates: {hygiene: {on_finding: warn}}",
        "success",
        "all",
    ),
    ("hygiene and failing tests", SHAPE_HYGIENE, B_FAIL, Q_SKIP, "", "failure", "behaviour: hidden 7/10"),
    ("judge outage never fails", SHAPE_OK, B_OK, Q_DOWN, "", "success", "all gates passed"),
    # Blocking quality: a judge outage is infrastructure (docs/quality.md, DESIGN.md), so neutral...
    ("blocking judge outage is neutral", SHAPE_OK, B_OK, Q_DOWN, BLOCKING, "neutral", "quality: not judged"),
    # ...and never hides a failure of another layer.
    ("failure beats a judge outage", SHAPE_OK, B_FAIL, Q_DOWN, BLOCKING, "failure", "behaviour: hidden 7/10"),
    # Until rt13 each of these was a success: decide had no branch for what the judge did not settle.
    (
        "blocking unverified asks",
        SHAPE_OK,
        B_OK,
        Q_UNVERIFIED,
        BLOCKING,
        "action_required",
        "quality (judged): blocking criteria without a verified verdict: errors (unverified)",
    ),
    (
        "blocking not judged asks",
        SHAPE_OK,
        B_OK,
        Q_NOT_JUDGED,
        BLOCKING,
        "action_required",
        "quality (judged): blocking criteria without a verified verdict: errors (not judged)",
    ),
    (
        "blocking all errors asks",
        SHAPE_OK,
        B_OK,
        Q_ALL_ERRORS,
        BLOCKING,
        "action_required",
        "quality (judged): blocking criteria without a verified verdict: errors (not judged)",
    ),
    (
        "blocking every file left out asks",
        SHAPE_OK,
        B_OK,
        Q_LEFT_OUT,
        BLOCKING,
        "action_required",
        "quality (judged): 1 changed file not shown to the judge (prompt budget, size, binary or unreadable): "
        "src/big.py",
    ),
    (
        "blocking some file left out asks",
        SHAPE_OK,
        B_OK,
        Q_SOME_LEFT_OUT,
        BLOCKING,
        "action_required",
        "quality (judged): 1 changed file not shown",
    ),
    ("a verified blocking fail still fails", SHAPE_OK, B_OK, Q_FAIL, BLOCKING, "failure", "quality (judged)"),
    ("advisory unsettled never asks", SHAPE_OK, B_OK, Q_ADVISORY_UNSETTLED, BLOCKING, "success", "all gates"),
    ("not blocking: unverified passes", SHAPE_OK, B_OK, Q_UNVERIFIED, "", "success", "all gates passed"),
    ("not blocking: left out passes", SHAPE_OK, B_OK, Q_LEFT_OUT, "", "success", "all gates passed"),
    ("not blocking: all errors pass", SHAPE_OK, B_OK, Q_ALL_ERRORS, "", "success", "all gates passed"),
    ("behaviour not passed skips quality", SHAPE_OK, B_NONE, Q_SKIP, BLOCKING, "neutral", "behaviour: not"),
    ("judged fail advisory by default", SHAPE_OK, B_OK, Q_FAIL, "", "success", "all gates passed"),
    (
        "judged fail blocks when asked",
        SHAPE_OK,
        B_OK,
        Q_FAIL,
        "quality: {blocking: true}",
        "failure",
        "quality",
    ),
    (
        "unknown rubric asks a maintainer",
        SHAPE_OK,
        B_OK,
        QualityResult(status="error", detail="no rubric named 'secure'"),
        "",
        "action_required",
        "quality: configuration problem (no rubric named 'secure')",
    ),
    (
        "overfitting asks a maintainer",
        SHAPE_OK,
        B_OVERFIT,
        Q_SKIP,
        "",
        "action_required",
        "behaviour: hidden and",
    ),
    (
        "an in-process suite cannot give success",
        SHAPE_OK,
        B_FORGEABLE,
        Q_SKIP,
        "",
        "action_required",
        "behaviour: a suite ran in-process (isolation: in-process): the code under test can forge it",
    ),
    (
        "a test in the tier for running out of time isolated on head asks a maintainer, whatever the share",
        SHAPE_OK,
        BehaviourResult(
            status="passed",
            suites=[
                suite(passed=100, total=100).model_copy(update={"in_process_tier": 1, "slow_in_process": 1})
            ],
        ),
        Q_SKIP,
        "",
        "action_required",
        "behaviour: 1 hidden test ran out of time isolated on head and passed in-process",
    ),
    (
        "the tier under the share alone does not",
        SHAPE_OK,
        BehaviourResult(
            status="passed", suites=[suite(passed=100, total=100).model_copy(update={"in_process_tier": 1})]
        ),
        Q_SKIP,
        "",
        "success",
        "all gates passed",
    ),
    (
        "unless the policy allows it",
        SHAPE_OK,
        B_FORGEABLE,
        Q_SKIP,
        "behaviour: {allow_in_process_success: true}",
        "success",
        "all gates passed",
    ),
    (
        "a suite too weak for the change asks a maintainer",
        SHAPE_OK,
        B_WEAK,
        Q_SKIP,
        "",
        "action_required",
        "behaviour: hidden suite too weak for this change (hidden suite runs 1/4 changed lines (25%), needs 50%)",
    ),
    (
        "a weak suite never turns a failure into action_required",
        SHAPE_OK,
        B_FAIL.model_copy(update={"strength": WEAK}),
        Q_SKIP,
        "",
        "failure",
        "behaviour: hidden 7/10",
    ),
    (
        "a pass that never ran the change's code asks a maintainer, whatever the floors",
        SHAPE_OK,
        B_OK.model_copy(
            update={"strength": StrengthResult(status="measured", changed_lines=3, hidden_covered=0)}
        ),
        Q_SKIP,
        "",
        "action_required",
        "behaviour: no suite ran the change's code (0 of 3 changed lines)",
    ),
    (
        "hostile: an untested function in a module the suite imports - its def line ran, its body never",
        SHAPE_OK,
        B_OK.model_copy(
            update={
                "strength": StrengthResult(
                    status="measured", changed_lines=3, hidden_covered=1, body_lines=2, body_covered=0
                )
            }
        ),
        Q_SKIP,
        "",
        "action_required",
        "behaviour: no suite called the change's code (0 of 2 changed lines in function bodies ran; only "
        "lines an import runs did)",
    ),
    (
        "one changed line in a function's body run is evidence enough",
        SHAPE_OK,
        B_OK.model_copy(
            update={
                "strength": StrengthResult(
                    status="measured", changed_lines=3, hidden_covered=2, body_lines=2, body_covered=1
                )
            }
        ),
        Q_SKIP,
        "",
        "success",
        "",
    ),
    (
        "one changed line run is evidence enough for that rule",
        SHAPE_OK,
        B_OK.model_copy(
            update={"strength": StrengthResult(status="measured", changed_lines=3, hidden_covered=1)}
        ),
        Q_SKIP,
        "",
        "success",
        "all gates passed",
    ),
    (
        "a change no suite can test asks a maintainer",
        SHAPE_OK,
        B_OK.model_copy(update={"untested": ["the change edits statistics.py, ..."]}),
        Q_SKIP,
        "",
        "action_required",
        "behaviour: the change edits statistics.py",
    ),
    (
        "515 of 516 is never shown as 100%",
        SHAPE_OK,
        BehaviourResult(status="failed", suites=[suite(passed=515, total=516)]),
        Q_SKIP,
        "",
        "failure",
        "behaviour: hidden 515/516 (99.8%), needs 100%",
    ),
    (
        "a failing in-process suite still fails",
        SHAPE_OK,
        BehaviourResult(status="failed", suites=[suite(passed=7)], forgeable=True),
        Q_SKIP,
        "",
        "failure",
        "behaviour: hidden 7/10",
    ),
]


@pytest.mark.parametrize(
    ("shape", "behaviour", "quality", "policy", "conclusion", "first_reason"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_decide(  # noqa: PLR0917 - one positional parameter per table column
    shape: ShapeResult,
    behaviour: BehaviourResult,
    quality: QualityResult,
    policy: str,
    conclusion: Conclusion,
    first_reason: str,
) -> None:
    decision = decide(shape, behaviour, quality, load_policy(policy) if policy else Policy())
    assert decision.conclusion == conclusion
    assert decision.reasons[0].startswith(first_reason), decision.reasons


def test_failure_lists_every_reason() -> None:
    decision = decide(SHAPE_FAIL, B_FAIL, Q_SKIP, Policy())
    assert decision.conclusion == "failure"
    assert any(r.startswith("shape:") for r in decision.reasons)
    assert any("held-out 1/4 (25%)" in r for r in decision.reasons)


def test_a_tree_too_deep_is_named_beside_the_other_findings() -> None:
    decision = decide(SHAPE_TREE_AND_RUFF, B_OK, Q_SKIP, Policy())
    assert decision.reasons[:2] == (
        "shape: the change's tree breaks a bound: " + "d/" * 29 + "d…" + "/d" * 20 + ": nested more than 100 "
        "levels deep",
        "shape: 1 new finding (1 ruff)",
    )


SETTLES: list[tuple[str, Conclusion, Conclusion, Conclusion]] = [
    # (case, first conclusion, decide() again with the mutation score, the conclusion that stands)
    ("a floor breached by the mutants lowers a success", "success", "action_required", "action_required"),
    ("a neutral run is lowered too", "neutral", "action_required", "action_required"),
    ("a strong suite changes nothing", "success", "success", "success"),
    ("mutants never raise a failure", "failure", "success", "failure"),
    ("mutants never raise a failure to action_required", "failure", "action_required", "failure"),
    ("mutants never raise action_required", "action_required", "success", "action_required"),
    ("mutants never raise neutral", "neutral", "success", "neutral"),
    ("a failure stays a failure", "failure", "failure", "failure"),
]


@pytest.mark.parametrize(("first", "later", "stands"), [c[1:] for c in SETTLES], ids=[c[0] for c in SETTLES])
def test_the_mutants_may_lower_a_conclusion_never_raise_it(
    first: Conclusion, later: Conclusion, stands: Conclusion
) -> None:
    settled = settle(Decision(first, ("first",)), Decision(later, ("later",)))
    assert settled.conclusion == stands
    # The reasons go with the conclusion that stands.
    assert settled.reasons == (("later",) if stands == later else ("first",))


def repository(status: str = "passed", *, failed: int = 0, rewritten: int = 0) -> SuiteResult:
    edited = [
        TestFailure(id=f"tests/t.py::test_{n}", message="assert", edit=f"tests/t.py:{n}")
        for n in range(rewritten)
    ]
    return SuiteResult(name="repository tests (from base)", kind="repository", status=status,  # type: ignore[arg-type]
                       passed=10 - failed - rewritten, failed=failed + rewritten, total=10, rewritten=edited)  # fmt: skip


OWN_FAILING = SuiteResult(
    name="own", kind="own", status="failed", passed=0, failed=3, total=3, isolation="in-process"
)


@pytest.mark.parametrize(
    ("behaviour", "policy", "conclusion", "said"),
    [
        # The repository's tests alone: a success that says what it rests on.
        (
            BehaviourResult(status="passed", suites=[repository()]),
            Policy(),
            "success",
            "no hidden suite configured",
        ),
        (
            BehaviourResult(status="passed", suites=[repository()]),
            load_policy("behaviour: {repository_tests_suffice: false}"),
            "action_required",
            "only the repository's own tests ran",
        ),
        # Beside a hidden suite the pass rests on that suite: nothing more to say.
        (
            BehaviourResult(status="passed", suites=[suite(), repository()]),
            Policy(),
            "success",
            "all gates passed",
        ),
        # A test the change rewrote whose base version fails on head: a maintainer decides, naming it.
        (
            BehaviourResult(status="passed", suites=[repository(rewritten=2)]),
            Policy(),
            "action_required",
            "rewrote 2 repository tests whose base version fails on head: tests/t.py::test_0 (tests/t.py:0), tests/t.py::test_1 (tests/t.py:1)",
        ),
        # One it did not touch: a regression.
        (
            BehaviourResult(status="failed", suites=[repository("failed", failed=1)], regressions=1),
            Policy(),
            "failure",
            "1 test the change did not touch fails on head",
        ),
        (
            BehaviourResult(
                status="failed", suites=[repository("failed", failed=2, rewritten=1)], regressions=2
            ),
            Policy(),
            "failure",
            "2 tests the change did not touch fail on head",
        ),
        # The change's own tests, failing or not, decide nothing (the layer never counts them either).
        (
            BehaviourResult(status="passed", suites=[suite(), OWN_FAILING]),
            Policy(),
            "success",
            "all gates passed",
        ),
    ],
)
def test_the_repository_s_own_tests_in_the_decision(
    behaviour: BehaviourResult, policy: Policy, conclusion: Conclusion, said: str
) -> None:
    decision = decide(SHAPE_OK, behaviour, QualityResult(status="skipped"), policy)
    assert decision.conclusion == conclusion, decision.reasons
    assert any(said in r for r in decision.reasons), decision.reasons
