"""`patchgate calibrate`: how often the judge agrees with execution, from the store's judge records."""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = "print the judge calibration table (shadow verdicts vs execution) from the store"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config", type=Path, help="config file (default: $PATCHGATE_CONFIG or .state/patchgate.env)"
    )
    parser.add_argument(
        "--min-n",
        type=int,
        default=30,
        help="failing PRs a model needs before it counts as calibrated (default: 30)",
    )


def command(args: argparse.Namespace) -> int:
    from bot.settings import load_settings
    from bot.store import Store
    from checks.quality import JudgeRecord, calibration_table, render_calibration

    store = Store(load_settings(args.config).database_url)
    try:
        store.migrate()
        records = [
            JudgeRecord(r.execution_passed, r.judge_passed, r.model, r.rubric) for r in store.judge_records()
        ]
    finally:
        store.close()
    print(render_calibration(calibration_table(records, min_n=args.min_n)), end="")
    return 0
