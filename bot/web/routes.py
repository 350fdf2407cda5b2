"""The service's routes: the webhook, health, readiness, metrics and the run details page.

The webhook does only this: verify the signature (before reading anything
else), cap the body, parse, route, record the delivery and its jobs in one
transaction, enqueue, answer 202. No GitHub call and no gate work happens
inside a request. The app (bot/web/app.py) builds the ``Service`` these read
from ``app.state.service``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from pydantic import ValidationError

from bot import logs, metrics
from bot.github import events, payloads
from bot.github.events import Ignore
from bot.service.queue import JobQueue
from bot.service.runtokens import RunTokens, expiry_of, repository_subject
from bot.service.worker import Worker
from bot.settings import Settings
from bot.store import Incoming, Store
from bot.web import runpage, signature
from bot.web.intake import Intake
from checks.render import render_text
from checks.report import Report

log = logging.getLogger(__name__)

router = APIRouter()


@dataclass
class Service:
    settings: Settings
    secret: bytes
    store: Store
    queue: JobQueue
    worker: Worker | None
    tokens: RunTokens
    intake: Intake


def _answer(code: int, /, **body: Any) -> JSONResponse:
    return JSONResponse(body, status_code=code)


async def _read_capped(request: Request, cap: int) -> bytes | None:
    """Read the body, or return None as soon as it grows past ``cap`` bytes."""
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > cap):
        return None
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > cap:
            return None
    return bytes(body)


@router.post("/webhook")
async def webhook(request: Request) -> JSONResponse:
    svc: Service = request.app.state.service
    header = request.headers.get(signature.HEADER)
    # Before the signature verifies, the event header is anyone's: it is not a label.
    if header is None:
        # An sha1-only delivery lands here too: X-Hub-Signature is never accepted.
        metrics.delivery("-", "unsigned")
        return _answer(401, error=f"missing {signature.HEADER}")
    body = await _read_capped(request, svc.settings.max_body_bytes)
    if body is None:
        metrics.delivery("-", "too_large")
        return _answer(413, error=f"body larger than {svc.settings.max_body_bytes} bytes")
    if not signature.verify(svc.secret, body, header):
        metrics.delivery("-", "bad_signature")
        return _answer(401, error="bad signature")
    delivery = request.headers.get("x-github-delivery", "")
    with logs.bound(delivery_id=delivery[:64] or None):
        answer, outcome = await _accept(svc, request, body)
    metrics.delivery(request.headers.get("x-github-event", ""), outcome)
    return answer


@router.get("/healthz")
async def healthz() -> JSONResponse:
    return _answer(200, status="ok")


@router.get("/metrics")
async def metrics_page(request: Request) -> Response:
    svc: Service = request.app.state.service
    try:
        metrics.queue(*await asyncio.to_thread(svc.store.leases.queue_stats))
    except Exception:  # the process's own metrics still answer; the log says why the queue's did not
        log.exception("reading the queue for /metrics failed")
    return Response(metrics.exposition(), media_type=metrics.CONTENT_TYPE)


@router.get("/readyz")
async def readyz(request: Request) -> JSONResponse:
    svc: Service = request.app.state.service
    checks: dict[str, str] = {}
    try:
        await asyncio.to_thread(svc.store.ping)
        checks["database"] = "ok"
    except Exception as exc:  # any failure means not ready; say which
        checks["database"] = f"error: {type(exc).__name__}"
    try:
        await svc.queue.ping()
        checks["queue"] = "ok"
    except Exception as exc:  # any failure means not ready; say which
        checks["queue"] = f"error: {type(exc).__name__}"
    if svc.worker is not None:
        from sandbox.engine import engine_available

        checks["docker"] = "ok" if await asyncio.to_thread(engine_available) else "error: no engine"
    else:
        checks["docker"] = "not used by this process"
    warm: asyncio.Task[None] = request.app.state.warm
    checks["warm_up"] = "ok" if warm.done() else "in progress"
    ready = all(v in ("ok", "not used by this process") for v in checks.values())
    return _answer(200 if ready else 503, ready=ready, **checks)


@router.get("/runs/{job_id}", response_model=None)
async def run_page(request: Request, job_id: int, token: str = "") -> Response:
    svc: Service = request.app.state.service
    verdict = svc.tokens.check(token, job_id)
    if verdict == "expired":
        return _answer(410, error="this link has expired; the check run on GitHub keeps the summary")
    if verdict != "ok":
        return _answer(404, error="no such run")
    job = await asyncio.to_thread(svc.store.leases.job, job_id)
    if job is None:
        return _answer(404, error="no such run")
    data = await asyncio.to_thread(svc.store.runs.report, job_id)
    github_url = svc.settings.github_url
    if request.query_params.get("format") == "json":
        return _answer(200, job=runpage.public_job(job, github_url), report=data)
    report = Report.model_validate(data) if data else None
    text = render_text(report) if report is not None else f"state: {job.state}\n{job.detail}"
    subject = repository_subject(job.repository)
    # The repository's link expires with this page's own token, never later.
    repository_token = svc.tokens.issue(subject, until=expiry_of(token))
    repository_url = f"/repos/{job.repository}?token={repository_token}"
    return HTMLResponse(runpage.page(job, text, github_url, report=report, repository_url=repository_url))


@router.get("/repos/{owner}/{name}", response_model=None)
async def repository_page(request: Request, owner: str, name: str, token: str = "") -> Response:
    """Every stored run of one repository (the token of its link, from one of its run pages)."""
    svc: Service = request.app.state.service
    repository = f"{owner}/{name}"
    verdict = svc.tokens.check(token, repository_subject(repository))
    if verdict == "expired":
        return _answer(410, error="this link has expired; open it again from a run's page")
    if verdict != "ok":
        return _answer(404, error="no such repository")
    runs = await asyncio.to_thread(svc.store.runs.for_repository, repository)
    records = [row.record() for row in await asyncio.to_thread(svc.store.judge.records, repository)]

    def run_url(job_id: int) -> str:
        # Each run's link expires with this page's token: following links never extends access.
        return f"/runs/{job_id}?token={svc.tokens.issue(job_id, until=expiry_of(token))}"

    return HTMLResponse(runpage.repository_page(repository, runs, run_url, records))


async def _accept(svc: Service, request: Request, body: bytes) -> tuple[JSONResponse, str]:
    """Handle an authenticated delivery: parse, route, record, enqueue; return the answer and outcome."""
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type != "application/json":
        return _answer(415, error="GitHub App webhooks must be application/json"), "bad_request"
    event = request.headers.get("x-github-event")
    delivery = request.headers.get("x-github-delivery")
    if not event or not delivery or len(delivery) > 64:
        return _answer(400, error="missing X-GitHub-Event or X-GitHub-Delivery"), "bad_request"
    try:
        data = json.loads(body)
    except ValueError:
        return _answer(400, error="body is not JSON"), "bad_request"
    if not isinstance(data, dict):
        return _answer(400, error="body is not a JSON object"), "bad_request"
    raw_action = data.get("action")
    action = raw_action if isinstance(raw_action, str) else None
    actions: list[events.Action]
    if not events.routed(event, action):
        actions = [Ignore(f"{event}.{action or '-'} is not handled")]
    else:
        try:
            actions = events.route(event, payloads.parse(event, data))
        except ValidationError as exc:
            actions = [
                Ignore(f"{event}.{action} payload lacks fields patchgate needs: {exc.error_count()} errors")
            ]
    installation = data.get("installation")
    repository = data.get("repository")
    # The intake's own writer thread records it (jobs marked enqueued: the kick below follows at once).
    recorded = await svc.intake.record(
        Incoming(
            delivery_id=delivery,
            event=event,
            action=action or "",
            actions=actions,
            installation_id=installation.get("id") if isinstance(installation, dict) else None,
            repository=str(repository.get("full_name", "")) if isinstance(repository, dict) else "",
            received_at=time.time(),
        )
    )
    if recorded.duplicate:
        log.info("delivery %s: duplicate (%s.%s), nothing to do", delivery, event, action)
        return _answer(202, status="duplicate"), "duplicate"
    # One line per delivery: at a hundred deliveries a second, log lines are part of the cost.
    log.info("delivery %s (%s.%s): %s", delivery, event, action, "; ".join(recorded.notes))
    if recorded.job_ids:
        try:
            for job_id in recorded.job_ids:
                await svc.queue.kick(job_id)
        except Exception:  # the jobs are durable: the reaper enqueues them when the broker is back
            log.exception("delivery %s: enqueueing failed; the reaper will retry", delivery)
            await asyncio.to_thread(svc.store.leases.mark_enqueued, recorded.job_ids, undo=True)
    # The outcome is computed once, where the delivery is recorded.
    status = recorded.outcome
    return _answer(202, status=status, jobs=list(recorded.job_ids), notes=list(recorded.notes)), status
