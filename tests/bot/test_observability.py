"""/metrics and JSON logs of the real server: the numbers are there, the ids are there, no secret is."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx

from tests.bot.harness import SECRET, Server, make_pull, wait_for
from tests.fakes.github_server import FakeGitHub

JUDGE_KEY = "sk-judge-0123456789abcdef-never-shown"


def log_records(server: Server) -> list[dict[str, Any]]:
    """Every line the server wrote, each parsed as one JSON object (a plain line fails the test)."""
    records = []
    for line in server.log.read_text().splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        assert isinstance(record, dict), line
        records.append(record)
    return records


def metric(text: str, name: str, **labels: str) -> float:
    """Return the value of one sample of the Prometheus text ``text``."""
    for line in text.splitlines():
        if line.startswith("#") or not line.startswith(name):
            continue
        match = re.fullmatch(rf"{re.escape(name)}(?:\{{(.*)\}})? (\S+)", line)
        if match is None:
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', match.group(1) or ""))
        if found == labels:
            return float(match.group(2))
    raise AssertionError(f"no sample {name}{labels} in:\n{text}")


def test_metrics_and_json_logs_carry_ids_and_never_a_secret(
    make_server: object, github: FakeGitHub, app_key: tuple[str, bytes], tmp_path: Path
) -> None:
    server: Server = make_server(  # type: ignore[operator]
        PATCHGATE_JUDGE_API_KEY=JUDGE_KEY, PATCHGATE_JUDGE_API_BASE="http://127.0.0.1:9/v1"
    )
    server.start()
    good = make_pull(github, tmp_path, "observed", scenario={"findings": 2})
    response = server.post("pull_request", good.payload("opened"), delivery="obs-delivery-1")
    assert response.json()["status"] == "queued"
    wait_for(good.completed, 60, "the check run")
    # A sandbox that fails every attempt: retried, then neutral (and exceptions get logged).
    broken = make_pull(github, tmp_path, "broken", scenario={"raise": "SandboxError"})
    server.post("pull_request", broken.payload("opened"), delivery="obs-delivery-2")
    wait_for(broken.completed, 60, "the neutral check run")
    assert server.post("pull_request", good.payload("opened"), secret="wrong").status_code == 401

    page = httpx.get(f"{server.url}/metrics")
    assert page.status_code == 200
    text = page.text
    assert metric(text, "patchgate_deliveries_total", event="pull_request", outcome="queued") == 2
    assert metric(text, "patchgate_deliveries_total", event="-", outcome="bad_signature") == 1
    assert metric(text, "patchgate_jobs_total", state="done", conclusion="failure") == 1
    assert metric(text, "patchgate_jobs_total", state="failed", conclusion="neutral") == 1
    assert metric(text, "patchgate_jobs_total", state="retry", conclusion="-") == 2
    assert metric(text, "patchgate_sandbox_failures_total", kind="SandboxError") == 3
    assert metric(text, "patchgate_queue_depth") == 0
    assert metric(text, "patchgate_queue_oldest_age_seconds") == 0
    assert "patchgate_github_rate_limit_waits_total" in text
    assert "patchgate_judge_cost_usd_total" in text

    records = log_records(server)
    assert {"time", "level", "logger", "message"} <= set(records[0])
    start = next(r for r in records if r["message"] == "patchgate serving")
    assert start["database"].startswith("sqlite:///") and start["broker"] == "memory"
    assert any(r.get("delivery_id") == "obs-delivery-1" for r in records)
    job_lines = [r for r in records if "job_id" in r]
    assert any(r.get("run_key") == f"octo/observed#1@{good.head_sha}" for r in job_lines)
    broken_key = f"octo/broken#1@{broken.head_sha}"
    assert any(r.get("run_key") == broken_key and r["level"] == "WARNING" for r in job_lines)

    secrets = {
        "webhook secret": SECRET,
        "judge key": JUDGE_KEY,
        **{f"installation token {i}": token for i, token in enumerate(github.tokens)},
        # Any line of the key's base64 body gives it away.
        **{
            f"App key line {i}": line
            for i, line in enumerate(app_key[0].splitlines())
            if line and not line.startswith("-----")
        },
    }
    assert github.tokens, "no installation token was issued: the test proves nothing"
    raw_log = server.log.read_text()
    for what, value in secrets.items():
        assert value not in raw_log, f"the {what} is in the log"
        assert value not in text, f"the {what} is in /metrics"
