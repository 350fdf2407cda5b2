"""`patchgate rank`: gate competing candidate branches for one task and rank them (best of k)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from checks.bestofk.ranking import Ranking

EPILOG = """ranking: held-out pass rate, then hidden pass rate, then regressions, then blocking
shape findings; candidates tied on all four and all passing go to the pairwise judge
(PATCHGATE_JUDGE_*), asked in both orders; a preference counts only when both agree.

exit codes:
  0  ranked, and at least one candidate passes its gate
  1  ranked, and no candidate passes
  2  usage or configuration error
  3  infrastructure trouble (the sandbox)
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from bot.cli.commands.run import add_task_arguments

    parser.epilog = EPILOG
    parser.add_argument("--repo", type=Path, default=Path("."), help="the git repository (default: .)")
    parser.add_argument("--base", required=True, help="the base ref every candidate is gated against")
    parser.add_argument("--heads", required=True, help="the candidate refs, comma-separated (two or more)")
    parser.add_argument("--for", dest="target", default="the task", help='what they compete for, e.g. "#12"')
    parser.add_argument("--hidden", type=Path, help="hidden suite directory (outside the repository)")
    parser.add_argument("--held-out", type=Path, help="held-out suite directory (outside the repository)")
    parser.add_argument("--policy", type=Path, help="policy file to use instead of the base tree's")
    parser.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    parser.add_argument("--out", type=Path, help="write the ranking here instead of stdout")
    add_task_arguments(parser)


def heads_arg(value: str) -> list[str]:
    """Split --heads; two or more distinct refs."""
    heads = list(dict.fromkeys(h.strip() for h in value.split(",") if h.strip()))
    if len(heads) < 2:
        raise ValueError("--heads needs two or more distinct refs, comma-separated")
    return heads


def render_ranking(ranking: Ranking, fmt: str) -> str:
    """Render a ranking in the chosen output format (json: the Ranking model)."""
    from checks.bestofk.render import render_ranking_markdown, render_ranking_text

    if fmt == "json":
        return ranking.model_dump_json(indent=2) + "\n"
    if fmt == "markdown":
        return render_ranking_markdown(ranking) + "\n"
    return render_ranking_text(ranking)


def command(args: argparse.Namespace) -> int:
    from bot.cli.commands.run import judge_arg, suites_arg
    from bot.cli.local import LocalRun
    from bot.cli.rank import rank_local
    from bot.cli.stdout import emit, to_stderr
    from checks.pipeline import Given
    from checks.workspace import WorkspaceError
    from sandbox.docker import WARM_PER_SHAPE, DockerSandbox
    from sandbox.errors import SandboxError

    try:
        heads = heads_arg(args.heads)
        suites = suites_arg(args.hidden, args.held_out)
        judge, task = judge_arg(args)
    except ValueError as exc:
        print(f"patchgate rank: {exc}", file=sys.stderr)
        return 2
    run = LocalRun(
        args.repo, args.base, heads[0], Given(suites, task, judge), args.policy,
        author=args.author, database=args.database,
    )  # fmt: skip
    try:
        with to_stderr(), DockerSandbox(warm=WARM_PER_SHAPE) as sandbox:  # only the ranking reaches stdout
            ranking, _reports = rank_local(run, heads, sandbox, target=args.target)
    except WorkspaceError as exc:
        print(f"patchgate rank: {exc}", file=sys.stderr)
        return 2
    except SandboxError as exc:
        print(f"patchgate rank: sandbox: {exc}", file=sys.stderr)
        return 3
    emit(render_ranking(ranking, args.format), args.out)
    return 0 if ranking.passing else 1
