"""grade_runs on recorded run results (no Docker): what each kind of run ending turns into."""

from __future__ import annotations

import json
from contextlib import ExitStack
from pathlib import Path

import pytest

from checks.behaviour.errors import SuiteError
from checks.behaviour.grade import TestOutcome
from checks.behaviour.graderuns import grade_runs
from checks.behaviour.layer import nothing_to_run, start_behaviour
from checks.behaviour.outcomes import RunView
from checks.behaviour.plan import RunPlan, Staging, Tree, plan_one, plan_runs
from checks.behaviour.result import SuiteOutcome
from checks.behaviour.suites import Suite, Suites, load_suite
from checks.behaviour.tier import TierRuns
from checks.policy import Behaviour, Policy
from checks.runner import LayerContext
from checks.workspace import Workspace
from sandbox.spec import RunResult
from tests.fakes.runners import NoRunner

TESTS = "def test_a():\n    pass\n\n\ndef test_b():\n    pass\n"
CASES = "module: calc\ncases:\n  - {id: c, call: half(2), equals: 1}\n"
POLICY = Behaviour(timeout_s=30)


def pytest_log(
    nonce: str,
    tests: dict[str, str],
    *,
    collected: list[str] | None = None,
    open_test: str | None = None,
    finished: bool = True,
    errors: tuple[dict[str, object], ...] = (),
) -> bytes:
    records: list[dict[str, object]] = [{"kind": "start", "runner": "pytest", "nonce": nonce, "version": 1}]
    records += [{"kind": "collect_error", "skipped": False, "message": "E boom", **e} for e in errors]
    if collected is not None:
        records.append({"kind": "collected", "ids": collected})
    for test_id, outcome in tests.items():
        records += [
            {"kind": "begin", "id": test_id},
            {"kind": "test", "id": test_id, "outcome": outcome, "message": "m"},
        ]
    if open_test:
        records.append({"kind": "begin", "id": open_test})
    if finished:
        records += [{"kind": "finish", "exit_status": 0}, {"kind": "exit", "code": 0}]
    return b"".join(json.dumps(r).encode() + b"\n" for r in records)


def case_log(nonce: str, records: dict[str, dict[str, object]]) -> bytes:
    lines: list[dict[str, object]] = [{"kind": "start", "runner": "cases", "nonce": nonce, "version": 1}]
    for case_id, record in records.items():
        lines += [{"kind": "begin", "id": case_id}, {"kind": "case", "id": case_id, **record}]
    lines.append({"kind": "finish"})
    return b"".join(json.dumps(r).encode() + b"\n" for r in lines)


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Suite, list[RunPlan], dict[Tree, Path]]:
    root = tmp_path / "suite"
    root.mkdir()
    (root / "test_t.py").write_text(TESTS)
    (root / "c.cases.yml").write_text(CASES)
    suite = load_suite(root, "hidden")
    trees: dict[Tree, Path] = {"base": tmp_path / "base", "head": tmp_path / "head"}
    (trees["head"] / "calc").mkdir(parents=True)
    trees["base"].mkdir()
    plans = []
    for part in ("pytest", "cases"):
        staging = Staging(
            suite=suite, image="i", harness=tmp_path, staged=root, work=tmp_path, policy=POLICY, messages=True
        )
        plans += plan_runs(staging, part, trees)
    return suite, plans, trees


ALL = ["test_t.py::test_a", "test_t.py::test_b"]
RETURNED_ONE = {"status": "returned", "value": 1}


def grade(
    setup: tuple[Suite, list[RunPlan], dict[Tree, Path]], logs: dict[str, bytes | None], **flags: object
) -> SuiteOutcome:
    """``logs`` by "<label>/<part>"; flags (e.g. timed_out) apply to runs named in flags['runs']."""
    suite, plans, trees = setup
    runs = flags.pop("runs", ())
    results = {}
    for plan in plans:
        data = logs.get(f"{plan.label}/{plan.part}")
        if data is not None:
            data = data.replace(b'"nonce": "N"', json.dumps({"nonce": plan.nonce})[1:-1].encode())
        extra = flags if f"{plan.label}/{plan.part}" in runs else {}  # type: ignore[operator]
        results[plan] = RunResult(0, b"", b"", 1.5, files={plan.report: data} if data else {}, **extra)  # type: ignore[arg-type]
    return grade_runs(suite, plans, results, trees, POLICY)


