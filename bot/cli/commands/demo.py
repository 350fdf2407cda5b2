"""`patchgate demo`: gate the bundled examples' agent PRs and print their reports."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--example",
        type=Path,
        help="one example directory (default: the bundled examples/duration and dayone)",
    )
    parser.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    parser.add_argument("--keep", type=Path, help="build the example repository here and keep it")
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="say on stderr as each layer of each PR finishes (default: when stderr is a terminal)",
    )
    parser.add_argument(
        "--database",
        default="sqlite:///.state/demo.db",
        help="where the runs are recorded (default: sqlite:///.state/demo.db)",
    )


def command(args: argparse.Namespace) -> int:
    from bot.cli.commands.run import EXIT_CODES
    from bot.cli.demo_repo import BUNDLED_EXAMPLES, bundled_example
    from bot.settings import load_settings
    from sandbox.errors import SandboxError

    examples = [args.example] if args.example is not None else [bundled_example(n) for n in BUNDLED_EXAMPLES]
    for example in examples:
        if not (example / "repo").is_dir():
            print(f"patchgate demo: {example} is not an example directory", file=sys.stderr)
            return 2
    judge = load_settings().judge()
    results: list[tuple[str, str, str]] = []
    for example in examples:
        try:
            gated = _gate_example(example, args, judge)
        except _DemoError as exc:
            print(f"patchgate demo: {exc}", file=sys.stderr)
            return 2
        except SandboxError as exc:
            print(f"patchgate demo: sandbox: {exc}", file=sys.stderr)
            return 3
        results += gated
    print("\n=== summary ===")
    ok = True
    for branch, expected, got in results:
        mark = "✓" if got == expected else "✗"
        ok &= got == expected
        print(f"{mark} {branch:32} expected {expected:16} got {got}")
    print(f"runs recorded in {args.database}")
    if not ok:
        print("patchgate demo: a conclusion differs from the example's expectation", file=sys.stderr)
    return 0 if ok else EXIT_CODES["failure"]


class _DemoError(Exception):
    """The example directory is malformed."""


def _gate_example(example: Path, args: argparse.Namespace, judge: Any) -> list[tuple[str, str, str]]:
    """Gate one example's PRs, print their reports (and a ranking where they compete for one issue)."""
    from bot.cli.commands.rank import render_ranking
    from bot.cli.commands.run import progress_printer, render
    from bot.cli.demo_repo import ExampleError, build_example, example_suites
    from bot.cli.local import LocalRun, run_local
    from bot.cli.rank import rank_reports
    from bot.cli.stdout import to_stderr
    from bot.store.localruns import record_local_run
    from checks.pipeline import Given
    from checks.quality.inputs import Task
    from checks.report import Report
    from sandbox.docker import WARM_PER_SHAPE, DockerSandbox

    print(f"\n##### example {example.name} #####", flush=True)
    with tempfile.TemporaryDirectory(prefix="patchgate-demo-") as tmp:
        repo = args.keep / example.name if args.keep is not None else Path(tmp) / "repo"
        try:
            prs = build_example(example, repo)
        except ExampleError as exc:
            raise _DemoError(str(exc)) from exc
        suites = example_suites(example)
        runner = DockerSandbox(warm=WARM_PER_SHAPE)
        results: list[tuple[str, str, str]] = []
        reports: dict[str, Report] = {}
        for pr in prs:
            print(f"\n=== {pr.branch}: {pr.title} (by {pr.author}) ===", flush=True)
            run = LocalRun(repo, "main", pr.branch, Given(suites, Task(pr.title, pr.body), judge))
            with to_stderr():  # the reports are the demo's stdout, not library banners
                report = run_local(run, runner, on_progress=progress_printer(args.progress))
            sys.stdout.write(render(report, args.format))
            record_local_run(args.database, f"example/{example.name}", pr.branch, report)
            results.append((pr.branch, pr.expected, report.conclusion))
            reports[pr.branch] = report
        runner.close()  # what it made ahead for this example's runs (at exit too, should a run fail)
        issues = {pr.closes for pr in prs}
        if len(prs) > 1 and len(issues) == 1 and None not in issues:
            # The PRs compete for one issue: best of k, by execution.
            print(f"\n=== best of {len(reports)} ===")
            sys.stdout.write(render_ranking(rank_reports(repo, reports, f"#{prs[0].closes}"), args.format))
    return results
