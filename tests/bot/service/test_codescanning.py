"""The opt-in SARIF upload, end to end: the real server, the findings gate and the fake GitHub.

The fake checks each upload body against GitHub's REST description
(tests/fixtures/rest/) and decodes the log; it answers 403 to an
installation without ``security_events: write``, as GitHub does.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.github.client import GitHubError, Installation
from bot.service.codescanning import APP_CATEGORY, upload_findings
from checks.report import Report, ShapeResult
from tests.bot.harness import Server, jobs, make_pull, wait_for
from tests.fakes.github_server import FakeGitHub


@pytest.fixture
def security_events(github: FakeGitHub) -> Iterator[None]:
    """An installation that accepted the opt-in security_events: write permission."""
    github.permissions["security_events"] = "write"
    yield
    del github.permissions["security_events"]


def uploads(github: FakeGitHub, repository: str) -> list[dict[str, Any]]:
    with github.lock:
        return [u for u in github.sarifs if u["repository"] == repository]


def test_an_opted_in_app_uploads_each_report_to_the_prs_head(
    make_server: Callable[..., Server], github: FakeGitHub, tmp_path: Path, security_events: None
) -> None:
    server = make_server(PATCHGATE_UPLOAD_SARIF="1").start()
    pull = make_pull(github, tmp_path, "scanned", number=5, scenario={"findings": 3})
    server.post("pull_request", pull.payload("opened"))
    run = wait_for(pull.completed, 60, "the check run")
    [upload] = wait_for(lambda: uploads(github, pull.repository), 30, "the SARIF upload")
    assert upload["body"]["commit_sha"] == pull.head_sha
    assert upload["body"]["ref"] == "refs/pull/5/head"
    [sarif_run] = upload["log"]["runs"]
    assert upload["log"]["version"] == "2.1.0"
    assert sarif_run["automationDetails"]["id"].startswith(f"{APP_CATEGORY}/")
    assert len(sarif_run["results"]) == 3
    assert run["conclusion"] == "failure"
    assert github.problems == []


def test_a_refused_upload_leaves_the_verdict_and_the_job_done(
    make_server: Callable[..., Server], github: FakeGitHub, tmp_path: Path
) -> None:
    # The installation never accepted security_events: write: GitHub answers 403.
    server = make_server(PATCHGATE_UPLOAD_SARIF="1").start()
    pull = make_pull(github, tmp_path, "unscanned", scenario={"findings": 1})
    server.post("pull_request", pull.payload("opened"))
    run = wait_for(pull.completed, 60, "the check run")
    assert run["conclusion"] == "failure"
    wait_for(lambda: [j for j in jobs(server) if j["state"] == "done"], 30, "the job to end")
    # The upload is a follow-up of the delivered run: it comes after the job is done.
    [line] = wait_for(
        lambda: [x for x in server.log.read_text().splitlines() if "SARIF not uploaded" in x],
        30,
        "the warning",
    )
    assert "security_events: write" in line
    assert uploads(github, pull.repository) == []


def test_without_the_setting_nothing_is_uploaded(
    make_server: Callable[..., Server], github: FakeGitHub, tmp_path: Path, security_events: None
) -> None:
    server = make_server().start()
    pull = make_pull(github, tmp_path, "default", scenario={"findings": 2})
    server.post("pull_request", pull.payload("opened"))
    wait_for(pull.completed, 60, "the check run")
    wait_for(lambda: [j for j in jobs(server) if j["state"] == "done"], 30, "the job to end")
    assert uploads(github, pull.repository) == []


class Refusing:
    """An installation client whose every SARIF upload GitHub refuses with ``status``."""

    def __init__(self, status: int) -> None:
        self.status = status

    async def upload_sarif(self, repository: str, *, commit_sha: str, ref: str, sarif: dict[str, Any]) -> str:
        raise GitHubError(
            f"upload SARIF for {commit_sha[:12]}: GitHub answered {self.status}", status=self.status
        )


@pytest.mark.parametrize(("status", "hinted"), [(403, True), (413, False), (422, False)])
def test_only_a_refusal_for_permission_names_the_permission(
    status: int, hinted: bool, caplog: pytest.LogCaptureFixture
) -> None:
    # The head sha's first twelve digits contain "403": the message does, whatever the status.
    client: Installation = Refusing(status)  # type: ignore[assignment]
    with caplog.at_level(logging.WARNING, logger="bot.service.codescanning"):
        asyncio.run(
            upload_findings(
                client,
                "octo/repo",
                3,
                "ab403" + "0" * 35,
                Report(conclusion="failure", shape=ShapeResult(status="failed")),
            )
        )
    [record] = caplog.records
    assert "SARIF not uploaded" in record.getMessage()
    assert ("security_events: write" in record.getMessage()) is hinted
