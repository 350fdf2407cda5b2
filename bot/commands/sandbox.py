"""`patchgate sandbox build`: build the sandbox base image (from packages when no registry)."""

from __future__ import annotations

import argparse

HELP = "manage the sandbox images (`patchgate sandbox build`)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True)
    build = sub.add_parser("build", help="build the base image; a no-op when it is up to date")
    build.add_argument(
        "--from-registry", action="store_true", help="build FROM python:3.11-slim (needs a registry)"
    )
    build.add_argument("--force", action="store_true", help="rebuild even when the image exists")


def command(args: argparse.Namespace) -> int:
    from sandbox.cli import build_command

    return build_command(from_registry=args.from_registry, force=args.force)
