"""Rank competing candidate branches of a local repository (`patchgate rank`, the demo).

Each head is gated as `patchgate run` gates it; candidates tied on execution
and all passing are compared by the pairwise judge in both orders
(checks.quality.pairwise), all comparisons sharing one judge time budget.
The ordering itself is checks.bestofk.ranking's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from bot.cli.local import LocalRun, read_policy, run_local
from checks.bestofk.ranking import Candidate, Pairwise, Ranking, execution_of, pairs_to_judge, rank
from checks.quality import compare_pairwise
from checks.quality.inputs import JudgeSettings
from checks.report import Report
from checks.runner import Runner
from checks.workspace import Workspace, from_git
from sandbox.host import run_process
from sandbox.trees import scratch


def head_commit(repo: Path, ref: str) -> tuple[str, str]:
    """Return (subject, ``Author <email>``) of the commit ``ref`` names."""
    done = run_process(
        ("git", "-C", str(repo), "log", "-1", "--format=%s%x1f%an <%ae>", ref, "--"),
        timeout=60, check=True, what=f"read the head commit of {ref}",
    )  # fmt: skip
    subject, _, author = done.stdout.decode("utf-8", "replace").strip().partition("\x1f")
    return subject, author


def candidates_of(repo: Path, reports: Mapping[str, Report]) -> list[Candidate]:
    """Return one candidate per gated head: its numbers, its head commit's subject and author."""
    out = []
    for head, report in reports.items():
        subject, author = head_commit(repo, head)
        out.append(Candidate(id=head, title=subject, agent=author, execution=execution_of(report)))
    return out


def judge_pairs(
    run: LocalRun, candidates: Sequence[Candidate], judge: JudgeSettings | None
) -> dict[frozenset[str], Pairwise]:
    """Ask the pairwise judge, in both orders, about every pair that execution could not separate."""
    pairs = pairs_to_judge(candidates)
    if not pairs or judge is None:
        return {}
    judge = judge.started()  # every comparison of the ranking shares one budget
    wanted = sorted({c.id for pair in pairs for c in pair})
    results: dict[frozenset[str], Pairwise] = {}
    with scratch("patchgate-rank-") as tmp:
        trees: dict[str, Workspace] = {
            head: from_git(run.repo, run.base, head, tmp / str(i)) for i, head in enumerate(wanted)
        }
        policy = read_policy(trees[wanted[0]].base_dir, run.policy_file)
        if not policy.quality.enabled:  # the pairwise judge is the judge: off means off
            return {}
        for a, b in pairs:
            found = compare_pairwise(trees[a.id], trees[b.id], policy, run.given.task, judge)
            results[frozenset((a.id, b.id))] = Pairwise(
                a=a.id, b=b.id, preferred=found.preferred, a_first=found.a_first, b_first=found.b_first,
                detail=found.detail,
            )  # fmt: skip
    return results


def rank_local(
    run: LocalRun, heads: Sequence[str], runner: Runner, *, target: str, image: str | None = None
) -> tuple[Ranking, dict[str, Report]]:
    """Gate each head against ``run.base`` and rank them; return the ranking and each head's report."""
    reports = {head: run_local(replace(run, head=head), runner, image=image) for head in heads}
    candidates = candidates_of(run.repo, reports)
    return rank(target, candidates, judge_pairs(run, candidates, run.given.judge)), reports


def rank_reports(repo: Path, reports: Mapping[str, Report], target: str) -> Ranking:
    """Rank heads already gated (the demo) by execution alone: a tie stays a tie."""
    return rank(target, candidates_of(repo, reports))
