"""PR comments: the sticky summary (policy ``report.comment``), the command replies and reactions.

Both are advisory: the check run is the verdict, so a comment GitHub refuses
(no issues/pull_requests write permission, a locked conversation) is logged
and never turns a delivered run into an error.
"""

from __future__ import annotations

import asyncio
import difflib
import logging

from bot.github.client import GitHubError, Installation, InstallationGone, Reaction
from bot.store import Store
from checks.render.comment import MARKER, CommentMode, render_comment, render_explain, wants_comment
from checks.render.gfm import code
from checks.report import Report

log = logging.getLogger(__name__)

# Reactions on a command's comment (https://docs.github.com/en/rest/reactions): taken, or not understood.
ACCEPTED: Reaction = "+1"
NOT_UNDERSTOOD: Reaction = "confused"
# What each comment command does, in the order the help lists them.
COMMAND_HELP: dict[str, str] = {
    "rerun": "gates the pull request's latest head again: a fresh check run, like its **Re-run** button",
    "judge": "the same, and runs the quality judge even when behaviour failed (the **judge** button)",
    "explain": "replies with the reasons of the latest report and a link to its check run",
    "help": "this list",
}


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
        # Mostly a missing issues or pull_requests write; or GET /app refused: with no login of its
        # own patchgate cannot tell its comment from a copy, so it writes none rather than guess.
        log.warning("summary comment on %s#%s failed: %s", repository, number, exc)


async def explain(client: Installation, store: Store, github_url: str, repository: str, number: int) -> str:
    """Reply to ``/patchgate explain`` with the reasons of the PR's latest report; return what was done."""
    latest = await asyncio.to_thread(store.runs.latest, repository, number)
    report = Report.model_validate(latest[0]) if latest is not None else None
    run_id = latest[1] if latest is not None else None
    url = check_run_url(github_url, repository, run_id) if run_id is not None else None
    await client.comment(repository, number, render_explain(report, url))
    return "explained the latest run" if report is not None else "no run to explain"


def nearest_command(word: str) -> str | None:
    """Return the command ``word`` was most likely meant to be (``retry`` -> ``rerun``), if any."""
    first = word.split(maxsplit=1)[0].lower() if word.split() else ""
    found = difflib.get_close_matches(first, list(COMMAND_HELP), n=1, cutoff=0.5)
    return found[0] if found else None


def help_reply(unknown: str | None = None) -> str:
    """Return the reply to ``/patchgate help`` or to ``/patchgate <a word that is no command>``."""
    lines = []
    if unknown is not None:
        said = code(unknown, 60) or "`/patchgate`"
        guess = nearest_command(unknown)
        lines.append(
            f"patchgate has no command {said}" + (f": did you mean `/patchgate {guess}`?" if guess else ".")
        )
        lines.append("")
    lines.append(
        "Commands (on the first line of a comment, from the repository's owners, members and collaborators):"
    )
    lines += [f"- `/patchgate {name}`: {what}" for name, what in COMMAND_HELP.items()]
    return "\n".join(lines)


async def react(client: Installation, repository: str, comment_id: int, content: Reaction) -> bool:
    """Put a reaction on a command's comment; never raises (a reaction is a courtesy)."""
    try:
        await client.react(repository, comment_id, content)
    except (GitHubError, InstallationGone) as exc:
        log.warning("reaction %s on comment %s of %s failed: %s", content, comment_id, repository, exc)
        return False
    return True
