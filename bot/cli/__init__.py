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

# Each command: its module (imported only when that command runs) and its one-line help, here so
# `patchgate --help` imports no command at all.
COMMANDS: dict[str, tuple[str, str]] = {
    "run": (
        "bot.cli.commands.run",
        "gate the change base...head of a local git repository (no GitHub involved)",
    ),
    "rank": (
        "bot.cli.commands.rank",
        "gate competing candidate branches for one task and rank them by execution (best of k)",
    ),
    "demo": (
        "bot.cli.commands.demo",
        "gate the bundled examples' agent PRs (examples/duration, dayone) locally and print the reports",
    ),
    "schema": (
        "bot.cli.commands.schema",
        "print a JSON Schema: the report, the repository policy, or a rubric",
    ),
    "policy": (
        "bot.cli.commands.policy",
        "check a policy file (default .github/patchgate.yml) without running anything",
    ),
    "sandbox": (
        "bot.cli.commands.sandbox",
        "manage the sandbox images (`patchgate sandbox build`, `patchgate sandbox tag`)",
    ),
    "image": (
        "bot.cli.commands.image",
        "build the service image (`patchgate image build`): web and workers, from Debian packages alone",
    ),
    "serve": (
        "bot.cli.commands.serve",
        "serve the GitHub App: webhooks in, check runs out (jobs run in this process unless a broker is set)",
    ),
    "worker": (
        "bot.cli.commands.worker",
        "run jobs from the queue (scale-out; with the in-memory broker it polls the store for due jobs)",
    ),
    "setup": (
        "bot.cli.commands.setup",
        "create the GitHub App with GitHub's manifest flow and write its credentials to the config file",
    ),
    "calibrate": (
        "bot.cli.commands.calibrate",
        "print the judge calibration table (shadow verdicts vs execution) from the store",
    ),
}

EPILOG = """exit codes (run, demo):
  0  success
  1  failure: the PR does not pass its gate
  2  usage or configuration error
  3  neutral: patchgate could not measure (infrastructure trouble, no suites)
  4  action_required: a maintainer must look (hygiene, an invalid policy, a weak suite, ...)
"""


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("patchgate")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


def _load(name: str) -> ModuleType:
    return importlib.import_module(COMMANDS[name][0])


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """Build the argument parser; with ``only`` set, import just that subcommand's module."""
    parser = argparse.ArgumentParser(
        prog="patchgate",
        description="Gate pull requests written by coding agents by running them.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"patchgate {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (_, help_text) in COMMANDS.items():
        p = sub.add_parser(
            name,
            help=help_text,
            description=help_text,
            epilog=EPILOG if name in ("run", "demo") else None,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        if name == only:
            _load(name).add_arguments(p)
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
