"""`patchgate serve`: the GitHub App web service, with in-process workers by default."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config", type=Path, help="config file (default: $PATCHGATE_CONFIG or .state/patchgate.env)"
    )
    parser.add_argument("--host", help="address to listen on (default: PATCHGATE_HOST, 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port to listen on (default: PATCHGATE_PORT, 8000)")
    parser.add_argument(
        "--workers",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="run jobs in this process (default: yes with the in-memory broker, no with Redis)",
    )
    parser.add_argument(
        "--pipeline",
        "--gate",  # its former name
        metavar="MODULE:FUNCTION",
        help="the pipeline function (default: checks.pipeline:run_pipeline)",
    )


def command(args: argparse.Namespace) -> int:
    import uvicorn

    from bot import logs
    from bot.service.attempt import load_pipeline
    from bot.settings import SettingsError, check_state, load_settings
    from bot.store.topology import check_store
    from bot.web.app import create_app

    logs.configure(logging.INFO)
    settings = load_settings(args.config)
    overrides = {k: v for k, v in (("host", args.host), ("port", args.port)) if v is not None}
    settings = settings.model_copy(update=overrides)
    try:
        settings.require_webhook_secret()
        pipeline = load_pipeline(args.pipeline)
        workers = args.workers if args.workers is not None else settings.broker == "memory"
        if workers:
            settings.require_app()
        check_store(settings, jobs_elsewhere=not workers)
        check_state(settings, runs_jobs=workers)
    except (SettingsError, ValueError, ImportError) as exc:
        print(f"patchgate serve: {exc}", file=sys.stderr)
        return 2
    app = create_app(settings, pipeline=pipeline, workers=workers)
    # log_config=None: uvicorn keeps the JSON handler logs.configure installed.
    uvicorn.run(app, host=settings.host, port=settings.port, log_config=None, access_log=False)
    return 0
