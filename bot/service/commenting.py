"""PR comments: the sticky summary (policy ``report.comment``) and the ``/patchgate explain`` reply.

Both are advisory: the check run is the verdict, so a comment GitHub refuses
(no issues/pull_requests write permission, a locked conversation) is logged
and never turns a delivered run into an error.
"""

from __future__ import annotations

import asyncio
import logging

from bot.github.client import GitHubError, Installation, InstallationGone
from bot.store import Store
from checks.render.comment import MARKER, CommentMode, render_comment, render_explain, wants_comment
from checks.report import Report

log = logging.getLogger(__name__)


def check_run_url(github_url: str, repository: str, check_run_id: int) -> str:
    """Return the check run's page (GitHub's ``html_url`` of a check run has this form)."""
    return f"{github_url}/{repository}/runs/{check_run_id}"


async def post_summary(
    client: Installation, repository: str, number: int, report: Report, *, mode: CommentMode, url: str
) -> None:
    """Create or edit the PR's one sticky summary comment, as the policy asks; never raises."""
    if mode == "off":  # the default: not even a listing of the comments
        return
    try:
        existing = await client.find_comment(repository, number, MARKER)
        if wants_comment(mode, report.conclusion, exists=existing is not None):
            await client.comment(repository, number, render_comment(report, url), comment_id=existing)
    except (GitHubError, InstallationGone) as exc:
        log.warning("summary comment on %s#%s failed (needs issues or pull_requests write): %s",
                    repository, number, exc)  # fmt: skip


async def explain(client: Installation, store: Store, github_url: str, repository: str, number: int) -> str:
    """Reply to ``/patchgate explain`` with the reasons of the PR's latest report; return what was done."""
    latest = await asyncio.to_thread(store.latest_run, repository, number)
    report = Report.model_validate(latest[0]) if latest is not None else None
    run_id = latest[1] if latest is not None else None
    url = check_run_url(github_url, repository, run_id) if run_id is not None else None
    await client.comment(repository, number, render_explain(report, url))
    return "explained the latest run" if report is not None else "no run to explain"
