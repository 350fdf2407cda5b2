"""`patchgate run`: gate base...head of a local git repository."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from checks.inputs import Suites
from checks.report import Report

HELP = "gate the change base...head of a local git repository (no GitHub involved)"

EXIT_CODES = {"success": 0, "failure": 1, "neutral": 3, "action_required": 3}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repo", type=Path, default=Path("."), help="the git repository (default: .)")
    parser.add_argument("--base", required=True, help="the base ref (merge-base semantics: base...head)")
    parser.add_argument("--head", required=True, help="the head ref: the PR's code")
    parser.add_argument("--hidden", type=Path, help="hidden suite directory (outside the repository)")
    parser.add_argument("--held-out", type=Path, help="held-out suite directory (outside the repository)")
    parser.add_argument("--policy", type=Path, help="policy file to use instead of the base tree's")
    parser.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    parser.add_argument("--out", type=Path, help="write the report here instead of stdout")


def render(report: Report, fmt: str) -> str:
    """Render the report in the chosen output format."""
    from checks.render import render_markdown, render_text

    if fmt == "json":
        return report.model_dump_json(indent=2) + "\n"
    if fmt == "markdown":
        _title, summary = render_markdown(report)
        return f"{summary}\n"
    return render_text(report)


def suites_arg(hidden: Path | None, held_out: Path | None) -> Suites:
    """Check that the suite directories exist and return them as absolute paths."""
    for label, path in (("--hidden", hidden), ("--held-out", held_out)):
        if path is not None and not path.is_dir():
            raise ValueError(f"{label} {path}: not a directory")
    return Suites(
        hidden=hidden.resolve() if hidden else None,
        held_out=held_out.resolve() if held_out else None,
    )


def command(args: argparse.Namespace) -> int:
    from bot.local import LocalRun, gate_local, judge_from_env
    from bot.stdout import to_stderr
    from checks.workspace import WorkspaceError
    from sandbox.docker import DockerSandbox
    from sandbox.errors import SandboxError

    try:
        suites = suites_arg(args.hidden, args.held_out)
        if args.policy is not None and not args.policy.is_file():
            raise ValueError(f"--policy {args.policy}: no such file")
        judge = judge_from_env()  # a PATCHGATE_JUDGE_* value that does not parse is a ValueError
    except ValueError as exc:
        print(f"patchgate run: {exc}", file=sys.stderr)
        return 2
    run = LocalRun(args.repo, args.base, args.head, suites, args.policy, judge=judge)
    try:
        # Only the report reaches stdout, whatever the judge's library prints on a failure.
        with to_stderr():
            report = gate_local(run, DockerSandbox())
    except WorkspaceError as exc:
        print(f"patchgate run: {exc}", file=sys.stderr)
        return 2
    except SandboxError as exc:
        print(f"patchgate run: sandbox: {exc}", file=sys.stderr)
        return 3
    text = render(report, args.format)
    if args.out is not None:
        args.out.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return EXIT_CODES[report.conclusion]
