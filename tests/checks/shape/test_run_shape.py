"""run_shape: gates run concurrently, findings judged by policy, a broken tool is an error, never a failure.

Most cases use a runner that speaks the sandbox's Runner protocol and answers
from the probe's plan (no container is needed to show how results are
judged); the last ones run the real sandbox.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from checks.policy import Gates, Policy
from checks.policyfile import load_policy
from checks.runner import LayerContext
from checks.shape import GATES, run_shape
from checks.shape.config import STAGE_MOUNT
from checks.workspace import MAX_CHANGED_FILES, Workspace, from_git
from sandbox.docker import DockerSandbox
from sandbox.errors import EngineUnavailable
from sandbox.spec import RunResult, RunSpec
from tests.checks.shape.conftest import TOOL_GATES, fast_branch, make_ws
from tests.conftest import GitRepo
from tests.fakes.runners import NoRunner

Answer = Callable[[str, dict[str, Any]], RunResult]


class PlanRunner:
    """A Runner that answers each sandbox run from the probe plan it was given."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.specs: list[RunSpec] = []
        self.lock = threading.Lock()

    def run(self, spec: RunSpec) -> RunResult:
        with self.lock:
            self.specs.append(spec)
        stage = next(m.source for m in spec.mounts if m.target == STAGE_MOUNT)
        plan = json.loads((stage / "plan.json").read_text())
        tool = "loads" if plan["mode"] == "loads" else plan["steps"][0]["argv"][0]
        return self.answer(tool, plan)


def ok(stdout: object) -> RunResult:
    return RunResult(exit_code=0, stdout=json.dumps(stdout).encode(), stderr=b"", wall_s=1.5)


def batches(plan: dict[str, Any], stdout: str, exit_code: int = 0) -> RunResult:
    steps = {s["name"]: [{"exit_code": exit_code, "stdout": stdout, "stderr": ""}] for s in plan["steps"]}
    return ok({"steps": steps})


def clean(tool: str, plan: dict[str, Any]) -> RunResult:
    """Every tool finds nothing."""
    if tool == "loads":
        return ok({"records": [], "not_examined": []})
    # semgrep lists what it scanned; a changed file missing there was dropped (not examined).
    scanned = plan["steps"][0].get("files", []) if tool == "semgrep" else []
    empty = {
        "ruff": "[]",
        "mypy": "",
        "bandit": '{"results": [], "errors": []}',
        "semgrep": json.dumps({"results": [], "paths": {"scanned": scanned}}),
    }
    return batches(plan, empty[tool])


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return make_ws(tmp_path, {"pkg/__init__.py": "", "pkg/a.py": "A = 1\n"}, {"pkg/a.py": "A = 2\n"})


def ctx(ws: Workspace, runner: object, policy: Policy | None = None) -> LayerContext:
    return LayerContext(ws, policy or Policy(), runner, "patchgate-test-image")  # type: ignore[arg-type]


def test_a_clean_change_passes_and_each_tool_reports_its_time(ws: Workspace) -> None:
    runner = PlanRunner(clean)
    result = run_shape(ctx(ws, runner), gates=TOOL_GATES)
    assert result.status == "passed"
    assert [t.tool for t in result.tools] == list(TOOL_GATES)
    assert all(t.status == "ok" and t.seconds == 1.5 for t in result.tools)
    assert len(runner.specs) == 5
    spec = runner.specs[0]
    assert {m.target for m in spec.mounts} == {"/src/base", "/src/head", STAGE_MOUNT}
    assert spec.copy_in == ()
    assert spec.env["SEMGREP_ENABLE_VERSION_CHECK"] == "0"


def test_new_findings_over_the_threshold_fail_the_layer(ws: Workspace) -> None:
    def answer(tool: str, plan: dict[str, Any]) -> RunResult:
        if tool != "ruff":
            return clean(tool, plan)
        head = json.dumps([{"code": "F821", "filename": "/src/head/pkg/a.py", "location": {"row": 1},
                            "message": "Undefined name `x`"}])  # fmt: skip
        steps = {"head": [{"exit_code": 0, "stdout": head}], "base": [{"exit_code": 0, "stdout": "[]"}]}
        return ok({"steps": steps})

    result = run_shape(ctx(ws, PlanRunner(answer)), gates=TOOL_GATES)
    assert result.status == "failed"
    assert [(f.tool, f.rule, f.introduced) for f in result.findings] == [("ruff", "F821", True)]
    ruff = next(t for t in result.tools if t.tool == "ruff")
    assert ruff.detail.endswith("1 new ruff finding, 0 allowed")
    policy = load_policy("gates: {ruff: {max_new_findings: 1}}")
    assert run_shape(ctx(ws, PlanRunner(answer), policy), gates=TOOL_GATES).status == "passed"


