"""One job, in process: JobRun against the fake GitHub, a real SQLite store and a stub pipeline.

Each trigger goes to its own module (bot/service/job.py): the gate posts a
verdict, withdraw ranks without a check run, explain and help answer with a
comment, a job cancelled before it ran ends cancelled. No server process and
no Docker: the pipeline is tests.bot.pipelines:findings_gate, loaded the way
``--pipeline`` loads it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from bot.github.app import GitHubApp
from bot.github.events import EXPLAIN, HELP, WITHDRAWN_CLOSED, CancelRequest, GateRequest
from bot.service.attempt import Services, Watch, load_pipeline
from bot.service.commenting import ACCEPTED
from bot.service.job import JobRun
from bot.settings import Settings
from bot.store import Store
from bot.store.leases import JobView
from bot.store.tables import CANCELLED, DONE
from tests.bot.harness import INSTALLATION, Pull, in_process_settings, make_pull
from tests.fakes.github_server import FakeGitHub
from tests.fakes.runners import NoRunner

WORKER = "test-worker"


class Hub:
    """A worker's share of the service without its queue: record a job, then run one attempt of it."""

    def __init__(self, settings: Settings, store: Store) -> None:
        self.settings, self.store = settings, store
        self.app = GitHubApp(settings)
        self.pipelines = ThreadPoolExecutor(1, thread_name_prefix="test-pipeline")
        self.services = Services(
            settings=settings,
            store=store,
            pipeline=load_pipeline("tests.bot.pipelines:findings_gate"),
            runner=lambda: NoRunner("the stub pipeline"),
            judge=None,
            worker=WORKER,
            pipelines=self.pipelines,
        )
        self.deliveries = 0

    def record(
        self, trigger: str, pull: Pull, *, head_sha: str | None = None, comment_id: int | None = None
    ) -> int:
        """Record a delivery asking for one job of ``trigger`` on ``pull``; return the job's id."""
        self.deliveries += 1
        request = GateRequest(
            INSTALLATION,
            pull.repository,
            pull.head_sha if head_sha is None else head_sha,
            trigger,
            pull.number,
            # As the webhook asks for every job but a push's gate: a job of its own each time.
            rerun=trigger != "pull_request.opened",
            comment_id=comment_id,
        )
        recorded = self.store.deliveries.record(f"d{self.deliveries}", "test", trigger, [request])
        [job_id] = recorded.job_ids
        return job_id

    def run(self, job_id: int) -> JobView:
        """Claim the job and run one attempt of it to the end; return the job as the store has it then."""
        job = self.store.leases.claim(job_id, WORKER, self.settings.lease_s)
        assert job is not None

        async def attempt() -> None:
            await JobRun(self.services, self.app.installation(job.installation_id), job, Watch()).run()

        asyncio.run(attempt())
        after = self.store.leases.job(job_id)
        assert after is not None
        return after


@pytest.fixture
def hub(github: FakeGitHub, app_key: tuple[str, bytes], tmp_path: Path) -> Iterator[Hub]:
    settings = in_process_settings(github, app_key[0], tmp_path)
    store = Store(settings.database_url)
    store.migrate()
    hub = Hub(settings, store)
    yield hub
    hub.pipelines.shutdown()
    store.close()


def counted(tmp_path: Path) -> Path:
    """The file the stub pipeline appends a line to per run (its ``count`` scenario)."""
    return tmp_path / "pipeline-runs"


def runs_of_pipeline(tmp_path: Path) -> int:
    path = counted(tmp_path)
    return len(path.read_text().splitlines()) if path.exists() else 0


def test_a_gate_job_runs_the_pipeline_and_completes_the_check_run(
    hub: Hub, github: FakeGitHub, tmp_path: Path
) -> None:
    pull = make_pull(github, tmp_path, "gated", scenario={"findings": 2, "count": str(counted(tmp_path))})
    job = hub.run(hub.record("pull_request.opened", pull))
    [run] = pull.runs()
    assert run["status"] == "completed"
    assert run["conclusion"] == "failure"
    assert run["head_sha"] == pull.head_sha
    assert "shape failed" in run["output"]["title"]
    assert (job.state, job.conclusion, job.check_run_id) == (DONE, "failure", run["id"])
    assert runs_of_pipeline(tmp_path) == 1
    latest = hub.store.runs.latest(pull.repository, pull.number)
    assert latest is not None and latest[1] == run["id"]
    assert github.problems == []


def test_a_withdrawn_pr_is_ranked_without_a_check_run_or_a_gate(
    hub: Hub, github: FakeGitHub, tmp_path: Path
) -> None:
    pull = make_pull(github, tmp_path, "withdrawn", scenario={"count": str(counted(tmp_path))})
    job = hub.run(hub.record(WITHDRAWN_CLOSED, pull))
    assert (job.state, job.detail) == (DONE, "not a candidate for an issue: nothing to rank")
    assert pull.runs() == []
    assert github.comments_on(pull.repository, pull.number) == []
    assert runs_of_pipeline(tmp_path) == 0


def test_explain_answers_with_the_latest_report_and_no_check_run(
    hub: Hub, github: FakeGitHub, tmp_path: Path
) -> None:
    pull = make_pull(github, tmp_path, "explained", scenario={"findings": 1, "count": str(counted(tmp_path))})
    hub.run(hub.record("pull_request.opened", pull))
    [gated] = pull.runs()
    job = hub.run(hub.record(EXPLAIN, pull, head_sha="", comment_id=501))
    assert (job.state, job.detail, job.check_run_id) == (DONE, "explained the latest run", None)
    [comment] = github.comments_on(pull.repository, pull.number)
    assert f"{pull.repository}/runs/{gated['id']})" in comment["body"]
    assert "1 new findings" in comment["body"]
    assert pull.runs() == [gated]  # no second check run
    assert (pull.repository, 501, ACCEPTED) in github.reactions  # the command was taken
    assert runs_of_pipeline(tmp_path) == 1


def test_help_lists_the_commands_in_a_comment(hub: Hub, github: FakeGitHub, tmp_path: Path) -> None:
    pull = make_pull(github, tmp_path, "helped", scenario={"count": str(counted(tmp_path))})
    job = hub.run(hub.record(HELP, pull, head_sha="", comment_id=502))
    assert (job.state, job.detail) == (DONE, "listed the commands")
    [comment] = github.comments_on(pull.repository, pull.number)
    assert "/patchgate rerun" in comment["body"]
    assert (pull.repository, 502, ACCEPTED) in github.reactions
    assert pull.runs() == []
    assert runs_of_pipeline(tmp_path) == 0


def test_a_job_cancelled_before_it_ran_ends_cancelled_without_a_gate(
    hub: Hub, github: FakeGitHub, tmp_path: Path
) -> None:
    pull = make_pull(github, tmp_path, "cancelled", scenario={"count": str(counted(tmp_path))})
    job_id = hub.record("pull_request.opened", pull)
    hub.store.deliveries.record(
        "closing", "pull_request", "closed", [CancelRequest(pull.repository, 1, "closed")]
    )
    job = hub.run(job_id)
    assert (job.state, job.conclusion, job.detail) == (CANCELLED, None, "closed")
    assert pull.runs() == []
    assert runs_of_pipeline(tmp_path) == 0
