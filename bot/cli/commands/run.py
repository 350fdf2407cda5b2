"""`patchgate run`: gate base...head of a local git repository."""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
from collections.abc import Callable
from pathlib import Path

from checks.behaviour.suites import Suites
from checks.quality.inputs import JudgeSettings, Task
from checks.report import Report

# The README's table of exit codes; bot/cli/__init__.py's EPILOG says the same.
EXIT_CODES = {"success": 0, "failure": 1, "neutral": 3, "action_required": 4}
FORMATS = ("text", "markdown", "json", "sarif")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repo", type=Path, default=Path("."), help="the git repository (default: .)")
    parser.add_argument("--base", required=True, help="the base ref (merge-base semantics: base...head)")
    parser.add_argument("--head", required=True, help="the head ref: the PR's code")
    parser.add_argument("--hidden", type=Path, help="hidden suite directory (outside the repository)")
    parser.add_argument("--held-out", type=Path, help="held-out suite directory (outside the repository)")
    parser.add_argument(
        "--suites",
        metavar="SPEC",
        help="a test store instead of --hidden/--held-out: a directory, a git repository or "
        "git+URL[@REF] holding OWNER/REPO/{hidden,held-out}/ (needs --suites-for)",
    )
    parser.add_argument("--suites-for", metavar="OWNER/REPO", help="whose suites to take from --suites")
    parser.add_argument(
        "--suites-cache",
        type=Path,
        default=Path(".state/work/suites"),
        help="where fetched suites are kept by commit (default: .state/work/suites)",
    )
    parser.add_argument(
        "--differential-seed",
        metavar="HEX",
        help="draw a differential check's inputs from this seed (32 hex digits, as a report records it) "
        "instead of the one derived from the suites and the base sha",
    )
    parser.add_argument("--policy", type=Path, help="policy file to use instead of the base tree's")
    parser.add_argument("--format", choices=FORMATS, default="text")
    parser.add_argument("--out", type=Path, help="write the report here instead of stdout")
    extra = parser.add_argument_group("more outputs of the same run (e.g. for a CI job)")
    extra.add_argument("--markdown", type=Path, metavar="FILE", help="also write the check-run summary here")
    extra.add_argument("--sarif", type=Path, metavar="FILE", help="also write the findings in SARIF here")
    extra.add_argument("--json", type=Path, metavar="FILE", help="also write the JSON report here")
    extra.add_argument(
        "--sarif-category",
        default="patchgate/shape",
        metavar="NAME",
        help="the SARIF analysis category (automationDetails.id; default patchgate/shape): uploads of "
        "one category replace each other in code scanning",
    )
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="say on stderr as each layer finishes (default: when stderr is a terminal)",
    )
    extra.add_argument(
        "--workflow-commands",
        action="store_true",
        help="print the annotations as GitHub Actions workflow commands (on stdout, after the report)",
    )
    add_task_arguments(parser)


def add_task_arguments(parser: argparse.ArgumentParser) -> None:
    """Add --title, --body(-file), --issue(-file), --author and --database (shared with `rank`)."""
    task = parser.add_argument_group(
        "the quality layer, as the service runs it",
        "What the judge reads as the task, and the store whose verdict cache and calibration records "
        "the service used: with the same values, a service verdict's quality layer is reproduced.",
    )
    task.add_argument("--title", default="", help="the PR's title")
    body = task.add_mutually_exclusive_group()
    body.add_argument("--body", default="", help="the PR's description")
    body.add_argument("--body-file", type=Path, help="... read from a file")
    issue = task.add_mutually_exclusive_group()
    issue.add_argument("--issue", default="", help="the linked issue's text (title and body)")
    issue.add_argument("--issue-file", type=Path, help="... read from a file")
    task.add_argument("--author", default="", help="the PR author's login (self-preference note)")
    task.add_argument(
        "--label",
        action="append",
        default=[],
        help="a label of the PR (repeatable): a refactor's is compared with base (behaviour.differential)",
    )
    task.add_argument(
        "--database",
        metavar="URL",
        help="a store (e.g. the service's PATCHGATE_DATABASE_URL): use its judge verdict cache and "
        "calibration records",
    )


def render(report: Report, fmt: str, *, sarif_category: str = "patchgate/shape") -> str:
    """Render the report in the chosen output format."""
    from checks.render import render_document, render_text

    if fmt == "json":
        return report.model_dump_json(indent=2) + "\n"
    if fmt == "sarif":
        import json

        from checks.render.sarif import installed_version, render_sarif

        sarif = render_sarif(report, version=installed_version(), category=sarif_category)
        return json.dumps(sarif, indent=2) + "\n"
    if fmt == "markdown":
        return render_document(report) + "\n"
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


