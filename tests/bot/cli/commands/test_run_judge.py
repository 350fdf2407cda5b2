"""`patchgate run` with a judge that fails: stdout is the report and nothing else, in every format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.bot.cli.commands.test_run import patchgate
from tests.conftest import GitRepo
from tests.fakes.openai_server import Reply, serve

FAILURES = {
    "timeout": (Reply(content="late", delay_s=5), "timeout after 1s"),
    "http-500": (Reply.error(500), "server error (HTTP 500)"),
    "non-json-200": (Reply(raw=b"<html>gateway</html>"), "answered HTTP 200 with a body that is not JSON"),
    "hanging-past-the-budget": (Reply(content="late", delay_s=30), "judge time budget (2s) is spent"),
}


@pytest.mark.docker
@pytest.mark.parametrize("fmt", ["json", "text", "markdown"])
@pytest.mark.parametrize("failure", list(FAILURES))
def test_a_failing_judge_leaves_stdout_to_the_report(
    passing_change: tuple[GitRepo, Path, Path], failure: str, fmt: str
) -> None:
    repo, hidden, policy = passing_change
    reply, reason = FAILURES[failure]
    hanging = failure == "hanging-past-the-budget"
    # Only the hanging judge meets the budget: the others have a minute, however busy the machine.
    timeout, budget = ("30", "2") if hanging else ("1", "60")
    with serve(lambda request: reply) as server:
        done = patchgate(
            "run", "--repo", repo.path, "--base", "main", "--head", "agent/sub", "--hidden", hidden,
            "--policy", policy, "--format", fmt,
            env={
                "PATCHGATE_JUDGE_API_BASE": server.url,
                "PATCHGATE_JUDGE_API_KEY": "sk-never-printed",
                "PATCHGATE_JUDGE_TIMEOUT_S": timeout,
                "PATCHGATE_JUDGE_NUM_RETRIES": "0",
                "PATCHGATE_JUDGE_BUDGET_S": budget,
            },
        )  # fmt: skip
        assert server.calls >= 1
    # A judge outage is never the PR's failure: execution passed, so the run succeeds.
    assert done.returncode == 0, done.stderr
    assert "Give Feedback" not in done.stdout + done.stderr
    assert "sk-never-printed" not in done.stdout + done.stderr
    if fmt == "json":
        report = json.loads(done.stdout)
        assert report["conclusion"] == "success"
        assert report["quality"]["status"] == "unavailable"
        assert reason in report["quality"]["detail"]
    elif fmt == "markdown":
        assert done.stdout.startswith("### ✅ success"), done.stdout[:200]
        assert reason in done.stdout.replace("\\", "")
    else:  # the text table wraps the reason across cells: the first line is enough here
        assert done.stdout.startswith("✅ success"), done.stdout[:200]
