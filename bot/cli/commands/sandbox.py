"""`patchgate sandbox build`: build the sandbox base image (from packages when no registry)."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True)
    build = sub.add_parser("build", help="build the base image; a no-op when it is up to date")
    build.add_argument(
        "--from-registry", action="store_true", help="build FROM python:3.11-slim (needs a registry)"
    )
    build.add_argument("--force", action="store_true", help="rebuild even when the image exists")
    tag = sub.add_parser("tag", help="print the tag the current recipe builds (a cache key); builds nothing")
    tag.add_argument("--from-registry", action="store_true", help="the tag of the registry-based recipe")


def command(args: argparse.Namespace) -> int:
    from sandbox.cli import build_command

    if args.action == "tag":
        from sandbox.images import base_image_tag

        print(base_image_tag(from_registry=args.from_registry))
        return 0
    return build_command(from_registry=args.from_registry, force=args.force)
