"""The "Run judge anyway" button: the judge really runs, through the store's verdict cache."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bot.service.judging import REQUESTED, judge_anyway
from bot.store import Store
from checks.pipeline import Given, PipelineInputs
from checks.policy import Policy
from checks.quality.inputs import JudgeSettings, Task
from checks.report import BehaviourResult, QualityResult, Report, ShapeResult
from checks.workspace import Workspace, from_git
from tests.conftest import GitRepo
from tests.fakes.openai_server import Reply, serve
from tests.fakes.runners import NoRunner


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    repo = GitRepo(tmp_path / "repo")
    repo.commit("base", {"app.py": "def add(a, b):\n    return a - b\n"})
    repo.branch("fix")
    repo.commit("fix", {"app.py": "def add(a, b):\n    return a + b\n"})
    return from_git(repo.path, "main", "fix", tmp_path / "ws")


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = Store(f"sqlite:///{tmp_path / 'store.db'}")
    s.migrate()
    return s


def failed_report(ws: Workspace) -> Report:
    return Report(
        conclusion="failure",
        reasons=["hidden 1/3"],
        base_sha=ws.base_sha,
        head_sha=ws.head_sha,
        shape=ShapeResult(status="passed"),
        behaviour=BehaviourResult(status="failed", detail="hidden 1/3"),
        quality=QualityResult(status="skipped", detail="runs only when behaviour passes"),
    )


def inputs(ws: Workspace, judge: JudgeSettings | None) -> PipelineInputs:
    return PipelineInputs(
        workspace=ws,
        policy=Policy(),
        runner=NoRunner("the judge"),
        given=Given(task=Task(title="Fix add"), judge=judge),
        run_key="o/r#1@x",
    )


def always_pass(request: dict[str, Any]) -> Reply:
    return Reply(
        content=json.dumps(
            {
                "verdict": "PASS",
                "reason": "adds",
                "evidence": [{"path": "app.py", "start_line": 2, "end_line": 2, "quote": "return a + b"}],
            }
        )
    )


def test_without_a_judge_model_the_report_says_so(workspace: Workspace, store: Store) -> None:
    report = judge_anyway(inputs(workspace, None), failed_report(workspace), store)
    assert report.quality.status == "skipped"
    assert report.quality.detail == "judge requested, but no judge model is configured"
    assert report.conclusion == "failure"


@pytest.mark.slow
def test_the_judge_runs_although_behaviour_failed_and_cannot_rescue_it(
    workspace: Workspace, store: Store
) -> None:
    with serve(always_pass) as server:
        judge = JudgeSettings(
            api_base=server.url, api_key="sk-test", timeout_s=10, num_retries=0, cost_per_token=(0.0, 0.0)
        )
        report = judge_anyway(inputs(workspace, judge), failed_report(workspace), store)
        asked = server.calls
        assert asked > 0
        again = judge_anyway(inputs(workspace, judge), failed_report(workspace), store)
        assert server.calls == asked  # the verdicts came from the store's cache
    assert report.quality.status == "passed", report.quality.detail
    assert report.quality.detail.startswith(REQUESTED)
    assert all(c.verdict == "pass" for c in report.quality.criteria)
    assert report.conclusion == "failure"  # execution decides; the judge only adds its opinion
    assert again.quality.criteria == report.quality.criteria


def test_a_judge_that_already_ran_is_not_asked_again(workspace: Workspace, store: Store) -> None:
    done = failed_report(workspace).model_copy(update={"quality": QualityResult(status="passed")})
    # Nothing listens on port 1: a judge call would make quality "unavailable".
    assert judge_anyway(inputs(workspace, JudgeSettings(api_base="http://127.0.0.1:1")), done, store) == done
