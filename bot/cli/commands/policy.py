"""`patchgate policy check [FILE]`: validate a repository policy offline."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True)
    check = sub.add_parser("check", help="validate it; exit 2 naming the file, field and line if it is not")
    check.add_argument("file", nargs="?", type=Path, help="the policy file (default: .github/patchgate.yml)")


def command(args: argparse.Namespace) -> int:
    from checks.policy import POLICY_PATH
    from checks.policyfile import PolicyError, load_policy

    path: Path = args.file if args.file is not None else Path(POLICY_PATH)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        print(f"patchgate policy check: {path}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    try:
        load_policy(text, str(path))
    except PolicyError as exc:
        print(f"patchgate policy check: {exc}", file=sys.stderr)
        return 2
    print(f"{path}: valid")
    return 0
