"""The web boundary, against the real server process: signatures, size caps, bad input, health, details."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import socket
import sqlite3
from pathlib import Path

import httpx
import pytest

from bot.service.runtokens import run_tokens
from bot.settings import Settings
from tests.bot.harness import INSTALLATION, SECRET, Server, fixture, jobs, make_pull, wait_for
from tests.fakes.github_server import FakeGitHub


def deliveries(server: Server) -> list[tuple[str, str, str, str]]:
    """Read the server's delivery records straight from its SQLite database."""
    url = server.env["PATCHGATE_DATABASE_URL"].removeprefix("sqlite:///")
    with sqlite3.connect(url) as db:
        return list(db.execute("SELECT id, event, action, outcome FROM deliveries ORDER BY received_at"))


def test_health_and_readiness(server: Server) -> None:
    assert httpx.get(f"{server.url}/healthz").json() == {"status": "ok"}
    ready = httpx.get(f"{server.url}/readyz").json()
    assert ready["database"] == "ok"
    assert ready["queue"] == "ok"
    assert ready["warm_up"] == "ok"
    from sandbox.engine import engine_available

    # This server runs its jobs in-process, so it needs (and checks) a Docker engine.
    assert ready["docker"] == ("ok" if engine_available() else "error: no engine")


@pytest.mark.parametrize(
    ("headers", "why"),
    [
        ({"X-Hub-Signature-256": ""}, "no signature"),
        ({"X-Hub-Signature-256": "", "X-Hub-Signature": "sha1=0000"}, "sha1 only"),
        ({"X-Hub-Signature-256": "sha256=" + "0" * 64}, "wrong signature"),
    ],
)
def test_unsigned_or_badly_signed_deliveries_are_401_and_leave_no_trace(
    server: Server, headers: dict[str, str], why: str
) -> None:
    delivery = f"unsigned-{abs(hash(why))}"
    response = server.post("pull_request", b"{not even json", delivery=delivery, headers=headers)
    assert response.status_code == 401, why
    assert delivery not in [d[0] for d in deliveries(server)]


def test_a_sha1_signature_is_refused_even_when_correct(server: Server) -> None:
    body = json.dumps(fixture("pull_request.synchronize")).encode()
    sha1 = "sha1=" + hmac.new(SECRET.encode(), body, hashlib.sha1).hexdigest()
    response = server.post("pull_request", body, headers={"X-Hub-Signature-256": "", "X-Hub-Signature": sha1})
    assert response.status_code == 401


def test_a_signature_with_another_secret_is_refused(server: Server) -> None:
    response = server.post("pull_request", fixture("pull_request.synchronize"), secret="not the secret")
    assert response.status_code == 401


