"""The githubkit client against the fake GitHub: tokens, retries, rate limits, tarballs, check runs."""

from __future__ import annotations

import asyncio
import base64
import gzip
import io
import ssl
import tarfile
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest
from githubkit_schemas.latest.types import (
    ReposOwnerRepoCheckRunsCheckRunIdPatchBodyPropOutputPropAnnotationsItemsType as AnnotationItem,
)
from pydantic import SecretStr

from bot.github import checkrun
from bot.github.app import GitHubApp, tls_context
from bot.github.client import (
    SARIF_MAX_RESULTS,
    GitHubError,
    Installation,
    InstallationGone,
    NotFound,
)
from bot.settings import Settings
from tests.bot.harness import INSTALLATION, make_pull
from tests.fakes.github_server import FakeGitHub, validate_sarif_upload

T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def token_requests(github: FakeGitHub, since: int) -> int:
    return sum(1 for c in github.calls[since:] if c.path.endswith("/access_tokens"))


def test_the_installation_token_is_fetched_once_and_sent_only_in_a_header(
    github: FakeGitHub, client: Installation, tmp_path: Path
) -> None:
    pull = make_pull(github, tmp_path, "tokens")
    start = len(github.calls)

    async def work() -> None:
        assert (await client.pull(pull.repository, 1)).head.sha == pull.head_sha
        assert await client.file_at(pull.repository, ".github/patchgate.yml", pull.base_sha) is not None
        await client.tarball(pull.repository, pull.head_sha)

    run(work())
    assert token_requests(github, start) == 1
    calls = github.calls[start:]
    token = calls[0]
    assert token.headers["Authorization"].startswith("Bearer ")  # the App JWT, verified by the fake
    for call in calls[1:]:
        if call.path.startswith("/repos/"):
            assert call.headers["Authorization"].startswith("token ghs_")
        assert "ghs_" not in call.path and "ghs_" not in str(call.query)


def test_a_refused_jwt_is_a_configuration_error(
    settings: Settings, github: FakeGitHub, tmp_path: Path
) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    other = (
        rsa.generate_private_key(public_exponent=65537, key_size=2048)
        .private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        .decode()
    )
    pull = make_pull(github, tmp_path, "badkey")
    wrong = GitHubApp(settings.model_copy(update={"private_key": SecretStr(other)})).installation(
        INSTALLATION
    )
    with pytest.raises(GitHubError, match="JWT") as info:
        run(wrong.pull(pull.repository, 1))
    assert not info.value.retryable


def test_server_errors_are_retried_with_backoff(
    github: FakeGitHub, client: Installation, tmp_path: Path
) -> None:
    pull = make_pull(github, tmp_path, "flaky")
    github.fail("GET", r"/repos/octo/flaky/pulls/1$", 502, times=2)
    start = len(github.calls)
    assert run(client.pull(pull.repository, 1)).number == 1
    statuses = [c.status for c in github.calls[start:] if c.path.endswith("/pulls/1")]
    assert statuses == [502, 502, 200]


def test_server_errors_that_persist_become_a_retryable_github_error(
    github: FakeGitHub, client: Installation, tmp_path: Path
) -> None:
    pull = make_pull(github, tmp_path, "down")
    github.fail("GET", r"/repos/octo/down/pulls/1$", 500, times=10)
    start = len(github.calls)
    with pytest.raises(GitHubError, match="500") as info:
        run(client.pull(pull.repository, 1))
    assert info.value.retryable
    assert len([c for c in github.calls[start:] if c.path.endswith("/pulls/1")]) == 4  # 1 + 3 retries
    github.failures.clear()


@pytest.mark.slow
def test_a_primary_rate_limit_is_waited_out(github: FakeGitHub, client: Installation, tmp_path: Path) -> None:
    pull = make_pull(github, tmp_path, "limited")
    reset = int(time.time()) + 2
    github.fail(
        "GET",
        r"/repos/octo/limited/pulls/1$",
        403,
        message="API rate limit exceeded",
        headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset)},
    )
    start = time.monotonic()
    assert run(client.pull(pull.repository, 1)).number == 1
    assert time.monotonic() - start >= 0.9


@pytest.mark.slow
def test_a_secondary_rate_limit_honours_retry_after(
    github: FakeGitHub, client: Installation, tmp_path: Path
) -> None:
    pull = make_pull(github, tmp_path, "secondary")
    github.fail("GET", r"/repos/octo/secondary/pulls/1$", 429, headers={"retry-after": "1"})
    start = time.monotonic()
    assert run(client.pull(pull.repository, 1)).number == 1
    assert time.monotonic() - start >= 1.0


