"""Check-run request bodies for each moment of a run. Pure: no I/O.

Field rules: https://docs.github.com/en/rest/checks/runs#create-a-check-run
and #update-a-check-run - `output.summary` at most 65,535 bytes; at most 50
annotations per request (more take several update requests, and GitHub
appends them); `actions` at most 3, label <= 20, description <= 40,
identifier <= 20 characters.
"""

from __future__ import annotations

from dataclasses import dataclass

from githubkit_schemas.latest.types import (
    ReposOwnerRepoCheckRunsCheckRunIdPatchBodyAnyof0Type as CompleteBody,
)
from githubkit_schemas.latest.types import (
    ReposOwnerRepoCheckRunsCheckRunIdPatchBodyAnyof1Type as UpdateBody,
)
from githubkit_schemas.latest.types import (
    ReposOwnerRepoCheckRunsCheckRunIdPatchBodyPropActionsItemsType as ActionItem,
)
from githubkit_schemas.latest.types import (
    ReposOwnerRepoCheckRunsCheckRunIdPatchBodyPropOutputPropAnnotationsItemsType as AnnotationItem,
)
from githubkit_schemas.latest.types import (
    ReposOwnerRepoCheckRunsCheckRunIdPatchBodyPropOutputType as Output,
)
from githubkit_schemas.latest.types import (
    ReposOwnerRepoCheckRunsPostBodyOneof0Type as CreateCompletedBody,
)
from githubkit_schemas.latest.types import (
    ReposOwnerRepoCheckRunsPostBodyOneof1Type as CreateBody,
)

from bot.github.events import JUDGE, RERUN
from checks.bestofk.ranking import Ranking
from checks.bestofk.render import rank_line, render_ranking_markdown
from checks.render import MAX_SUMMARY_BYTES, render_markdown
from checks.render.annotations import MAX_MESSAGE, Annotation, batches, render_annotations
from checks.render.markdown import MAX_TITLE_CHARS
from checks.render.numbers import QUALITY_LABEL, behaviour_numbers, quality_numbers, shape_numbers
from checks.report import Conclusion, Report

__all__ = [
    "CompleteBody",
    "Completion",
    "CreateBody",
    "CreateCompletedBody",
    "UpdateBody",
    "actions",
    "cancelled",
    "fit",
    "not_agent",
    "prepare",
    "progress",
    "ranked",
    "started",
]


def actions(report: Report | None = None) -> list[ActionItem]:
    """Return the buttons shown on a completed run."""
    buttons: list[ActionItem] = [
        {"label": "Re-run", "description": "Gate this commit again", "identifier": RERUN},
    ]
    # The judge normally runs only when behaviour passes; offer it when it did not run.
    if report is None or report.quality.status in ("skipped", "unavailable"):
        buttons.append(
            {
                "label": "Run judge anyway",
                "description": "Judge quality even if behaviour failed",
                "identifier": JUDGE,
            }
        )
    return buttons


def fit(text: str, limit: int = MAX_SUMMARY_BYTES) -> str:
    """Cut ``text`` to at most ``limit`` UTF-8 bytes without splitting a character."""
    encoded = text.encode()
    if len(encoded) <= limit:
        return text
    marker = "\n\n… (cut to fit GitHub's limit)"
    room = limit - len(marker.encode())
    return encoded[:room].decode("utf-8", "ignore") + marker


def started(name: str, head_sha: str, external_id: str, details_url: str, trigger: str) -> CreateBody:
    """Return the body that creates the check run, in progress, as soon as a job starts."""
    return {
        "name": name,
        "head_sha": head_sha,
        "external_id": external_id,
        "details_url": details_url,
        "status": "in_progress",
        "output": {
            "title": "Gating: shape, then behaviour, then quality",
            "summary": f"Started by `{trigger}` on `{head_sha[:12]}`. "
            "Progress appears here as each layer finishes.",
        },
    }


def progress(stage: str, report: Report) -> UpdateBody | None:
    """Return the update shown when a layer finishes (``None`` for the last stages)."""
    if stage in ("strength", "done"):
        # The completion follows at once; with strength.report_first the run is already completed,
        # and an in-progress update must never reopen it.
        return None
    lines = [f"- **shape**: {shape_numbers(report.shape)}"]
    if stage in ("behaviour", "quality"):
        lines.append(f"- **behaviour**: {behaviour_numbers(report.behaviour)}")
    if stage == "quality":
        lines.append(f"- **{QUALITY_LABEL}**: {quality_numbers(report.quality)}")
    return {
        "status": "in_progress",
        "output": {"title": f"Gating: {stage} finished", "summary": fit("\n".join(lines))},
    }


