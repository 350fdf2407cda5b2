"""`patchgate run` reproduces a service verdict's quality layer: task, author, verdict cache, calibration."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bot.github.events import GateRequest
from bot.store import JudgeRow, Store
from tests.bot.cli.commands.test_run import patchgate
from tests.conftest import GitRepo
from tests.fakes.openai_server import Reply, serve

NOT_APPLICABLE = Reply.json({"verdict": "N/A", "reason": "nothing to say", "evidence": []})


def run_json(repo: GitRepo, hidden: Path, policy: Path, url: str, *args: str) -> dict[str, Any]:
    done = patchgate(
        "run", "--repo", repo.path, "--base", "main", "--head", "agent/sub", "--hidden", hidden,
        "--policy", policy, "--format", "json", *args,
        env={
            "PATCHGATE_JUDGE_API_BASE": url,
            "PATCHGATE_JUDGE_API_KEY": "sk-test",
            "PATCHGATE_JUDGE_NUM_RETRIES": "0",
        },
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


@pytest.mark.docker
def test_task_author_cache_and_calibration_as_the_service_had_them(
    passing_change: tuple[GitRepo, Path, Path], tmp_path: Path
) -> None:
    repo, hidden, policy = passing_change
    policy.write_text(policy.read_text() + "  calibration_min_n: 2\n")
    database = f"sqlite:///{tmp_path / 'service.db'}"
    # The service's store holds three shadow verdicts on failing PRs: the judge passed one.
    store = Store(database)
    store.migrate()
    [job] = store.deliveries.record(
        "d", "pull_request", "opened", [GateRequest(1, "o/r", "a" * 40, "t", 1)]
    ).job_ids
    for passed in (True, False, False):
        row = JudgeRow(
            model="openai/gpt-4o-mini",
            rubric="default",
            execution_passed=False,
            judge_passed=passed,
            shadow=True,
        )
        store.judge.add(job, "o/r", "a" * 40, row)
    store.close()
    issue = tmp_path / "issue.md"
    issue.write_text("#12: subtraction\n\nISSUE-TEXT-MARKER: calc needs sub(a, b).\n")
    task = ("--title", "Add sub", "--body", "BODY-MARKER closes #12", "--issue-file", str(issue),
            "--author", "chatgpt-codex-connector[bot]", "--database", database)  # fmt: skip

    with serve(lambda request: NOT_APPLICABLE) as judge:
        first = run_json(repo, hidden, policy, judge.url, *task)
        prompts = judge.prompts
    quality = first["quality"]
    assert quality["status"] == "passed", quality["detail"]
    assert prompts
    assert all("BODY-MARKER" in p and "ISSUE-TEXT-MARKER" in p and "Add sub" in p for p in prompts)
    assert "chatgpt-codex-connector" not in "".join(prompts)  # who wrote it never reaches the judge
    assert quality["calibration"].startswith("task-level judge vs execution: false acceptance 33% (95% CI")
    assert quality["self_preference"] == (
        "self-preference possible: the judge and the change's author are both OpenAI "
        "(chatgpt-codex-connector[bot])"
    )

    # The same change again: the store's verdict cache answers, the judge is not asked.
    with serve(lambda request: Reply.error(500)) as down:
        second = run_json(repo, hidden, policy, down.url, *task)
        assert down.calls == 0
    assert second["quality"]["status"] == "passed"
    assert "verdicts from cache" in second["quality"]["detail"]
    assert second["quality"]["criteria"] == quality["criteria"]


@pytest.mark.docker
def test_co_authored_by_trailers_in_the_commits_count_as_authors(
    passing_change: tuple[GitRepo, Path, Path],
) -> None:
    repo, hidden, policy = passing_change
    repo.commit("Tidy\n\nCo-authored-by: Codex <codex@openai.com>\n", {"calc/__init__.py": "# calc\n"})
    with serve(lambda request: NOT_APPLICABLE) as judge:
        report = run_json(repo, hidden, policy, judge.url)
    assert "(Codex <codex@openai.com>)" in report["quality"]["self_preference"]


def test_unreadable_task_files_are_usage_errors(tmp_path: Path) -> None:
    done = patchgate("run", "--base", "main", "--head", "x", "--issue-file", tmp_path / "missing.md")
    assert done.returncode == 2
    assert "--issue-file" in done.stderr