def test_oversized_bodies_are_413(server: Server) -> None:
    cap = int(server.env["PATCHGATE_MAX_BODY_BYTES"])
    big = json.dumps({"action": "opened", "pad": "x" * cap}).encode()
    assert server.post("pull_request", big).status_code == 413
    # A lying Content-Length does not get past the cap either: the stream is counted.
    chunks = (b"x" * 65536 for _ in range(cap // 65536 + 2))
    response = httpx.post(
        f"{server.url}/webhook",
        content=chunks,
        headers={
            "X-Hub-Signature-256": "sha256=" + "0" * 64,
            "X-GitHub-Event": "ping",
            "X-GitHub-Delivery": "big",
            "Content-Type": "application/json",
        },
    )
    assert response.status_code == 413


def test_invalid_json_is_400(server: Server) -> None:
    assert server.post("pull_request", b"{this is not json").status_code == 400
    assert server.post("pull_request", b"[1, 2, 3]").status_code == 400


def test_wrong_content_type_is_415(server: Server) -> None:
    body = b"payload=%7B%7D"
    response = server.post(
        "pull_request", body, headers={"Content-Type": "application/x-www-form-urlencoded"}
    )
    assert response.status_code == 415


def test_missing_event_or_delivery_headers_are_400(server: Server) -> None:
    body = fixture("pull_request.synchronize")
    assert server.post("pull_request", body, headers={"X-GitHub-Event": ""}).status_code == 400
    assert server.post("pull_request", body, headers={"X-GitHub-Delivery": ""}).status_code == 400


def test_unknown_events_and_actions_are_accepted_ignored_and_recorded(server: Server) -> None:
    response = server.post("ping", {"zen": "Keep it logically awesome.", "hook_id": 1}, delivery="ping-1")
    assert (response.status_code, response.json()["status"]) == (202, "ignored")
    labeled = server.post("pull_request", fixture("pull_request.labeled"), delivery="labeled-1")
    assert (labeled.status_code, labeled.json()["status"]) == (202, "ignored")
    suite = server.post(
        "check_suite", fixture("check_suite.rerequested") | {"action": "exploded"}, delivery="exploded-1"
    )
    assert (suite.status_code, suite.json()["status"]) == (202, "ignored")
    recorded = {d[0]: d for d in deliveries(server)}
    assert recorded["ping-1"][3] == "ignored"
    assert recorded["labeled-1"][1:] == ("pull_request", "labeled", "ignored")
    log = server.log.read_text()
    assert "ping.- is not handled" in log
    assert "pull_request.labeled is not handled" in log


def test_a_routed_event_missing_required_fields_is_ignored_not_a_crash(server: Server) -> None:
    data = fixture("pull_request.synchronize")
    del data["pull_request"]["head"]
    response = server.post("pull_request", data)
    assert (response.status_code, response.json()["status"]) == (202, "ignored")
    assert "lacks fields" in response.json()["notes"][0]


def test_a_replayed_delivery_is_answered_but_does_nothing(
    server: Server, github: FakeGitHub, tmp_path: Path
) -> None:
    pull = make_pull(github, tmp_path, "replayed")
    payload = pull.payload("opened")
    first = server.post("pull_request", payload, delivery="replay-1")
    assert (first.status_code, first.json()["status"]) == (202, "queued")
    again = server.post("pull_request", payload, delivery="replay-1")
    assert (again.status_code, again.json()) == (202, {"status": "duplicate"})
    # The same body under a new delivery id (a replay by someone holding a signed body) adds no work.
    other = server.post("pull_request", payload, delivery="replay-2")
    assert (other.status_code, other.json()["jobs"]) == (202, [])
    wait_for(pull.completed, 60, "the run")
    posts = github.calls_to("POST", r"^/repos/octo/replayed/check-runs$")
    assert len(posts) == 1


def test_the_details_page_needs_its_token(server: Server, github: FakeGitHub, tmp_path: Path) -> None:
    pull = make_pull(github, tmp_path, "details", scenario={"findings": 2})
    server.post("pull_request", pull.payload("opened"))
    run = wait_for(pull.completed, 60, "the run")
    link = r"http://127\.0\.0\.1:8000/runs/(\d+)\?token=(\d+\.[0-9a-f]{32})"
    match = re.fullmatch(link, run["details_url"])
    assert match is not None
    job_id, token = int(match.group(1)), match.group(2)
    # The check run is completed before the job's row and its run are stored: wait for those too.
    wait_for(lambda: [j for j in jobs(server, "octo/details") if j["state"] == "done"], 30, "the job")
    assert run_tokens(Settings(webhook_secret=SECRET)).check(token, job_id) == "ok"  # type: ignore[arg-type]
    page = httpx.get(f"{server.url}/runs/{job_id}", params={"token": token})
    assert page.status_code == 200
    assert "octo/details #1" in page.text
    assert 'id="conclusion">failure<' in page.text
    assert '<table id="findings">' in page.text
    # Links back to the PR and to the check run on GitHub.
    assert 'href="https://github.com/octo/details/pull/1"' in page.text
    assert f'href="https://github.com/octo/details/runs/{run["id"]}"' in page.text
    # The token in the URL must not leak through a cache, a referrer or a frame.
    assert page.headers["cache-control"] == "no-store"
    assert page.headers["referrer-policy"] == "no-referrer"
    assert page.headers["x-frame-options"] == "DENY"
    assert "default-src 'none'" in page.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
    assert page.headers["x-content-type-options"] == "nosniff"
    data = httpx.get(f"{server.url}/runs/{job_id}", params={"token": token, "format": "json"})
    assert data.headers["cache-control"] == "no-store"
    assert data.json()["report"]["conclusion"] == "failure"
    assert len(data.json()["report"]["shape"]["findings"]) == 2
    shown = data.json()["job"]
    # No worker host name, no installation id.
    assert "worker" not in shown and "installation_id" not in shown
    assert socket.gethostname() not in data.text
    # (compared by value: the id's digits can occur inside a timestamp)
    assert INSTALLATION not in shown.values()
    assert f"/installations/{INSTALLATION}" not in data.text
    assert shown["links"]["check_run"] == f"https://github.com/octo/details/runs/{run['id']}"
    # The repository's page, through the link on the run's page (its own token: no other repository's).
    repo_link = re.search(r'href="(/repos/octo/details\?token=[^"]+)"', page.text)
    assert repo_link is not None
    repo_page = httpx.get(server.url + repo_link.group(1).replace("&amp;", "&"))
    assert repo_page.status_code == 200 and repo_page.headers["cache-control"] == "no-store"
    assert f'href="/runs/{job_id}?token=' in repo_page.text and '<table id="runs">' in repo_page.text
    # Following links never extends access: every token handed out expires with the first one.
    handed = re.findall(r"token=(\d+)\.", repo_link.group(1) + repo_page.text)
    assert handed and set(handed) == {token.split(".")[0]}
    other = repo_link.group(1).replace("/repos/octo/details", "/repos/octo/other")
    assert httpx.get(server.url + other).status_code == 404
    assert httpx.get(f"{server.url}/repos/octo/details").status_code == 404
    assert httpx.get(f"{server.url}/runs/{job_id}").status_code == 404
    assert httpx.get(f"{server.url}/runs/{job_id}", params={"token": "0" * 32}).status_code == 404
    assert httpx.get(f"{server.url}/runs/{job_id + 1}", params={"token": token}).status_code == 404


def test_an_expired_details_link_is_gone(make_server: object, github: FakeGitHub, tmp_path: Path) -> None:
    server: Server = make_server(PATCHGATE_RUN_TOKEN_TTL_S="0.5")  # type: ignore[operator]
    server.start()
    pull = make_pull(github, tmp_path, "expiring", scenario={"findings": 0})
    server.post("pull_request", pull.payload("opened"))
    run = wait_for(pull.completed, 60, "the run")
    url = run["details_url"].replace("http://127.0.0.1:8000", server.url)
    wait_for(lambda: httpx.get(url).status_code == 410, 10, "the link to expire")
    assert httpx.get(f"{server.url}/healthz").headers["x-frame-options"] == "DENY"


@pytest.mark.postgres
def test_readiness_fails_when_the_queue_is_unreachable(make_server: object, postgres_url: str) -> None:
    # A web-only process (Redis broker) whose Redis does not answer: alive, but not ready.
    server: Server = make_server(  # type: ignore[operator]
        PATCHGATE_BROKER="redis://127.0.0.1:1/0", PATCHGATE_DATABASE_URL=postgres_url
    )
    server.start()
    assert httpx.get(f"{server.url}/healthz").status_code == 200
    ready = httpx.get(f"{server.url}/readyz")
    assert ready.status_code == 503
    assert ready.json()["queue"].startswith("error")
    assert ready.json()["database"] == "ok"
    assert ready.json()["docker"] == "not used by this process"


def test_the_warm_up_freezes_what_the_process_has_built() -> None:
    import gc

    from bot.web.app import _warm_up

    # A full collection walking every module and model was a 100 ms pause of the event loop.
    try:
        _warm_up()
        assert gc.get_freeze_count() > 10_000
        assert gc.get_freeze_count() > len(gc.get_objects())
    finally:
        gc.unfreeze()
