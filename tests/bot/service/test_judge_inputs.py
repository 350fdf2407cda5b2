"""What the worker gives the judge: the linked issue's text, who wrote the PR, and shadow usage.

The real server process and the fake GitHub; the gate (tests.bot.pipelines:inputs_gate)
reports what it was given.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.bot.harness import Server, jobs, make_pull, wait_for
from tests.fakes.github_server import FakeGitHub

TRAILER = "Co-authored-by: Claude <noreply@anthropic.com>"
JUDGE = {"PATCHGATE_JUDGE_API_BASE": "http://127.0.0.1:9/v1", "PATCHGATE_JUDGE_API_KEY": "sk-unused"}


def gate_saw(make_server: Callable[..., Server], github: FakeGitHub, tmp_path: Path, name: str,
             **extra: str) -> tuple[dict[str, Any], Server]:  # fmt: skip
    server = make_server(**extra)
    server.pipeline = "tests.bot.pipelines:inputs_gate"
    server.start()
    pull = make_pull(github, tmp_path, name)
    pull.body = "Parses durations.\n\nCloses #12, fixes other/repo#5."
    pull.push({"app.py": "def add(a, b):\n    return b + a\n"}, f"Tidy add\n\n{TRAILER}\n")
    github.set_issue(
        pull.repository, 12, "parse_duration accepts garbage", "`parse_duration('x')` must raise."
    )
    server.post("pull_request", pull.payload("opened"))
    run = wait_for(pull.completed, 60, "the check run to complete")
    assert run["conclusion"] == "success"
    report = wait_for(lambda: _report(server, pull.repository), 30, "the stored report")
    return json.loads(report["reasons"][0]), server


def _report(server: Server, repository: str) -> dict[str, Any] | None:
    done = [j for j in jobs(server, repository) if j["state"] == "done"]
    if not done:
        return None
    path = server.env["PATCHGATE_DATABASE_URL"].removeprefix("sqlite:///")
    with sqlite3.connect(path) as db:
        row = db.execute("SELECT report FROM runs WHERE job_id = ?", (done[0]["id"],)).fetchone()
    return json.loads(row[0]) if row else None


def test_the_judge_reads_the_linked_issue_and_the_note_sees_the_co_author(
    make_server: Callable[..., Server], github: FakeGitHub, tmp_path: Path
) -> None:
    saw, server = gate_saw(make_server, github, tmp_path, "linked", **JUDGE)
    assert saw["issue"] == "#12: parse_duration accepts garbage\n\n`parse_duration('x')` must raise."
    assert saw["body"].startswith("Parses durations.")
    assert saw["provenance"][0] == "patchbot[bot]"
    assert "Claude <noreply@anthropic.com>" in saw["provenance"]
    # Only this repository's issue was read; other/repo#5 is not the App's to read.
    # (The fake GitHub is shared: other tests' repositories are not this test's business.)
    reads = github.calls_to("GET", r"^/repos/(octo/linked|other/repo)/issues/")
    assert [c.path for c in reads] == ["/repos/octo/linked/issues/12"]
    assert github.calls_to("GET", r"^/repos/octo/linked/pulls/1/commits$")
    # The shadow verdict's tokens and cost are stored with it.
    path = server.env["PATCHGATE_DATABASE_URL"].removeprefix("sqlite:///")
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT prompt_tokens, completion_tokens, cost_usd FROM judge_records").fetchall()
    assert rows == [(1000, 20, 0.0025)]


def test_an_installation_without_the_issues_permission_still_gets_its_run(
    make_server: Callable[..., Server], github: FakeGitHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Installed before patchgate asked for `issues: read`, and not yet accepted: GitHub answers 403.
    monkeypatch.setattr(github, "permissions", {k: v for k, v in github.permissions.items() if k != "issues"})
    saw, _ = gate_saw(make_server, github, tmp_path, "noissues", **JUDGE)
    assert saw["issue"] == ""
    assert [c.status for c in github.calls_to("GET", r"^/repos/octo/noissues/issues/12$")] == [403]


def test_without_a_judge_nothing_extra_is_asked_of_github(
    make_server: Callable[..., Server], github: FakeGitHub, tmp_path: Path
) -> None:
    saw, _ = gate_saw(make_server, github, tmp_path, "nojudge")
    assert (saw["judge"], saw["issue"], saw["provenance"]) == (False, "", [])
    assert github.calls_to("GET", r"^/repos/octo/nojudge/(issues|pulls/1/commits)") == []
