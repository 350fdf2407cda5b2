"""Best of k in the service: rank the open agent PRs competing for one issue, on each one's check run.

After a candidate's run is delivered (a push re-gates it), or when one is
closed or merged, the open candidates for its issue are ranked again
(checks.bestofk.ranking): by their stored reports, then - only for candidates tied on
execution and all passing - by the pairwise judge in both orders, whose
answers are cached by (model, head shas). Each candidate's check run gets
``rank r of k for #12`` in its title and the table of all candidates under
its summary; a candidate left alone gets its plain report back. Ranking is
advisory: no conclusion changes.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from bot.github import checkrun
from bot.github.client import GitHubError, Installation
from bot.github.linked import issue_text
from bot.github.tarballs import TarballCache
from bot.github.trees import fetch_workspace
from bot.settings import Settings
from bot.store import Store
from bot.store.candidates import CandidateRow
from checks.bestofk.ranking import Candidate, Pairwise, Ranking, execution_of, pairs_to_judge, rank
from checks.policy import POLICY_PATH, Policy
from checks.policyfile import PolicyError, load_policy
from checks.quality import compare_pairwise
from checks.quality.inputs import JudgeSettings, Task
from checks.report import Report
from checks.workspace import Workspace
from sandbox.trees import scratch

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Ranker:
    """What ranking needs: the installation, the store, the settings, the judge, the base's policy."""

    client: Installation
    store: Store
    settings: Settings
    judge: JudgeSettings | None
    policy: Policy
    tarballs: TarballCache | None = None

    async def rerank(self, repository: str, issue: int) -> Ranking | None:
        """Rank the open candidates for ``issue`` and show it on their check runs (None: fewer than 2)."""
        rows = await asyncio.to_thread(self.store.candidates.for_issue, repository, issue)
        reports = {row.pr_number: await self._report(row) for row in rows}
        if len(rows) < 2:
            for row in rows:
                if row.ranked and (report := reports[row.pr_number]) is not None:
                    await self._show(row, report, None)
            return None
        candidates = [self._candidate(row, reports[row.pr_number]) for row in rows]
        results = await self._pairwise(repository, issue, rows, candidates)
        ranking = rank(f"#{issue}", candidates, results)
        for row in rows:
            if (report := reports[row.pr_number]) is not None:
                await self._show(row, report, ranking)
        log.info("ranked %s candidates for %s#%s", len(rows), repository, issue)
        return ranking

    async def _report(self, row: CandidateRow) -> Report | None:
        data = await asyncio.to_thread(self.store.runs.report, row.job_id) if row.job_id is not None else None
        return Report.model_validate(data) if data else None

    def _candidate(self, row: CandidateRow, report: Report | None) -> Candidate:
        return Candidate(
            id=f"#{row.pr_number}",
            title=row.title,
            url=f"{self.settings.github_url}/{row.repository}/pull/{row.pr_number}",
            agent=row.author,
            execution=execution_of(report) if report is not None else None,
        )

    async def _show(self, row: CandidateRow, report: Report, ranking: Ranking | None) -> None:
        """Put the ranking on the candidate's check run (or take it off); never fails the caller."""
        if row.check_run_id is None:
            return
        body = checkrun.ranked(report, ranking, f"#{row.pr_number}")
        try:
            await self.client.update_check_run(row.repository, row.check_run_id, body)
        except GitHubError as exc:  # advisory: the next re-rank tries again
            log.warning("ranking: check run %s not updated: %s", row.check_run_id, exc)
            return
        await asyncio.to_thread(
            self.store.candidates.set_ranked, row.repository, row.pr_number, ranking is not None
        )

    async def _pairwise(
        self, repository: str, issue: int, rows: Sequence[CandidateRow], candidates: Sequence[Candidate]
    ) -> dict[frozenset[str], Pairwise]:
        pairs = pairs_to_judge(candidates)
        if not pairs or self.judge is None or not self.policy.quality.enabled:
            return {}
        by_id = {f"#{row.pr_number}": row for row in rows}
        results: dict[frozenset[str], Pairwise] = {}
        asked = []
        for a, b in pairs:
            key = pair_key(self.policy.quality.model, by_id[a.id].head_sha, by_id[b.id].head_sha, issue)
            cached = await asyncio.to_thread(self.store.candidates.pairwise, key)
            if cached is not None:
                results[frozenset((a.id, b.id))] = Pairwise(a=a.id, b=b.id, **cached)
            else:
                asked.append((a, b, key))
        if asked:
            results |= await self._ask(repository, issue, by_id, asked)
        return results

    async def _ask(
        self, repository: str, issue: int, by_id: dict[str, CandidateRow],
        asked: Sequence[tuple[Candidate, Candidate, str]],
    ) -> dict[frozenset[str], Pairwise]:  # fmt: skip
        """Ask the judge about each pair in both orders, sharing one time budget; cache full answers."""
        if self.judge is None:  # the caller checked; keep the type checker's word for it
            return {}
        judge = self.judge.started()
        found = await self.client.issue(repository, issue)
        task = Task(issue=issue_text([found] if found is not None else []))
        results: dict[frozenset[str], Pairwise] = {}
        with scratch("rank-", self.settings.work_dir) as tmp:
            trees: dict[str, Workspace] = {}
            for a, b, key in asked:
                for c in (a, b):
                    if c.id not in trees:
                        trees[c.id] = await self._workspace(by_id[c.id], tmp / c.id.lstrip("#"))
                answer = await asyncio.to_thread(
                    compare_pairwise, trees[a.id], trees[b.id], self.policy, task, judge
                )
                pair = Pairwise(
                    a=a.id, b=b.id, preferred=answer.preferred, a_first=answer.a_first,
                    b_first=answer.b_first, detail=answer.detail,
                )  # fmt: skip
                results[frozenset((a.id, b.id))] = pair
                if pair.a_first is not None and pair.b_first is not None:
                    await asyncio.to_thread(
                        self.store.candidates.put_pairwise, key, pair.model_dump(exclude={"a", "b"})
                    )
        return results

    async def _workspace(self, row: CandidateRow, dest: Path) -> Workspace:
        return await fetch_workspace(
            self.client, base_repo=row.repository, base_sha=row.base_sha,
            head_repo=row.head_repository or row.repository, head_sha=row.head_sha, dest=dest,
            cache=self.tarballs,
        )  # fmt: skip


