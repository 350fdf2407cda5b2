"""The opt-in SARIF upload: a gated PR's findings also appear as code scanning alerts.

With ``PATCHGATE_UPLOAD_SARIF`` on, each delivered report is uploaded to
``refs/pull/<n>/head`` at the head commit, after the check run is complete.
The check run stays the verdict: an upload GitHub refuses (the installation
lacks ``security_events: write``, code scanning is off for a private
repository, a limit) is logged and counted, and the job still ends done.
"""

from __future__ import annotations

import logging

from bot import metrics
from bot.github.client import GitHubError, Installation, InstallationGone
from checks.render.sarif import installed_version, render_sarif
from checks.report import Report

log = logging.getLogger(__name__)

# Alerts from patchgate's uploads group under this category in code scanning (a workflow running
# the Action chooses its own with `category:`, so the two never replace each other's alerts).
APP_CATEGORY = "patchgate/app"


async def upload_findings(
    client: Installation, repository: str, pr_number: int, head_sha: str, report: Report
) -> None:
    """Upload the report's findings for the PR's head; never raise for what GitHub refuses."""
    sarif = render_sarif(report, version=installed_version(), category=APP_CATEGORY)
    ref = f"refs/pull/{pr_number}/head"
    try:
        upload = await client.upload_sarif(repository, commit_sha=head_sha, ref=ref, sarif=sarif)
    except (GitHubError, InstallationGone) as exc:
        metrics.SARIF_UPLOADS.labels(outcome="refused").inc()
        hint = ""
        if isinstance(exc, GitHubError) and exc.status == 403:
            hint = " (grant the App security_events: write, and enable code scanning on the repository)"
        log.warning("%s#%s: SARIF not uploaded: %s%s", repository, pr_number, exc, hint)
        return
    metrics.SARIF_UPLOADS.labels(outcome="uploaded").inc()
    log.info("%s#%s: SARIF uploaded to code scanning (%s)", repository, pr_number, upload)
