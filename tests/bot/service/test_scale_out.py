"""The scale-out topology as an operator deploys it, end to end.

`patchgate serve` without workers (it only records and enqueues), two
`patchgate worker` processes, PostgreSQL as the one store and Redis as the
broker (both from scripts/services.sh), the fake GitHub over real HTTP. One
worker is killed with SIGKILL in the middle of two jobs and replaced: every PR
still ends with exactly one completed check run with its right conclusion,
nothing is left running, no job ran twice to completion, and the processes
that stayed up logged nothing above INFO, then or while idle for longer than
a broker connection's socket timeout.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, text

from bot.service.queue import SOCKET_TIMEOUT_S
from tests.bot.harness import (
    ROOT,
    Pull,
    Server,
    another_pull,
    free_port,
    hold_file,
    make_pull,
    started,
    wait_for,
)
from tests.fakes.github_server import FakeGitHub

pytestmark = [pytest.mark.redis, pytest.mark.postgres, pytest.mark.server, pytest.mark.slow]


@dataclass
class WorkerProcess:
    """`patchgate worker` as a real process, logging JSON lines to its own file."""

    env: dict[str, str]
    log: Path
    proc: subprocess.Popen[bytes] | None = None

    def start(self) -> WorkerProcess:
        argv = [sys.executable, "-m", "bot.cli", "worker", "--pipeline", "tests.bot.pipelines:findings_gate"]
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(argv, cwd=ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT)
        wait_for(lambda: self._said("running"), 60, f"the worker to start (log: {self.log})")
        return self

    def _said(self, words: str) -> bool:
        if self.proc is not None and self.proc.poll() is not None:
            raise AssertionError(
                f"the worker exited with {self.proc.returncode}:\n{self.log.read_text()[-4000:]}"
            )
        return any(words in r.get("message", "") for r in self.records())

    def records(self) -> list[dict[str, Any]]:
        lines = self.log.read_text().splitlines() if self.log.exists() else []
        return [json.loads(line) for line in lines if line.startswith("{")]

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)


def loud(records: list[dict[str, Any]]) -> list[str]:
    """The records an operator would be paged or worried by: above INFO, or with a traceback."""
    return [
        f"{r.get('level')} {r.get('logger')}: {r.get('message')}"
        for r in records
        if r.get("level") not in ("DEBUG", "INFO") or "exc_info" in r
    ]


QUEUE_GAUGES = (
    "patchgate_queue_depth",
    "patchgate_queue_oldest_age_seconds",
    "patchgate_jobs_running",
    "patchgate_jobs_unfinished",
)


def metric(url: str, name: str) -> float:
    """Return the value of an unlabelled metric from a Prometheus text exposition."""
    for line in httpx.get(url, timeout=10).text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} is not exposed at {url}")


def server_records(server: Server) -> list[dict[str, Any]]:
    lines = server.log.read_text().splitlines()
    return [json.loads(line) for line in lines if line.startswith("{")]


def test_two_workers_one_killed_mid_job_every_pr_gets_one_right_verdict(
    make_server: Any, github: FakeGitHub, tmp_path: Path, redis_url: str, postgres_url: str
) -> None:
    web: Server = make_server(
        PATCHGATE_BROKER=redis_url, PATCHGATE_DATABASE_URL=postgres_url, PATCHGATE_CONCURRENCY="2"
    )
    web.start()
    assert httpx.get(f"{web.url}/readyz").json()["docker"] == "not used by this process"
    ports = [free_port() for _ in range(3)]
    workers = [
        WorkerProcess({**web.env, "PATCHGATE_METRICS_PORT": str(port)}, tmp_path / f"worker{i}.log")
        for i, port in enumerate(ports)
    ]
    doomed, survivor, replacement = workers
    try:
        doomed.start()
        # Two PRs of one repository that the doomed worker is running (holding) when it is killed.
        holds = [hold_file(tmp_path, f"hold{i}") for i in range(2)]
        first = make_pull(
            github, tmp_path, "alpha", number=1, scenario={"hold": str(holds[0]), "findings": 2}
        )
        held = [first, another_pull(first, 2, scenario={"hold": str(holds[1])})]
        for pull in held:
            assert web.post("pull_request", pull.payload("opened")).json()["status"] == "queued"
        for hold in holds:
            wait_for(started(hold), 60, "the doomed worker to start both held jobs")
        survivor.start()
        # Four more, over both repositories, run by the survivor meanwhile.
        second = make_pull(github, tmp_path, "beta", number=1, scenario={"findings": 1})
        others: list[Pull] = [
            second,
            another_pull(second, 2, scenario={}),
            another_pull(first, 3, scenario={"findings": 3}),
            another_pull(first, 4, scenario={}),
        ]
        for pull in others:
            assert web.post("pull_request", pull.payload("opened")).json()["status"] == "queued"
        doomed.kill9()
        for hold in holds:
            hold.touch()
        replacement.start()
        pulls = [*held, *others]
        for pull in pulls:
            wait_for(pull.completed, 120, f"{pull.repository}#{pull.number} to complete")
        # Then a quiet cluster: idle on an empty queue for longer than a broker socket's timeout.
        time.sleep(SOCKET_TIMEOUT_S + 1)
        # What an operator's Prometheus scrapes: each worker's counters, the web's queue gauges.
        reclaimed = sum(
            metric(f"http://127.0.0.1:{p}/metrics", "patchgate_jobs_reclaimed_total") for p in ports[1:]
        )
        queue = {name: metric(f"{web.url}/metrics", name) for name in QUEUE_GAUGES}
    finally:
        for worker in workers:
            worker.stop()

    conclusions = {(p.repository, p.number): p.completed()["conclusion"] for p in pulls}  # type: ignore[index]
    assert conclusions == {
        ("octo/alpha", 1): "failure",  # findings fail; none passes
        ("octo/alpha", 2): "success",
        ("octo/beta", 1): "failure",
        ("octo/beta", 2): "success",
        ("octo/alpha", 3): "failure",
        ("octo/alpha", 4): "success",
    }
    for pull in pulls:  # one check run per PR, and it is completed
        mine = [r for r in pull.runs() if r["head_sha"] == pull.head_sha]
        assert [r["status"] for r in mine] == ["completed"], mine
    assert len(github.runs_of("octo/alpha")) + len(github.runs_of("octo/beta")) == len(pulls)
    assert github.problems == []

    engine = create_engine(postgres_url)
    with engine.connect() as conn:
        rows = [dict(r._mapping) for r in conn.execute(text("SELECT * FROM jobs ORDER BY id"))]
    engine.dispose()
    assert [r["state"] for r in rows] == ["done"] * len(pulls)  # none left running, none twice
    attempts = {(r["repository"], r["pr_number"]): r["attempts"] for r in rows}
    assert attempts[("octo/alpha", 1)] == attempts[("octo/alpha", 2)] == 2  # the killed worker's two
    assert {attempts[(p.repository, p.number)] for p in others} == {1}

    assert reclaimed == 2
    assert queue == dict.fromkeys(QUEUE_GAUGES, 0.0)
    taken_over = [
        r for w in (survivor, replacement) for r in w.records() if "taken over from" in r.get("message", "")
    ]
    assert len(taken_over) == 2
    # The processes that stayed up were quiet: no traceback, no warning, no false "lease lost".
    assert loud(survivor.records()) == []
    assert loud(replacement.records()) == []
    assert loud(server_records(web)) == []
