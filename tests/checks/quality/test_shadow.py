from __future__ import annotations

import json

import pytest

from checks.quality import calibration_table, false_acceptance_label, run_shadow, should_shadow
from checks.quality.inputs import Task
from checks.quality.shadow import ShadowVerdict
from checks.workspace import Workspace
from tests.checks.quality.conftest import HIDDEN_MARKER, MODEL, PR_TEST_MARKER, policy, settings
from tests.fakes.openai_server import Reply, serve

TASK = Task(title="Reject negative prices", body="Cart.add must refuse a negative price.")


def task_reply(word: str) -> Reply:
    return Reply(content=json.dumps({"verdict": word, "reason": "scripted"}))


def test_sampling_is_deterministic_by_key() -> None:
    keys = [f"delivery-{i}" for i in range(2000)]
    picked = [k for k in keys if should_shadow(k, 0.25)]
    assert picked == [k for k in keys if should_shadow(k, 0.25)]
    assert 400 < len(picked) < 600
    assert not any(should_shadow(k, 0.0) for k in keys)
    assert all(should_shadow(k, 1.0) for k in keys)
    # A larger rate keeps every key a smaller rate picked.
    assert set(picked) <= {k for k in keys if should_shadow(k, 0.5)}


@pytest.mark.parametrize(("word", "passed"), [("PASS", True), ("FAIL", False)])
def test_shadow_asks_the_task_question(change: Workspace, word: str, passed: bool) -> None:
    with serve(lambda request: task_reply(word)) as server:
        shadow = run_shadow(change, policy(rubrics=["default", "security"]), TASK, settings(server))
    assert shadow.judge_passed is passed
    assert (shadow.model, shadow.rubric) == (MODEL, "default+security")
    assert shadow.prompt_tokens == 100
    (request,) = server.requests
    assert request["response_format"]["json_schema"]["name"] == "task_verdict"
    prompt = server.prompts[0]
    assert "does this patch accomplish the task" in prompt
    assert "Reject negative prices" in prompt
    for secret in (HIDDEN_MARKER, PR_TEST_MARKER, MODEL):
        assert secret not in prompt
    record = shadow.record(execution_passed=False)
    assert record is not None and (record.execution_passed, record.judge_passed) == (False, passed)


@pytest.mark.parametrize(
    ("reply", "detail"),
    [
        (Reply.error(500), "unavailable: server error (HTTP 500)"),
        (Reply(content="late", delay_s=3), "unavailable: timeout after 0.5s"),
        (Reply(content="no idea"), "judge output unusable after one repair: not JSON"),
        (Reply(content=None, refusal="no"), "judge output unusable after one repair: refusal"),
    ],
)
def test_shadow_outage_gives_no_verdict_and_no_record(change: Workspace, reply: Reply, detail: str) -> None:
    with serve(lambda request: reply) as server:
        shadow = run_shadow(change, policy(), TASK, settings(server, timeout_s=0.5))
    assert shadow.judge_passed is None
    assert shadow.detail.startswith(detail), shadow.detail
    assert shadow.record(execution_passed=False) is None


@pytest.mark.slow
def test_calibration_exposes_a_judge_that_says_pass_to_everything(change: Workspace) -> None:
    """Thirty PRs that failed behaviour, each shadow-judged by a rubber stamp."""
    with serve(lambda request: task_reply("PASS")) as server:
        shadows = [run_shadow(change, policy(), TASK, settings(server)) for _ in range(30)]
    found = [s.record(execution_passed=False) for s in shadows]
    records = [r for r in found if r is not None]
    assert len(records) == 30
    (row,) = calibration_table(records, min_n=30, resamples=200)
    assert row.false_acceptance.value == 1.0
    assert row.calibrated
    label = false_acceptance_label(records, MODEL, 30)
    assert label.startswith("task-level judge vs execution: false acceptance 100% (95% CI 89-100%")


def test_record_pairs_the_verdicts() -> None:
    shadow = ShadowVerdict(True, "m", "default")
    assert shadow.record(True) is not None
    assert ShadowVerdict(None, "m", "default").record(True) is None