def honest(base: dict[str, str], head: dict[str, str]) -> dict[str, bytes | None]:
    logs: dict[str, bytes | None] = {"base/pytest": pytest_log("N", base, collected=ALL)}
    logs["base/cases"] = case_log(
        "N", {"c.cases.yml::c": {"status": "raised", "exception": {"type": "E", "mro": ["E"]}}}
    )
    for label in ("head 1", "head 2"):
        logs[f"{label}/pytest"] = pytest_log("N", head, collected=ALL)
        logs[f"{label}/cases"] = case_log("N", {"c.cases.yml::c": RETURNED_ONE})
    return logs


def test_an_honest_change(setup: tuple[Suite, list[RunPlan], dict[Tree, Path]]) -> None:
    outcome = grade(
        setup,
        honest(
            {"test_t.py::test_a": "passed", "test_t.py::test_b": "failed"},
            {"test_t.py::test_a": "passed", "test_t.py::test_b": "passed"},
        ),
    )
    g = outcome.grade
    assert g is not None
    assert (g.passed, g.total, g.fail_to_pass, g.fail_to_pass_total, g.pass_to_pass) == (3, 3, 2, 2, 1)
    assert outcome.wall_s == 1.5 and outcome.notes == ()


def test_a_head_report_destroyed_by_the_change_fails_its_tests(
    setup: tuple[Suite, list[RunPlan], dict[Tree, Path]],
) -> None:
    logs = honest({}, {"test_t.py::test_a": "passed", "test_t.py::test_b": "passed"})
    logs["head 2/pytest"] = b"garbage\n"
    outcome = grade(setup, logs)
    g = outcome.grade
    assert g is not None
    # head 1 passed both, head 2 was not believed: they disagree, so both are flaky - and count as errors.
    assert g.flaky == tuple(ALL) and (g.passed, g.errors) == (1, len(ALL))  # the case passed
    assert any("its report was not believed" in n.hidden for n in outcome.notes)
    logs["head 1/pytest"] = None
    g = grade(setup, logs).grade
    assert g is not None and (g.passed, g.errors) == (1, 2)


def test_a_base_run_without_a_report_is_our_problem(
    setup: tuple[Suite, list[RunPlan], dict[Tree, Path]],
) -> None:
    logs = honest({}, {})
    logs["base/cases"] = None
    with pytest.raises(SuiteError, match="the base run of the cases part produced no report"):
        grade(setup, logs)


def test_a_missing_dependency_is_named_unless_the_change_provides_it(
    setup: tuple[Suite, list[RunPlan], dict[Tree, Path]],
) -> None:
    logs = honest({}, {})
    logs["base/pytest"] = pytest_log(
        "N", {}, collected=[], errors=({"path": "test_t.py", "missing_module": "hypothesis.strategies"},)
    )
    with pytest.raises(SuiteError, match=r"needs module 'hypothesis\.strategies'"):
        grade(setup, logs)
    # calc/ exists in the head tree: the change adds it; base simply fails those tests.
    logs["base/pytest"] = pytest_log(
        "N", {}, collected=[], errors=({"path": "test_t.py", "missing_module": "calc"},)
    )
    g = grade(setup, logs).grade
    assert g is not None and g.fail_to_pass_total == 3


def test_a_suite_no_run_could_collect_is_an_error(
    setup: tuple[Suite, list[RunPlan], dict[Tree, Path]],
) -> None:
    logs = honest({}, {})
    for label in ("base", "head 1", "head 2"):
        logs[f"{label}/pytest"] = pytest_log("N", {}, collected=None, finished=False)
    with pytest.raises(SuiteError, match="pytest never collected the suite"):
        grade(setup, logs)


def test_a_run_over_budget_times_out_what_it_did_not_finish(
    setup: tuple[Suite, list[RunPlan], dict[Tree, Path]],
) -> None:
    logs = honest({}, {"test_t.py::test_a": "passed", "test_t.py::test_b": "passed"})
    for label in ("head 1", "head 2"):
        logs[f"{label}/pytest"] = pytest_log(
            "N", {}, collected=ALL, open_test="test_t.py::test_a", finished=False
        )
    outcome = grade(setup, logs, runs=("head 1/pytest", "head 2/pytest"), timed_out=True)
    g = outcome.grade
    assert g is not None
    assert g.timed_out == tuple(ALL)
    assert {o.kind for _, o in g.failures} == {"timeout"}
    assert "head 1 (pytest): used up its time budget of 30s" in [n.hidden for n in outcome.notes]


def test_a_module_that_stops_importing_fails_its_tests_with_the_reason(
    setup: tuple[Suite, list[RunPlan], dict[Tree, Path]],
) -> None:
    logs = honest({"test_t.py::test_a": "passed"}, {})
    for label in ("head 1", "head 2"):
        logs[f"{label}/pytest"] = pytest_log(
            "N", {}, collected=[], errors=({"path": "test_t.py", "missing_module": None},)
        )
    outcome = grade(setup, logs)
    g = outcome.grade
    assert g is not None
    assert g.regressions == ("test_t.py::test_a",)
    assert {o.message for _, o in g.failures if _.startswith("test_t")} == {
        "the module failed to import: E boom"
    }
    assert any("1 test module did not import" in n.hidden for n in outcome.notes)


