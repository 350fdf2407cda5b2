"""`patchgate demo`: gate the bundled example agent PRs and print their reports."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--example", type=Path, help="the example directory (default: the bundled examples/duration)"
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
    from bot.cli.commands.rank import render_ranking
    from bot.cli.commands.run import EXIT_CODES, progress_printer, render
    from bot.cli.demo_repo import ExampleError, build_example, bundled_example, example_suites
    from bot.cli.local import LocalRun, run_local
    from bot.cli.rank import rank_reports
    from bot.cli.stdout import to_stderr
    from bot.settings import load_settings
    from bot.store.localruns import record_local_run
    from checks.pipeline import Given
    from checks.quality.inputs import Task
    from checks.report import Report
    from sandbox.docker import DockerSandbox
    from sandbox.errors import SandboxError

    if args.example is None:
        args.example = bundled_example()
    if not (args.example / "repo").is_dir():
        print(f"patchgate demo: {args.example} is not an example directory", file=sys.stderr)
        return 2
    judge = load_settings().judge()
    with tempfile.TemporaryDirectory(prefix="patchgate-demo-") as tmp:
        repo = args.keep if args.keep is not None else Path(tmp) / "repo"
        try:
            prs = build_example(args.example, repo)
        except ExampleError as exc:
            print(f"patchgate demo: {exc}", file=sys.stderr)
            return 2
        suites = example_suites(args.example)
        runner = DockerSandbox()
        results = []
        reports: dict[str, Report] = {}
        for pr in prs:
            print(f"\n=== {pr.branch}: {pr.title} (by {pr.author}) ===", flush=True)
            run = LocalRun(repo, "main", pr.branch, Given(suites, Task(pr.title, pr.body), judge))
            try:
                with to_stderr():  # the reports are the demo's stdout, not library banners
                    report = run_local(run, runner, on_progress=progress_printer(args.progress))
            except SandboxError as exc:
                print(f"patchgate demo: sandbox: {exc}", file=sys.stderr)
                return 3
            sys.stdout.write(render(report, args.format))
            record_local_run(args.database, f"example/{args.example.name}", pr.branch, report)
            results.append((pr, report.conclusion))
            reports[pr.branch] = report
        # The PRs compete for one issue: best of k, by execution.
        print(f"\n=== best of {len(reports)} ===")
        sys.stdout.write(render_ranking(rank_reports(repo, reports, "#1"), args.format))
    print("\n=== summary ===")
    ok = True
    for pr, got in results:
        mark = "✓" if got == pr.expected else "✗"
        ok &= got == pr.expected
        print(f"{mark} {pr.branch:32} expected {pr.expected:16} got {got}")
    print(f"runs recorded in {args.database}")
    if not ok:
        print("patchgate demo: a conclusion differs from the example's expectation", file=sys.stderr)
    return 0 if ok else EXIT_CODES["failure"]