def _annotation(a: Annotation) -> AnnotationItem:
    return {
        "path": a.path,
        "start_line": a.start_line,
        "end_line": a.end_line,
        "annotation_level": a.level,
        "title": a.title[:255],
        # GitHub's limit is 64 KB of the message: in bytes, so a message of 4-byte characters (a tool
        # quoting a name the change chose) is cut by its encoding, never refused whole (a 422).
        "message": fit(a.message[:MAX_MESSAGE], MAX_MESSAGE),
    }


@dataclass(frozen=True)
class Completion:
    """A report rendered once for completing its check run: title, summary, annotations, buttons."""

    title: str
    summary: str
    annotations: tuple[AnnotationItem, ...]
    conclusion: Conclusion
    actions: tuple[ActionItem, ...]

    def bodies(self, *, sent: int = 0) -> tuple[list[UpdateBody], CompleteBody]:
        """Return the annotation-carrying updates and the final completing request, in order.

        Every annotation is sent, 50 per request; the last batch rides on the
        completing request so a completed run is never missing any. GitHub appends
        each request's annotations to the run's, so the first ``sent`` (the run's
        count when an earlier attempt got that far) are left out.
        """
        rest = list(self.annotations[max(sent, 0) :])
        groups = list(batches(rest)) or [[]]
        updates: list[UpdateBody] = []
        for group in groups[:-1]:
            updates.append({"output": {"title": self.title, "summary": self.summary, "annotations": group}})
        output: Output = {"title": self.title, "summary": self.summary}
        if groups[-1]:
            output["annotations"] = groups[-1]
        final: CompleteBody = {
            "status": "completed",
            "conclusion": self.conclusion,
            "output": output,
            "actions": list(self.actions),
        }
        return updates, final


def prepare(report: Report) -> Completion:
    """Render ``report`` for its check run (once: a retry only changes what is left to send)."""
    title, summary = render_markdown(report)
    items = tuple(_annotation(a) for a in render_annotations(report))
    return Completion(title, fit(summary), items, report.conclusion, tuple(actions(report)))


def ranked(report: Report, ranking: Ranking | None, you: str) -> UpdateBody:
    """Return the update that shows a best-of-k ranking on a completed run (None: takes it off).

    Only the output's title and summary change: annotations already sent stay, and the
    conclusion is execution's. The report is cut at a section boundary to leave room.
    """
    if ranking is None:
        title, summary = render_markdown(report)
        return {"output": {"title": title, "summary": fit(summary)}}
    section = render_ranking_markdown(ranking, you)
    room = MAX_SUMMARY_BYTES - len(section.encode()) - 2
    title, summary = render_markdown(report, limit=max(room, MAX_SUMMARY_BYTES // 4))
    title = f"{rank_line(ranking, you)} · {title}"
    return {"output": {"title": title[:MAX_TITLE_CHARS], "summary": fit(f"{summary}\n\n{section}")}}


def cancelled(reason: str) -> CompleteBody:
    """Return the body that closes a run that will not finish (superseded, PR closed)."""
    return {
        "status": "completed",
        "conclusion": "cancelled",
        "output": {
            "title": (reason[:1].upper() + reason[1:])[:200],
            "summary": fit(
                f"This run stopped: {reason}. Its result would describe a commit "
                "that is no longer the one to judge."
            ),
        },
    }


def not_agent(name: str, head_sha: str, external_id: str, details_url: str) -> CreateCompletedBody:
    """Return the neutral run a non-agent PR gets when policy asks for one (``agents.others: neutral``)."""
    return {
        "name": name,
        "head_sha": head_sha,
        "external_id": external_id,
        "details_url": details_url,
        "status": "completed",
        "conclusion": "neutral",
        "output": {
            "title": "Not an agent PR: not gated",
            "summary": "This pull request does not match `agents` in the base branch's "
            "`.github/patchgate.yml` (author, label or branch prefix), so patchgate did not run it.",
        },
    }
