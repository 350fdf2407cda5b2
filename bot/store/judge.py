"""The judge's records (calibration) and its verdict cache, shared by every process."""

from __future__ import annotations

import time
from dataclasses import dataclass

from sqlalchemy import select

from bot.store.database import Part
from bot.store.tables import JudgeRecord, VerdictCache
from checks.quality.calibration import JudgeRecord as CalibrationRecord
from checks.report import CriterionResult


@dataclass(frozen=True, kw_only=True)
class JudgeRow:
    model: str
    rubric: str
    execution_passed: bool
    judge_passed: bool
    shadow: bool
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    def record(self) -> CalibrationRecord:
        """Return this row as the plain record checks.quality's statistics take."""
        return CalibrationRecord(
            self.execution_passed,
            self.judge_passed,
            self.model,
            self.rubric,
            self.prompt_tokens,
            self.completion_tokens,
            self.cost_usd,
        )


class Judge(Part):
    """What the judge said: calibration records per run and cached verdicts per input."""

    def add(self, job_id: int, repository: str, head_sha: str, row: JudgeRow) -> None:
        with self._tx() as s:
            s.add(
                JudgeRecord(
                    job_id=job_id,
                    repository=repository,
                    head_sha=head_sha,
                    model=row.model,
                    rubric=row.rubric,
                    execution_passed=row.execution_passed,
                    judge_passed=row.judge_passed,
                    shadow=row.shadow,
                    prompt_tokens=row.prompt_tokens,
                    completion_tokens=row.completion_tokens,
                    cost_usd=row.cost_usd,
                    created_at=time.time(),
                )
            )

    def records(self, repository: str | None = None) -> list[JudgeRow]:
        """Return the judge's calibration records, oldest first (of one repository, when given)."""
        with self._tx() as s:
            stmt = select(JudgeRecord).order_by(JudgeRecord.id)
            if repository is not None:
                stmt = stmt.where(JudgeRecord.repository == repository)
            return [
                JudgeRow(
                    model=r.model,
                    rubric=r.rubric,
                    execution_passed=r.execution_passed,
                    judge_passed=r.judge_passed,
                    shadow=r.shadow,
                    prompt_tokens=r.prompt_tokens,
                    completion_tokens=r.completion_tokens,
                    cost_usd=r.cost_usd,
                )
                for r in s.scalars(stmt)
            ]

    def verdicts(self, key: str) -> list[CriterionResult] | None:
        """Return cached judge verdicts (checks.quality.VerdictCache ``get``)."""
        with self._tx() as s:
            rows = s.scalar(select(VerdictCache.verdicts).where(VerdictCache.key == key))
            return None if rows is None else [CriterionResult.model_validate(r) for r in rows]

    def put_verdicts(self, key: str, value: list[CriterionResult]) -> None:
        """Cache judge verdicts; the first answer for a key stays (checks.quality.VerdictCache ``put``)."""
        with self._tx() as s:
            self._insert_ignore(
                s,
                VerdictCache,
                {
                    "key": key,
                    "verdicts": [c.model_dump(mode="json") for c in value],
                    "created_at": time.time(),
                },
            )
