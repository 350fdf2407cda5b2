"""`patchgate calibrate`: how often the judge agrees with execution, from the store's judge records."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

DEFAULT_POLICY = Path(".github/patchgate.yml")
MISSING_EXTRA = (
    "patchgate calibrate: the calibration table needs scipy (its kappa bootstrap), which the "
    "`calibrate` extra installs: pip install 'patchgate[calibrate]'"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config", type=Path, help="config file (default: $PATCHGATE_CONFIG or .state/patchgate.env)"
    )
    parser.add_argument(
        "--min-n",
        type=int,
        help="failing PRs a model needs before it counts as calibrated "
        "(default: quality.calibration_min_n of the policy)",
    )
    parser.add_argument(
        "--policy",
        type=Path,
        help=f"the policy whose quality.calibration_min_n applies (default: {DEFAULT_POLICY} "
        "in the current directory when it exists, else the default policy's)",
    )


def min_n(args: argparse.Namespace) -> tuple[int, str]:
    """Return the calibration threshold and where it came from; ValueError for a bad policy file."""
    from checks.policy import Policy
    from checks.policyfile import PolicyError, load_policy

    if args.min_n is not None:
        if args.min_n < 1:
            raise ValueError("--min-n must be at least 1")
        return args.min_n, "--min-n"
    path = args.policy if args.policy is not None else DEFAULT_POLICY
    if args.policy is None and not path.is_file():
        return Policy().quality.calibration_min_n, "the default policy"
    try:
        policy = load_policy(path.read_text(encoding="utf-8", errors="replace"))
    except OSError as exc:
        raise ValueError(f"--policy {path}: {exc.strerror or exc}") from exc
    except PolicyError as exc:
        raise ValueError(str(exc)) from exc
    return policy.quality.calibration_min_n, f"quality.calibration_min_n in {path}"


def command(args: argparse.Namespace) -> int:
    if importlib.util.find_spec("scipy") is None:  # before the store is opened or migrated
        print(MISSING_EXTRA, file=sys.stderr)
        return 2
    from bot.service.judging import stored_records
    from bot.settings import load_settings
    from bot.store import Store
    from checks.quality import calibration_table, render_calibration

    try:
        threshold, source = min_n(args)
    except ValueError as exc:
        print(f"patchgate calibrate: {exc}", file=sys.stderr)
        return 2
    store = Store(load_settings(args.config).database_url)
    try:
        store.migrate()
        records = stored_records(store)
    finally:
        store.close()
    noun = "failing PR" if threshold == 1 else "failing PRs"
    table = calibration_table(records, min_n=threshold)
    print(render_calibration(table, f"{threshold} {noun} ({source})"), end="")
    return 0
