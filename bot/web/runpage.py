"""The run's details page and its JSON form: what a reader may see, and the headers it travels with. No I/O.

The page is reached through the check run's details link, whose token is the
only thing keeping a private repository's report private: it is never cached
(``no-store``), never sent on as a referrer, never framed, and it loads
nothing (the CSP allows no script, no image, no connection). The JSON form
lists the job's public facts only: no worker host name, no installation id.
"""

from __future__ import annotations

import html
from importlib.resources import files
from string import Template
from typing import Any

from bot.store.leases import JobView

# Every answer of the service carries these; /runs answers add PRIVATE.
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; "
        "frame-ancestors 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
PRIVATE = {"Cache-Control": "no-store", "Pragma": "no-cache"}

# Read once at import: a missing template fails the service's start, not a reader's request.
_TEMPLATE = Template(files("bot.web").joinpath("templates/run.html").read_text(encoding="utf-8"))

_PUBLIC_FIELDS = (
    "id",
    "repository",
    "pr_number",
    "head_sha",
    "trigger",
    "state",
    "conclusion",
    "attempts",
    "detail",
    "created_at",
    "updated_at",
)


# The trigger of a run made without GitHub (patchgate run, patchgate demo; Store.add_local_job).
LOCAL = "local"


def links(job: JobView, github_url: str) -> dict[str, str]:
    """Return the pull request's page and, once it exists, the check run's (a local run has neither)."""
    if job.trigger == LOCAL:
        return {}
    found = {"pull_request": f"{github_url}/{job.repository}/pull/{job.pr_number}"}
    if job.check_run_id is not None:
        found["check_run"] = f"{github_url}/{job.repository}/runs/{job.check_run_id}"
    return found


def public_job(job: JobView, github_url: str) -> dict[str, Any]:
    """Return the job as the JSON form shows it."""
    shown: dict[str, Any] = {name: getattr(job, name) for name in _PUBLIC_FIELDS}
    shown["links"] = links(job, github_url)
    return shown


def page(job: JobView, text: str, github_url: str) -> str:
    """Return the HTML page: where the run belongs, its state, and the report as text.

    Every value is escaped here; the template (templates/run.html) holds markup only.
    """
    found = links(job, github_url)
    anchors = " · ".join(
        f'<a href="{html.escape(url)}" rel="noreferrer">{label}</a>'
        for label, url in (("pull request", found.get("pull_request")), ("check run", found.get("check_run")))
        if url is not None
    )
    head = html.escape(job.head_sha[:12])
    if job.trigger == LOCAL:  # no pull request, no queue: no #0, no link to nowhere, no attempts
        where = f"{html.escape(job.repository)} · local run @ {head}"
        facts = f"conclusion: {html.escape(job.conclusion or '-')} · run by patchgate run or patchgate demo"
    else:
        where = f"{html.escape(job.repository)} #{job.pr_number} @ {head}"
        facts = (
            f"state: {html.escape(job.state)} · conclusion: {html.escape(job.conclusion or '-')}"
            f" · attempts: {job.attempts}"
        )
    return _TEMPLATE.substitute(
        job_id=job.id, where=where, links=anchors or "", facts=facts, report=html.escape(text)
    )