def pair_key(model: str, a_sha: str, b_sha: str, issue: int) -> str:
    """Return the cache key of one ordered pair of heads judged by ``model`` for ``issue``."""
    return hashlib.sha256("\0".join((model, a_sha, b_sha, str(issue))).encode()).hexdigest()


async def enter(ranker: Ranker, row: CandidateRow) -> None:
    """Record a gated PR as a candidate and rank its issue (and the issue it competed for before)."""
    before = await asyncio.to_thread(ranker.store.candidates.save, row)
    for issue in sorted({n for n in (before, row.issue) if n is not None}):
        await ranker.rerank(row.repository, issue)


async def withdraw(ranker: Ranker, repository: str, pr_number: int, state: str) -> str:
    """Take a closed or merged PR out of its issue's ranking and rank the rest; say what was done.

    The rest are ranked under the policy at a remaining candidate's base, as its own run read it.
    """
    store, client = ranker.store, ranker.client
    issue = await asyncio.to_thread(store.candidates.close, repository, pr_number, state)
    if issue is None:
        return "not a candidate for an issue: nothing to rank"
    rest = await asyncio.to_thread(store.candidates.for_issue, repository, issue)
    try:
        text = await client.file_at(repository, POLICY_PATH, rest[0].base_sha) if rest else None
        policy = load_policy(text)
    except PolicyError as exc:
        return f"#{issue} not ranked again: {exc}"
    await replace(ranker, policy=policy).rerank(repository, issue)
    return f"#{pr_number} {state}: #{issue} ranked again ({len(rest)} open candidates)"
