"""`patchgate`: the command line. Each subcommand lives in its own module.

A subcommand module exposes ``HELP: str``, ``add_arguments(parser)`` and
``command(args) -> int``; it is imported only when its command runs, so a
quick command never pays for litellm or the web stack.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType, ModuleType

# Exit codes of `patchgate run`; documented in the README.
EXIT_SUCCESS = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_NEUTRAL = 3

COMMANDS: dict[str, str] = {
    "run": "bot.commands.run",
    "rank": "bot.commands.rank",
    "demo": "bot.commands.demo",
    "schema": "bot.commands.schema",
    "policy": "bot.commands.policy",
    "sandbox": "bot.commands.sandbox",
    "image": "bot.commands.image",
    "serve": "bot.commands.serve",
    "worker": "bot.commands.worker",
    "setup": "bot.commands.setup",
    "calibrate": "bot.commands.calibrate",
}

EPILOG = """exit codes (run, demo):
  0  success
  1  failure: the PR does not pass its gate
  2  usage or configuration error
  3  neutral or action_required: infrastructure trouble, or a maintainer must look
"""


def _load(name: str) -> ModuleType:
    return importlib.import_module(COMMANDS[name])


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """Build the argument parser; with ``only`` set, import just that subcommand's module."""
    parser = argparse.ArgumentParser(
        prog="patchgate",
        description="Gate pull requests written by coding agents by running them.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        if only is not None and name != only:
            sub.add_parser(name, help="")
            continue
        module = _load(name)
        p = sub.add_parser(
            name,
            help=module.HELP,
            description=module.HELP,
            epilog=EPILOG if name in ("run", "demo") else None,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        module.add_arguments(p)
    return parser


# Commands that drive the sandbox from this process: terminating one removes its containers.
SANDBOX_COMMANDS = ("run", "rank", "demo")
# How long SIGTERM waits for container creations already sent to the engine.
TERMINATE_WAIT_S = 20.0


def _terminate(signum: int, _frame: FrameType | None) -> None:
    """On SIGTERM, remove this process's sandbox containers, then exit at once as terminated."""
    from sandbox.engine import docker_client
    from sandbox.errors import SandboxError
    from sandbox.reaper import close_creations, remove_owned

    # No new containers from here on, and the creations already sent to the engine
    # finish first, so the sweep below sees every container this process has.
    close_creations(TERMINATE_WAIT_S)
    try:
        client = docker_client()
    except SandboxError:
        os._exit(128 + signum)
    remove_owned(client)
    # Not SystemExit: worker threads would go on starting containers until they finish.
    os._exit(128 + signum)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the `patchgate` command line and return its exit code."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    chosen = next((a for a in args_list if not a.startswith("-")), None)
    only = chosen if chosen in COMMANDS else None
    parser = build_parser(only)
    args = parser.parse_args(args_list)
    if args.command in SANDBOX_COMMANDS and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminate)
    result: int = _load(args.command).command(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
