"""`patchgate worker`: a worker process (scale-out: Redis broker, PostgreSQL store, N of these)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config", type=Path, help="config file (default: $PATCHGATE_CONFIG or .state/patchgate.env)"
    )
    parser.add_argument(
        "--pipeline",
        "--gate",  # its former name
        metavar="MODULE:FUNCTION",
        help="the pipeline function (default: checks.pipeline:run_pipeline)",
    )


async def _serve(args: argparse.Namespace) -> int:
    from bot.service.attempt import load_pipeline
    from bot.service.queue import JobQueue
    from bot.service.worker import Worker
    from bot.settings import SettingsError, check_state, load_settings
    from bot.store import Store
    from bot.store.topology import check_store, describe

    settings = load_settings(args.config)
    try:
        settings.require_app()
        settings.require_webhook_secret()
        check_store(settings, jobs_elsewhere=True)
        check_state(settings)
        pipeline = load_pipeline(args.pipeline)
    except (SettingsError, ValueError, ImportError) as exc:
        print(f"patchgate worker: {exc}", file=sys.stderr)
        return 2
    from bot.github.app import warm_up

    if settings.metrics_port is not None:
        from bot import metrics

        metrics.serve(settings.metrics_port, settings.host)
    store = Store(settings.database_url)
    await asyncio.to_thread(store.migrate)
    # Load githubkit's models now, not inside the first job.
    await asyncio.to_thread(warm_up)
    worker = Worker(settings, store, JobQueue(settings.broker, settings.concurrency), pipeline=pipeline)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await worker.start()
    logging.getLogger(__name__).info("worker %s running", worker.name, extra=describe(settings))
    await stop.wait()
    await worker.stop()
    store.close()
    return 0


def command(args: argparse.Namespace) -> int:
    from bot import logs

    logs.configure(logging.INFO)
    return asyncio.run(_serve(args))