@pytest.mark.parametrize(
    ("result", "detail"),
    [
        (RunResult(exit_code=1, stdout=b"", stderr=b"Traceback: boom", wall_s=1), "failed (exit code 1)"),
        (RunResult(exit_code=None, stdout=b"", stderr=b"", wall_s=300, timed_out=True), "did not finish"),
        (RunResult(exit_code=137, stdout=b"", stderr=b"", wall_s=3, oom_killed=True), "out of memory"),
        (
            RunResult(exit_code=0, stdout=b"x" * 10, stderr=b"", wall_s=1, output_limit_exceeded=True),
            "printed more",
        ),
        (RunResult(exit_code=0, stdout=b"<html>not json", stderr=b"", wall_s=1), "not a"),
        (RunResult(exit_code=0, stdout=b'{"steps": {"head": [{"exit_code": 2}]}}', stderr=b"", wall_s=1), ""),
    ],
)
def test_a_tool_that_breaks_is_an_error_not_a_failure(ws: Workspace, result: RunResult, detail: str) -> None:
    shape = run_shape(ctx(ws, PlanRunner(lambda tool, plan: result)), gates=TOOL_GATES)
    assert shape.status == "error"
    assert shape.findings == []
    assert all(t.status == "error" and detail in t.detail for t in shape.tools), shape.tools


def test_a_sandbox_that_is_down_is_an_error(ws: Workspace) -> None:
    def down(tool: str, plan: dict[str, Any]) -> RunResult:
        raise EngineUnavailable("connection refused")

    shape = run_shape(ctx(ws, PlanRunner(down)), gates=("ruff",))
    assert shape.status == "error"
    assert "no Docker engine" in shape.tools[0].detail


def test_a_failure_beats_an_error(ws: Workspace) -> None:
    def answer(tool: str, plan: dict[str, Any]) -> RunResult:
        if tool == "loads":
            record = {
                "side": "head",
                "path": "pkg/a.py",
                "kind": "syntax",
                "line": 1,
                "message": "SyntaxError",
            }
            return ok({"records": [record]})
        return RunResult(exit_code=1, stdout=b"", stderr=b"crash", wall_s=1)

    shape = run_shape(ctx(ws, PlanRunner(answer)), gates=TOOL_GATES)
    assert shape.status == "failed"
    assert [t.status for t in shape.tools] == ["ok", "error", "error", "error", "error"]


def test_an_empty_diff_runs_nothing(tmp_path: Path) -> None:
    ws = make_ws(tmp_path, {"a.py": "A = 1\n"}, {})
    assert ws.changed == ()
    shape = run_shape(ctx(ws, NoRunner()), gates=TOOL_GATES)
    assert shape.status == "passed"
    assert {(t.status, t.detail) for t in shape.tools} == {("skipped", "no changed Python files")}


def test_a_binary_only_diff_runs_nothing(tmp_path: Path) -> None:
    ws = make_ws(tmp_path, {"a.py": "A = 1\n"}, {"logo.png": b"\x89PNG\x00\x01", "data.bin": b"\x00" * 64})
    assert {f.binary for f in ws.changed} == {True}
    shape = run_shape(ctx(ws, NoRunner()), gates=TOOL_GATES)
    assert shape.status == "passed"
    assert {t.status for t in shape.tools} == {"skipped"}


def test_gates_the_policy_turns_off_are_skipped(ws: Workspace) -> None:
    policy = load_policy("gates: {mypy: {enabled: false}, semgrep: {enabled: false}}")
    runner = PlanRunner(clean)
    shape = run_shape(ctx(ws, runner, policy), gates=TOOL_GATES)
    skipped = {t.tool: t.detail for t in shape.tools if t.status == "skipped"}
    assert skipped == {"mypy": "disabled by policy", "semgrep": "disabled by policy"}
    assert len(runner.specs) == 3
    off = load_policy("gates: {" + ", ".join(f"{g}: {{enabled: false}}" for g in TOOL_GATES) + "}")
    assert run_shape(ctx(ws, NoRunner(), off), gates=TOOL_GATES).status == "skipped"