@pytest.mark.parametrize(
    ("enabled", "suites", "expected"),
    [
        # Off wins over everything, even suites that could not be read.
        (False, Suites(hidden=Path("h"), error="cannot read"), ("skipped", "disabled by policy")),
        # Unreadable suites are an error (neutral), never a skip and never a pass.
        (True, Suites(hidden=Path("h"), error="cannot read"), ("error", "cannot read")),
        (True, Suites(error="cannot read"), ("error", "cannot read")),
        (True, Suites(), ("skipped", "no hidden or held-out suites in the test store")),
    ],
)
def test_a_layer_with_nothing_to_run_says_why(
    enabled: bool, suites: Suites, expected: tuple[str, str], tmp_path: Path
) -> None:
    # start_behaviour answers before it touches the workspace or the sandbox (neither exists here).
    nowhere = tmp_path / "none"
    workspace = Workspace(
        base_dir=nowhere, head_dir=nowhere, base_sha="0" * 40, head_sha="1" * 40, changed=()
    )
    policy = Policy(behaviour=Behaviour(enabled=enabled))
    ctx = LayerContext(workspace=workspace, policy=policy, runner=NoRunner(), image="no-image")
    with ExitStack() as keep:
        result, pending = start_behaviour(ctx, suites, keep)
    assert (result.status, result.detail) == expected
    assert pending is None
    assert nothing_to_run(Behaviour(), Suites(held_out=Path("o"))) is None


def tier_view(label: str, passed: bool) -> RunView:
    test_id = "test_t.py::test_b"
    outcome = TestOutcome("passed") if passed else TestOutcome("failed", "m")
    return RunView(label, {test_id: outcome}, frozenset({test_id}))


@pytest.mark.parametrize(
    ("base_again", "excused"),
    [
        (False, False),  # steady on base: the head's flakiness is the change's, and counts as failed
        (True, True),  # base's own tier runs disagree too: the suite's flakiness, left out
        (None, False),  # base ran once: nothing decides for the change
    ],
)
def test_a_tier_test_flaky_on_head_is_excused_only_by_base_s_own_tier_runs(
    setup: tuple[Suite, list[RunPlan], dict[Tree, Path]], base_again: bool | None, excused: bool
) -> None:
    # Without the tier's own second base run, a tier test flaky on head always counted as failed
    # (click's pager tests, flaky in click's own suite, failed its unchanged head); and with a second
    # isolated base run, every tier test flaky on head was excused, because its isolated base outcome
    # (failed) disagreed with its tier outcome (passed).
    suite, plans, trees = setup
    staging = Staging(suite=suite, image="i", harness=trees["base"], staged=suite.root, work=trees["base"],
                      policy=POLICY, messages=True)  # fmt: skip
    again = [plan_one(staging, "pytest", "base 2", "base", trees["base"])]
    logs = honest({"test_t.py::test_a": "passed", "test_t.py::test_b": "failed"},
                  {"test_t.py::test_a": "passed", "test_t.py::test_b": "failed"})  # fmt: skip
    # An isolated test flaky on head sent base once more (steady there): test_a.
    logs["head 2/pytest"] = pytest_log("N", {"test_t.py::test_a": "failed", "test_t.py::test_b": "failed"},
                                       collected=ALL)  # fmt: skip
    logs["base 2/pytest"] = logs["base/pytest"]
    results = {}
    for plan in [*plans, *again]:
        data = logs[f"{plan.label}/{plan.part}"]
        assert data is not None
        data = data.replace(b'"nonce": "N"', json.dumps({"nonce": plan.nonce})[1:-1].encode())
        results[plan] = RunResult(0, b"", b"", 1.5, files={plan.report: data})
    tier = TierRuns(
        ids=frozenset({"test_t.py::test_b"}),
        base=tier_view("base (in-process tier)", True),
        heads=(tier_view("head 1 (in-process tier)", True), tier_view("head 2 (in-process tier)", False)),
        again=() if base_again is None else (tier_view("base 2 (in-process tier)", not base_again),),
    )
    g = grade_runs(suite, [*plans, *again], results, trees, POLICY, tier=tier).grade
    assert g is not None
    assert "test_t.py::test_b" in g.flaky
    assert ("test_t.py::test_b" in g.excused) is excused
    assert ("test_t.py::test_b" in {i for i, _ in g.failures}) is not excused
