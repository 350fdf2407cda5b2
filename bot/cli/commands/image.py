"""`patchgate image build`: build the service image FROM the debootstrapped rootfs (no registry)."""

from __future__ import annotations

import argparse
import sys
import time


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True)
    build = sub.add_parser("build", help="build patchgate:<digest> and patchgate:latest; a no-op when built")
    build.add_argument("--force", action="store_true", help="rebuild even when the image exists")


def command(args: argparse.Namespace) -> int:
    from sandbox.errors import SandboxError
    from sandbox.serviceimage import ensure_service_image

    started = time.monotonic()

    def progress(line: str) -> None:
        print(f"[image {time.monotonic() - started:6.1f}s] {line}", file=sys.stderr, flush=True)

    try:
        tag = ensure_service_image(force=args.force, log=progress)
    except SandboxError as exc:
        print(f"patchgate image build failed: {exc}", file=sys.stderr)
        return 1
    print(tag)
    return 0
