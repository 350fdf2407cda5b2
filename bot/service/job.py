"""One attempt at one job, dispatched on its trigger to the module that does it.

A PR closed or merged: withdraw.py. ``/patchgate help`` or an unknown word,
``/patchgate explain``: explain.py. A job cancelled before it ran: cancel.py.
Everything else gates the PR: gate.py. What they share is attempt.py.
"""

from __future__ import annotations

from bot.github.events import EXPLAIN, REPLIES, WITHDRAWN_CLOSED, WITHDRAWN_MERGED
from bot.service import cancel, explain, gate, withdraw
from bot.service.attempt import Attempt
from bot.service.commenting import ACCEPTED, react


class JobRun(Attempt):
    """One claimed attempt at one job, acting as the job's installation."""

    async def run(self) -> None:
        """Do the job its trigger names; raises for infrastructure trouble (GitHubError, ...)."""
        job = self.job
        if job.trigger in (WITHDRAWN_CLOSED, WITHDRAWN_MERGED):
            await withdraw.run(self)
            return
        if job.trigger in REPLIES:
            await explain.reply(self)
            return
        if job.comment_id is not None and job.attempts == 1:
            # The command was taken: say so on its comment before the work (a gate takes minutes).
            await react(self.client, job.repository, job.comment_id, ACCEPTED)
        if job.trigger == EXPLAIN:
            await explain.run(self)
            return
        if job.cancel_reason:
            await cancel.run(self, job.cancel_reason)
            return
        await gate.run(self)