def test_a_rate_limit_longer_than_allowed_is_not_slept_through(
    github: FakeGitHub, client: Installation, tmp_path: Path
) -> None:
    pull = make_pull(github, tmp_path, "longlimit")
    github.fail(
        "GET",
        r"/repos/octo/longlimit/pulls/1$",
        403,
        headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(time.time()) + 3600)},
    )
    start = time.monotonic()
    with pytest.raises(GitHubError, match="rate limited") as info:
        run(client.pull(pull.repository, 1))
    assert info.value.retryable
    assert time.monotonic() - start < 60  # the reset is an hour away: not slept through


def test_every_client_verifies_tls_with_the_one_shared_context(settings: Settings) -> None:
    # A context per client cost ~30 ms of the event loop per GitHub call (loading the CA bundle).
    app = GitHubApp(settings)
    shared = tls_context()
    for gh in (app.as_app(), app.installation(1).gh, GitHubApp(settings).installation(2).gh):
        assert gh.config.ssl_verify is shared
    # Sharing it loosens nothing: certificates and host names are still checked.
    assert shared.verify_mode == ssl.CERT_REQUIRED
    assert shared.check_hostname


def test_missing_things(github: FakeGitHub, client: Installation, tmp_path: Path) -> None:
    pull = make_pull(github, tmp_path, "missing", policy=None)
    assert run(client.file_at(pull.repository, ".github/patchgate.yml", pull.base_sha)) is None
    with pytest.raises(NotFound):
        run(client.pull(pull.repository, 99))


def test_a_removed_installation_is_gone(github: FakeGitHub, settings: Settings, tmp_path: Path) -> None:
    pull = make_pull(github, tmp_path, "uninstalled")
    client = GitHubApp(settings).installation(9001)
    assert run(client.pull(pull.repository, 1)).number == 1
    github.remove_installation(9001)
    with pytest.raises(InstallationGone, match="401"):  # the cached token was revoked
        run(client.pull(pull.repository, 1))
    fresh = GitHubApp(settings).installation(9001)
    with pytest.raises(InstallationGone, match="uninstalled"):  # no new token either
        run(fresh.pull(pull.repository, 1))


def test_tarballs_have_one_top_level_folder(github: FakeGitHub, client: Installation, tmp_path: Path) -> None:
    pull = make_pull(github, tmp_path, "tarball")
    data = run(client.tarball(pull.repository, pull.head_sha))
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tops = {m.name.split("/")[0] for m in tar.getmembers() if m.name != "pax_global_header"}
        assert tops == {f"octo-tarball-{pull.head_sha[:7]}"}
        assert f"octo-tarball-{pull.head_sha[:7]}/app.py" in tar.getnames()


def test_create_is_not_repeated_when_github_failed_after_creating(
    github: FakeGitHub, client: Installation, tmp_path: Path
) -> None:
    pull = make_pull(github, tmp_path, "created")
    github.fail("POST", r"/repos/octo/created/check-runs$", 502, after=True)
    body = checkrun.started("patchgate", pull.head_sha, "key-1", "https://x/runs/1", "test")
    run_id = run(client.create_check_run(pull.repository, body))
    assert [r["id"] for r in pull.runs()] == [run_id]
    assert [(c.method, c.status) for c in github.calls_to(None, "/repos/octo/created/")][-2:] == [
        ("POST", 502),
        ("GET", 200),
    ]


def test_create_is_retried_when_github_failed_before_creating(
    github: FakeGitHub, client: Installation, tmp_path: Path
) -> None:
    pull = make_pull(github, tmp_path, "notcreated")
    github.fail("POST", r"/repos/octo/notcreated/check-runs$", 500)
    body = checkrun.started("patchgate", pull.head_sha, "key-2", "https://x/runs/2", "test")
    run_id = run(client.create_check_run(pull.repository, body))
    assert [r["id"] for r in pull.runs()] == [run_id]
    assert [
        (c.method, c.status) for c in github.calls_to(None, "/repos/octo/notcreated/(check-runs|commits)")
    ] == [("POST", 500), ("GET", 200), ("POST", 201)]
    assert run(client.find_check_run(pull.repository, pull.head_sha, "key-2")) == run_id
    assert run(client.find_check_run(pull.repository, pull.head_sha, "key-3")) is None


