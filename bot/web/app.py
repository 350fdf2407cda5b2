"""The web service's app: its lifespan (store, queue, in-process workers), routes and headers.

The routes live in bot/web/routes.py; this builds what they read
(``app.state.service``) and adds the security headers to every answer.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from fastapi import FastAPI

from bot.github import app as github
from bot.github import payloads
from bot.service.attempt import PipelineFn
from bot.service.queue import JobQueue
from bot.service.runtokens import run_tokens
from bot.service.worker import Worker, default_runner
from bot.settings import Settings, load_settings
from bot.store import Store
from bot.store.topology import check_store, describe
from bot.web import routes
from bot.web.headers import SecurityHeaders
from bot.web.intake import Intake
from bot.web.routes import Service
from checks.pipeline import run_pipeline
from checks.runner import Runner

log = logging.getLogger(__name__)


def create_app(
    settings: Settings | None = None,
    *,
    pipeline: PipelineFn = run_pipeline,
    runner_factory: Callable[[], Runner] = default_runner,
    workers: bool | None = None,
) -> FastAPI:
    """Build the app; ``workers`` (default: when the broker is in-memory) runs jobs in this process."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        conf = settings if settings is not None else load_settings()
        secret = conf.require_webhook_secret()
        queue = JobQueue(conf.broker, conf.concurrency)
        in_process = workers if workers is not None else queue.in_process
        check_store(conf, jobs_elsewhere=not in_process)
        store = Store(conf.database_url)
        await asyncio.to_thread(store.migrate)
        worker = None
        if in_process:
            worker = Worker(conf, store, queue, pipeline=pipeline, runner_factory=runner_factory)
            await worker.start()
        else:
            await queue.start()
        intake = Intake(
            functools.partial(store.deliveries.record_batch, enqueued=True), writers=store.writers
        )
        intake.start()
        app.state.service = Service(conf, secret, store, queue, worker, run_tokens(conf), intake)
        # Warm githubkit up in the background: /readyz says "in progress" until it is done.
        app.state.warm = asyncio.create_task(asyncio.to_thread(_warm_up))
        log.info(
            "patchgate serving",
            extra={**describe(conf), "workers_in_process": worker is not None},
        )
        try:
            yield
        finally:
            await asyncio.to_thread(intake.stop)
            if worker is not None:
                await worker.stop()
            else:
                await queue.stop()
            store.close()

    app = FastAPI(title="patchgate", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)

    app.include_router(routes.router)
    app.add_middleware(SecurityHeaders)
    return app


def _warm_up() -> None:
    payloads.warm_up()
    github.warm_up()
    # What the process has built by now (modules, githubkit's and pydantic's models, ~170,000
    # objects) lives as long as it does. A full collection walked all of them: a pause of
    # ~100 ms for every thread, the event loop's too, a few times a minute under load
    # (bench/README.md, ingress.py). Frozen, collections skip them; garbage goes first.
    gc.collect()
    gc.freeze()
