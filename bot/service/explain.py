"""The jobs that answer a comment: ``/patchgate explain``, ``help`` and a word that is no command.

None of them ever posts a check run, not even a neutral one on a failure: a
later run of the same name would stand in for the real verdict on a required
check.
"""

from __future__ import annotations

import logging

from bot.github.client import GitHubError, InstallationGone
from bot.github.events import UNKNOWN
from bot.service import commenting
from bot.service.attempt import Attempt
from bot.store.tables import DONE

log = logging.getLogger(__name__)


async def run(attempt: Attempt) -> None:
    """Reply to /patchgate explain with the PR's newest stored report."""
    job, services = attempt.job, attempt.services
    try:
        detail = await commenting.explain(
            attempt.client, services.store, services.settings.github_url, job.repository, job.pr_number
        )
    except (GitHubError, InstallationGone) as exc:
        log.warning("job %s: the explain reply failed: %s", job.id, exc)
        detail = f"the explain reply failed: {exc}"
    await attempt.finish(DONE, detail=detail)


async def reply(attempt: Attempt) -> None:
    """Answer /patchgate help, or a /patchgate word that is no command."""
    job, client = attempt.job, attempt.client
    unknown = job.argument if job.trigger == UNKNOWN else None
    try:
        await client.comment(job.repository, job.pr_number, commenting.help_reply(unknown))
        detail = "listed the commands" if unknown is None else f"answered the unknown command {unknown!r}"
    except (GitHubError, InstallationGone) as exc:
        log.warning("job %s: the command reply failed: %s", job.id, exc)
        detail = f"the command reply failed: {exc}"
    if job.comment_id is not None:
        reaction = commenting.ACCEPTED if unknown is None else commenting.NOT_UNDERSTOOD
        await commenting.react(client, job.repository, job.comment_id, reaction)
    await attempt.finish(DONE, detail=detail)