def test_an_update_with_annotations_is_not_repeated_when_github_failed_after_applying_it(
    github: FakeGitHub, client: Installation, tmp_path: Path
) -> None:
    pull = make_pull(github, tmp_path, "appended")
    body = checkrun.started("patchgate", pull.head_sha, "key-4", "https://x/runs/4", "test")
    run_id = run(client.create_check_run(pull.repository, body))
    annotation: AnnotationItem = {
        "path": "app.py", "start_line": 1, "end_line": 1, "annotation_level": "failure", "message": "m",
    }  # fmt: skip
    update: checkrun.UpdateBody = {"output": {"title": "t", "summary": "s", "annotations": [annotation]}}
    github.fail("PATCH", r"/check-runs/\d+$", 502, after=True, body_key="annotations")
    with pytest.raises(GitHubError) as raised:
        run(client.update_check_run(pull.repository, run_id, update))
    assert raised.value.retryable  # the caller may retry, after reading the count
    assert run(client.annotations_count(pull.repository, run_id)) == 1
    assert len(github.calls_to("PATCH", "/repos/octo/appended/check-runs/")) == 1
    # Without annotations, an update is idempotent and retried as before.
    github.fail("PATCH", r"/repos/octo/appended/check-runs/\d+$", 502)
    run(client.update_check_run(pull.repository, run_id, {"output": {"title": "t", "summary": "s2"}}))
    assert [c.status for c in github.calls_to("PATCH", "/repos/octo/appended/check-runs/")][1:] == [502, 200]


@pytest.mark.slow
def test_finding_a_check_run_reads_every_page(
    github: FakeGitHub, client: Installation, tmp_path: Path
) -> None:
    pull = make_pull(github, tmp_path, "manyruns")
    for i in range(130):  # reruns pile up on one commit
        body = checkrun.started("patchgate", pull.head_sha, f"other-{i}", "https://x/runs/0", "test")
        run(client.create_check_run(pull.repository, body))
    body = checkrun.started("patchgate", pull.head_sha, "ours", "https://x/runs/1", "test")
    ours = run(client.create_check_run(pull.repository, body))
    before = len(github.calls_to("GET", r"/repos/octo/manyruns/commits/.*/check-runs"))
    assert run(client.find_check_run(pull.repository, pull.head_sha, "ours")) == ours
    pages = github.calls_to("GET", r"/repos/octo/manyruns/commits/.*/check-runs")[before:]
    assert [c.query.get("page") for c in pages] == [["1"], ["2"]]
    assert run(client.find_check_run(pull.repository, pull.head_sha, "absent")) is None


def test_a_sarif_upload_is_the_body_github_describes(
    github: FakeGitHub, client: Installation, tmp_path: Path
) -> None:
    pull = make_pull(github, tmp_path, "sarif")
    log = {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "patchgate"}}, "results": []}]}
    github.permissions["security_events"] = "write"
    try:
        upload = run(
            client.upload_sarif(pull.repository, commit_sha=pull.head_sha, ref="refs/pull/1/head", sarif=log)
        )
    finally:
        del github.permissions["security_events"]
    [sent] = [u for u in github.sarifs if u["repository"] == pull.repository]
    assert sent["log"] == log and upload
    with pytest.raises(GitHubError, match="403"):
        run(client.upload_sarif(pull.repository, commit_sha=pull.head_sha, ref="refs/pull/1/head", sarif=log))
    assert github.problems == []


def test_a_sarif_log_over_code_scannings_limits_is_never_sent(
    github: FakeGitHub, client: Installation, tmp_path: Path
) -> None:
    pull = make_pull(github, tmp_path, "sarif-big")
    results = [{"ruleId": "r", "message": {"text": str(i)}} for i in range(SARIF_MAX_RESULTS + 1)]
    log = {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "patchgate"}}, "results": results}]}
    github.permissions["security_events"] = "write"
    try:
        with pytest.raises(GitHubError, match="over code scanning's limits") as raised:
            run(
                client.upload_sarif(
                    pull.repository, commit_sha=pull.head_sha, ref="refs/pull/1/head", sarif=log
                )
            )
    finally:
        del github.permissions["security_events"]
    assert not raised.value.retryable
    assert [u for u in github.sarifs if u["repository"] == pull.repository] == []


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"ref": "main"}, "does not match"),  # not a full ref
        ({"commit_sha": "abc"}, "is too short"),
        ({"sarif": base64.b64encode(b'{"version": "2.1.0"}').decode()}, "not gzipped"),
        ({"extra": 1}, "Additional properties"),
    ],
)
def test_the_fake_refuses_upload_bodies_github_would(change: dict[str, Any], problem: str) -> None:
    packed = base64.b64encode(gzip.compress(b'{"version": "2.1.0", "runs": []}')).decode()
    body = {"commit_sha": "a" * 40, "ref": "refs/pull/1/head", "sarif": packed}
    assert validate_sarif_upload(body) == ([], {"version": "2.1.0", "runs": []})
    problems, log = validate_sarif_upload({**body, **change})
    assert log is None and problem in " ".join(problems)
