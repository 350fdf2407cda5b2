"""A PR was closed or merged: take it out of its issue's ranking (no check run of its own)."""

from __future__ import annotations

import logging

from bot.github.events import WITHDRAWN_MERGED
from bot.service import ranking
from bot.service.attempt import Attempt
from bot.store.tables import DONE
from checks.policy import Policy

log = logging.getLogger(__name__)


async def run(attempt: Attempt) -> None:
    """Withdraw the PR from its ranking; a ranking that fails is logged, never a check run."""
    job, services = attempt.job, attempt.services
    state = "merged" if job.trigger == WITHDRAWN_MERGED else "closed"
    ranker = ranking.Ranker(
        attempt.client, services.store, services.settings, services.judge, Policy(), services.tarballs
    )
    try:
        detail = await ranking.withdraw(ranker, job.repository, job.pr_number, state)
    except Exception as exc:  # advisory: a closed PR must never get a neutral check run for this
        log.exception("job %s: ranking after #%s %s failed", job.id, job.pr_number, state)
        detail = f"ranking failed: {type(exc).__name__}: {exc}"
    await attempt.finish(DONE, detail=detail)