def test_all_gates_by_default_including_hygiene(ws: Workspace) -> None:
    shape = run_shape(ctx(ws, PlanRunner(clean)))
    assert [t.tool for t in shape.tools][:6] == ["loads", "ruff", "mypy", "bandit", "semgrep", "hygiene"]
    assert shape.tools[5].status in ("ok", "skipped")


def test_the_registry_lists_every_gate_the_policy_names_in_report_order() -> None:
    # Policy (`gates.<name>`) and the registry name the same gates; a gate in one only is a bug.
    assert list(GATES) == list(Gates.model_fields)
    assert all(gate.name == name for name, gate in GATES.items())


def test_an_unknown_gate_name_is_a_programming_error(ws: Workspace) -> None:
    with pytest.raises(ValueError, match="pylint"):
        run_shape(ctx(ws, NoRunner()), gates=("ruff", "pylint"))


def test_a_crashing_gate_does_not_take_the_others_down(ws: Workspace) -> None:
    def answer(tool: str, plan: dict[str, Any]) -> RunResult:
        if tool == "bandit":
            raise RuntimeError("bug in the runner")
        return clean(tool, plan)

    shape = run_shape(ctx(ws, PlanRunner(answer)), gates=TOOL_GATES)
    assert shape.status == "error"
    bandit = next(t for t in shape.tools if t.tool == "bandit")
    assert bandit.detail == "internal error: RuntimeError: bug in the runner"
    assert sum(t.status == "ok" for t in shape.tools) == 4
    # Not infrastructure: the change may have provoked it, so never neutral (checks/decide.py).
    assert bandit.internal and shape.internal


@pytest.mark.docker
def test_tools_that_crash_for_real_are_errors(
    tmp_path: Path, shape_sandbox: DockerSandbox, shape_image: str
) -> None:
    # The base configuration (trusted) is broken: ruff cannot parse it, mypy cannot load
    # the plugin it names. That is the gate's problem, not the PR's.
    base: dict[str, str | bytes | None] = {
        "pyproject.toml": '[tool.ruff]\nline-length = "long"\n\n[tool.mypy]\nplugins = ["no_such_plugin"]\n',
        "pkg/__init__.py": "",
        "pkg/a.py": "A = 1\n",
    }
    ws = make_ws(tmp_path, base, {"pkg/a.py": "import os\nA = undefined\n"})
    shape = run_shape(LayerContext(ws, Policy(), shape_sandbox, shape_image), gates=("ruff", "mypy"))
    assert shape.status == "error"
    assert [t.status for t in shape.tools] == ["error", "error"]
    assert "ruff failed (exit code 2)" in shape.tools[0].detail
    assert "no_such_plugin" in shape.tools[1].detail
    assert shape.findings == []


@pytest.mark.docker
@pytest.mark.slow
def test_a_diff_of_as_many_files_as_examined_finishes(
    tmp_path: Path, shape_sandbox: DockerSandbox, shape_image: str
) -> None:
    # Long names push the file lists past one command line (a change past the cap is refused).
    stem = "module_with_a_rather_long_descriptive_name_to_fill_command_lines" * 2
    files = {f"gen/{stem}_{i:05}.py": b"X%d = %d\n" % (i, i) for i in range(MAX_CHANGED_FILES)}
    repo = GitRepo(tmp_path / "repo")
    repo.commit("base", {"README": "x"})
    fast_branch(repo, "pr", files)
    ws = from_git(repo.path, "main", "pr", tmp_path / "ws")
    assert len(ws.changed) == MAX_CHANGED_FILES
    shape = run_shape(LayerContext(ws, Policy(), shape_sandbox, shape_image), gates=("loads", "ruff", "mypy"))
    assert [t.status for t in shape.tools] == ["ok", "ok", "ok"], shape.tools
    assert shape.status == "passed"
    assert f"{MAX_CHANGED_FILES} file(s) compiled" in shape.tools[0].detail