def seed_arg(seed: str | None) -> str | None:
    """Check a --differential-seed: 32 hex digits, as the report's ``differential[].seed`` has it."""
    if seed is not None and not re.fullmatch(r"[0-9a-f]{32}", seed):
        raise ValueError(f"--differential-seed {seed!r}: 32 hex digits, as a report records it")
    return seed


def store_arg(args: argparse.Namespace) -> Suites:
    """Return the suites from --suites/--suites-for, fetched (and cached by commit) when a repository."""
    import asyncio

    from bot.service.suitestore import SuiteStore

    if args.hidden is not None or args.held_out is not None:
        raise ValueError("--suites replaces --hidden and --held-out: give one or the other")
    if not args.suites_for:
        raise ValueError("--suites needs --suites-for OWNER/REPO (the folder in the store)")
    suites = asyncio.run(SuiteStore(args.suites, args.suites_cache.resolve()).suites(args.suites_for))
    if suites.error is not None:
        raise ValueError(f"--suites: {suites.error}")
    return suites


def task_arg(args: argparse.Namespace) -> Task:
    """Return the task the judge sees from --title, --body(-file) and --issue(-file)."""

    def text(value: str, path: Path | None, flag: str) -> str:
        if path is None:
            return str(value)
        try:
            return path.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise ValueError(f"{flag} {path}: {exc.strerror or exc}") from exc

    return Task(
        title=args.title,
        body=text(args.body, args.body_file, "--body-file"),
        issue=text(args.issue, args.issue_file, "--issue-file"),
    )


def judge_arg(args: argparse.Namespace) -> tuple[JudgeSettings | None, Task]:
    """Return the judge and the task of a local run (``run``, ``rank``); ValueError names what is wrong.

    The judge is the service's: PATCHGATE_JUDGE_* from the environment, then the config file; a
    value that does not parse is a ValueError (pydantic's ValidationError). ``--policy`` must name
    a file.
    """
    from bot.settings import load_settings

    if args.policy is not None and not args.policy.is_file():
        raise ValueError(f"--policy {args.policy}: no such file")
    return load_settings().judge(), task_arg(args)


def progress_printer(wanted: bool | None) -> Callable[[str, Report], None] | None:
    """Return a callback saying on stderr which layer finished, or None when nobody is watching."""
    if not (wanted if wanted is not None else sys.stderr.isatty()):
        return None
    import time

    from checks.render.numbers import behaviour_numbers, shape_numbers, shape_status, strength_numbers

    start = time.monotonic()

    def say(stage: str, report: Report) -> None:
        if stage == "shape":
            detail = f"{shape_status(report.shape)[1]} · {shape_numbers(report.shape)}"
        elif stage == "behaviour":
            detail = f"{report.behaviour.status} · {behaviour_numbers(report.behaviour)}"
        elif stage == "strength":
            detail = strength_numbers(report.behaviour.strength)
        elif stage == "done":
            stage, detail = "finished:", report.conclusion
        else:
            detail = "finished"
        print(f"patchgate: {stage} {detail} ({time.monotonic() - start:.0f}s)", file=sys.stderr, flush=True)

    return say


def command(args: argparse.Namespace) -> int:
    from bot.cli.local import LocalRun, run_local
    from bot.cli.stdout import emit, to_stderr
    from checks.pipeline import Given
    from checks.workspace import WorkspaceError
    from sandbox.docker import WARM_PER_SHAPE, DockerSandbox
    from sandbox.errors import SandboxError

    try:
        suites = store_arg(args) if args.suites is not None else suites_arg(args.hidden, args.held_out)
        suites = dataclasses.replace(suites, differential_seed=seed_arg(args.differential_seed),
                                     labels=tuple(args.label), title=args.title)  # fmt: skip
        judge, task = judge_arg(args)
    except ValueError as exc:
        print(f"patchgate run: {exc}", file=sys.stderr)
        return 2
    run = LocalRun(
        args.repo,
        args.base,
        args.head,
        Given(suites, task, judge),
        args.policy,
        author=args.author,
        database=args.database,
    )
    try:
        # Only the report reaches stdout, whatever the judge's library prints on a failure.
        with to_stderr(), DockerSandbox(warm=WARM_PER_SHAPE) as sandbox:
            report = run_local(run, sandbox, on_progress=progress_printer(args.progress))
    except WorkspaceError as exc:
        print(f"patchgate run: {exc}", file=sys.stderr)
        return 2
    except SandboxError as exc:
        print(f"patchgate run: sandbox: {exc}", file=sys.stderr)
        return 3
    category = args.sarif_category
    emit(render(report, args.format, sarif_category=category), args.out)
    for path, fmt in ((args.markdown, "markdown"), (args.sarif, "sarif"), (args.json, "json")):
        if path is not None:
            path.write_text(render(report, fmt, sarif_category=category), encoding="utf-8")
    if args.workflow_commands:
        from checks.render.workflow import render_workflow_commands

        sys.stdout.write(render_workflow_commands(report))
    return EXIT_CODES[report.conclusion]
