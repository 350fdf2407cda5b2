"""Fairness on the real queue: a busy repository cannot take every slot; a worker bounds its sandboxes."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path

import pytest

from bot.github.events import GateRequest
from bot.service.queue import JobQueue
from bot.service.worker import Worker
from bot.settings import Settings
from bot.store import Store
from sandbox.spec import RunResult, RunSpec
from tests.bot.harness import (
    INSTALLATION,
    Pull,
    Server,
    in_process_settings,
    jobs,
    make_pull,
    wait_for,
)
from tests.bot.pipelines import sandbox_gate
from tests.fakes.github_server import FakeGitHub


def same_repo_pulls(first: Pull, count: int, scenario: dict[str, object]) -> list[Pull]:
    """``count`` more PRs in ``first``'s repository, each on a branch of its own off the base."""
    pulls = []
    for number in range(first.number + 1, first.number + 1 + count):
        ref = f"agent/work-{number}"
        first.repo.branch(ref, first.base_sha)
        files: dict[str, str | bytes | None] = {
            "app.py": "def add(a, b):\n    return a + b\n",
            "patchgate-test.json": json.dumps(scenario),
            "n.txt": str(number),
        }
        sha = first.repo.commit(f"head {number}", files)
        pull = Pull(
            first.github, first.repository, first.repo, number, first.base_sha, sha, ref, first.repository
        )
        pull.publish()
        pulls.append(pull)
    return pulls


def test_a_busy_repository_cannot_starve_the_others(
    make_server: object, github: FakeGitHub, tmp_path: Path
) -> None:
    server: Server = make_server(  # type: ignore[operator]
        PATCHGATE_CONCURRENCY="3", PATCHGATE_MAX_JOBS_PER_REPOSITORY="1"
    )
    server.start()
    hold = tmp_path / "hold"
    busy = make_pull(github, tmp_path, "busy", scenario={"hold": str(hold)})
    pulls = [busy, *same_repo_pulls(busy, 3, {"hold": str(hold)})]
    for pull in pulls:
        assert server.post("pull_request", pull.payload("opened")).json()["status"] == "queued"
    quiet = make_pull(github, tmp_path, "quiet", scenario={"findings": 0})
    assert server.post("pull_request", quiet.payload("opened")).json()["status"] == "queued"
    # Three slots, four busy jobs queued first: the quiet repository still gets its run.
    wait_for(quiet.completed, 60, "the quiet repository's run while the busy one holds")
    most = 0
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:
        running = [j for j in jobs(server, busy.repository) if j["state"] == "running"]
        most = max(most, len(running))
        time.sleep(0.05)
    assert most == 1
    hold.touch()
    for pull in pulls:
        wait_for(pull.completed, 90, f"PR #{pull.number} once the busy repository's slot frees")
    # The check run is completed before the job's row is marked done: wait for the row too.
    wait_for(
        lambda: {j["state"] for j in jobs(server, busy.repository)} == {"done"},
        30,
        "every busy job's row to be marked done",
    )


class CountingRunner:
    """A sandbox that records how many of its runs overlap."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = 0
        self.most = 0
        self.runs = 0

    def run(self, spec: RunSpec) -> RunResult:
        with self.lock:
            self.now += 1
            self.runs += 1
            self.most = max(self.most, self.now)
        time.sleep(0.2)
        with self.lock:
            self.now -= 1
        return RunResult(exit_code=0, stdout=b"", stderr=b"", wall_s=0.2)


@pytest.mark.slow
def test_a_worker_never_runs_more_sandboxes_than_its_limit(
    github: FakeGitHub, app_key: tuple[str, bytes], tmp_path: Path
) -> None:
    settings = in_process_settings(
        github, app_key[0], tmp_path, concurrency=3, max_sandboxes=2, retry_backoff_s=0.05
    )
    pulls = [make_pull(github, tmp_path, f"boxed{i}") for i in range(3)]
    runner = CountingRunner()
    store = Store(settings.database_url)
    store.migrate()

    async def scenario() -> None:
        worker = Worker(
            settings,
            store,
            JobQueue("memory", settings.concurrency),
            pipeline=sandbox_gate,
            runner_factory=lambda: runner,
        )
        await worker.start()
        try:
            for i, pull in enumerate(pulls):
                request = GateRequest(INSTALLATION, pull.repository, pull.head_sha, "pull_request.opened", 1)
                [job_id] = store.deliveries.record(f"box-{i}", "pull_request", "opened", [request]).job_ids
                await worker.queue.kick(job_id)
            deadline = time.monotonic() + 60
            while not all(p.completed() for p in pulls):
                assert time.monotonic() < deadline, "the jobs did not complete"
                await asyncio.sleep(0.05)
        finally:
            await worker.stop()

    asyncio.run(scenario())
    store.close()
    assert runner.runs == 12
    # Three jobs of four parallel runs each: without the bound twelve would overlap.
    assert runner.most == 2


@pytest.mark.parametrize("limit", [0, -1])
def test_the_limits_are_positive(limit: int) -> None:
    with pytest.raises(ValueError, match="greater than or equal to 1"):
        Settings(max_sandboxes=limit)
    with pytest.raises(ValueError, match="greater than or equal to 1"):
        Settings(max_jobs_per_repository=limit)
