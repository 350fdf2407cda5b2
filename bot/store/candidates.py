"""The store's side of best of k: candidate PRs per issue, and the pairwise judge's cached answers."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select

from bot.store.database import Part
from bot.store.tables import Candidate, Pairwise

OPEN = "open"


@dataclass(frozen=True, kw_only=True)
class CandidateRow:
    """One candidate PR as stored: what its ranking row and its check run need."""

    repository: str
    pr_number: int
    issue: int | None
    state: str
    title: str
    author: str
    base_sha: str
    head_sha: str
    head_repository: str
    job_id: int | None
    check_run_id: int | None
    ranked: bool = False


def _row(c: Candidate) -> CandidateRow:
    return CandidateRow(
        repository=c.repository,
        pr_number=c.pr_number,
        issue=c.issue,
        state=c.state,
        title=c.title,
        author=c.author,
        base_sha=c.base_sha,
        head_sha=c.head_sha,
        head_repository=c.head_repository,
        job_id=c.job_id,
        check_run_id=c.check_run_id,
        ranked=c.ranked,
    )


class Candidates(Part):
    """Candidates for best of k, and cached pairwise comparisons."""

    def save(self, row: CandidateRow) -> int | None:
        """Record a PR's latest gated head (open); return the issue it competed for before, if any."""
        with self._tx() as s:
            found = s.get(Candidate, (row.repository, row.pr_number))
            before = found.issue if found is not None else None
            if found is None:
                found = Candidate(repository=row.repository, pr_number=row.pr_number, ranked=False)
                s.add(found)
            found.issue, found.state, found.title, found.author = row.issue, OPEN, row.title, row.author
            found.base_sha, found.head_sha = row.base_sha, row.head_sha
            found.head_repository, found.job_id, found.check_run_id = (
                row.head_repository,
                row.job_id,
                row.check_run_id,
            )
            found.updated_at = time.time()
            return before

    def close(self, repository: str, pr_number: int, state: str) -> int | None:
        """Mark a PR closed or merged; return the issue it competed for (None: unknown or none)."""
        with self._tx() as s:
            found = s.get(Candidate, (repository, pr_number))
            if found is None:
                return None
            found.state, found.updated_at = state, time.time()
            return found.issue

    def for_issue(self, repository: str, issue: int) -> list[CandidateRow]:
        """Return the open candidates for ``issue``, by PR number."""
        with self._tx() as s:
            rows = s.scalars(
                select(Candidate)
                .where(Candidate.repository == repository, Candidate.issue == issue, Candidate.state == OPEN)
                .order_by(Candidate.pr_number)
            )
            return [_row(c) for c in rows]

    def set_ranked(self, repository: str, pr_number: int, ranked: bool) -> None:
        """Note whether the candidate's check run now shows a ranking."""
        with self._tx() as s:
            found = s.get(Candidate, (repository, pr_number))
            if found is not None:
                found.ranked = ranked

    def pairwise(self, key: str) -> dict[str, Any] | None:
        """Return a cached pairwise answer (None: never asked, or not answered in both orders)."""
        with self._tx() as s:
            return s.scalar(select(Pairwise.result).where(Pairwise.key == key))

    def put_pairwise(self, key: str, result: dict[str, Any]) -> None:
        """Cache a pairwise answer; the first answer for a key stays."""
        with self._tx() as s:
            self._insert_ignore(s, Pairwise, {"key": key, "result": result, "created_at": time.time()})
