"""What a pull request links to and who wrote it, from GitHub's answers. Pure: no I/O.

- Linked issues: GitHub's closing keywords in the PR body ("closes #12",
  "Fixes: owner/repo#12", "resolves https://github.com/owner/repo/issues/12"),
  https://docs.github.com/en/issues/tracking-your-work-with-issues/using-issues/linking-a-pull-request-to-an-issue
  Only issues of the PR's own repository count: the App can read no other.
- The task text the judge sees for them (title and body of each).
- Provenance: the PR's author and each commit's author and co-authors, for
  the self-preference note (checks.quality.provenance).
- The issue a PR competes for when several agent PRs target one issue
  (best of k): a closing keyword, or a label or branch template of the policy.

Response shapes: GET /repos/{owner}/{repo}/issues/{n} and
GET /repos/{owner}/{repo}/pulls/{n}/commits (GitHub REST, read leniently).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from checks.policy import Ranking as RankingPolicy
from checks.quality.provenance import commit_signals

# At most this many linked issues are read and shown to the judge.
MAX_LINKED = 3
# An issue's text beyond this many characters is cut (the prompt budget clips the task again).
MAX_ISSUE_CHARS = 20_000

# Linear on any body (a PR's is up to 65,536 characters): the spaces around the colon are possessive
# (``\s*:?\s*`` split a run of spaces every way: 77 s for "fix", 64k spaces and a letter), and an
# owner or repository name is at most 100 characters, as GitHub's are (unbounded, each "fix" of a
# long "fix-fix-..." rescanned the rest of the run for its slash: quadratic). A longer name was
# never this repository's, so never linked.
_CLOSING = re.compile(
    r"\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\s*+:?\s*+"
    r"(?:(?P<repo>[\w.-]{1,100}/[\w.-]{1,100})#"
    r"|https?://[^\s/]++/(?P<url_repo>[\w.-]{1,100}/[\w.-]{1,100})/issues/|#)"
    r"(?P<number>\d{1,9})\b",
    re.IGNORECASE,
)


def _template(template: str) -> re.Pattern[str]:
    """Compile a policy template: ``{n}`` is the issue number, ``*`` any text, the rest literal."""
    parts = [re.escape(p).replace(r"\*", ".*") for p in template.split("{n}")]
    return re.compile(r"(\d{1,9})".join(parts))


def competes_for(
    body: str, labels: Sequence[str], head_ref: str, repository: str, policy: RankingPolicy
) -> int | None:
    """Return the issue a PR competes for: its first closing keyword, else a label, else its branch.

    Labels and branches are matched against the policy's templates (``ranking.labels``,
    ``ranking.branches``); None when nothing names an issue or ranking is off.
    """
    if not policy.enabled:
        return None
    closing = linked_issues(body, repository)
    if closing:
        return closing[0]
    for templates, names in ((policy.labels, labels), (policy.branches, [head_ref])):
        for template in templates:
            pattern = _template(template)
            for name in names:
                if (found := pattern.fullmatch(name)) and int(found.group(1)) > 0:
                    return int(found.group(1))
    return None


def linked_issues(body: str, repository: str) -> list[int]:
    """Return the issue numbers of ``repository`` that the PR body closes, in order, without repeats."""
    found: list[int] = []
    for match in _CLOSING.finditer(body or ""):
        repo = match.group("repo") or match.group("url_repo")
        if repo is not None and repo.lower() != repository.lower():
            continue
        number = int(match.group("number"))
        if number > 0 and number not in found:
            found.append(number)
    return found[:MAX_LINKED]


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class Issue(_Lenient):
    """An issue as GET /repos/{owner}/{repo}/issues/{n} answers (only what the judge reads)."""

    number: int
    title: str = ""
    body: str | None = None
    # Present when the "issue" is a pull request: GitHub serves PRs from the issues endpoint too.
    pull_request: dict[str, object] | None = None


class GitUser(_Lenient):
    name: str | None = None
    email: str | None = None


class Login(_Lenient):
    login: str = ""


class GitCommit(_Lenient):
    author: GitUser | None = None
    message: str = ""


class PullCommit(_Lenient):
    """One item of GET /repos/{owner}/{repo}/pulls/{n}/commits."""

    commit: GitCommit = Field(default_factory=GitCommit)
    # The GitHub account matched to the commit's author, if any.
    author: Login | None = None


def issue_text(issues: Sequence[Issue]) -> str:
    """Return the linked issues as the task text the judge sees: ``#12: title``, then the body."""
    parts = []
    for issue in issues:
        if issue.pull_request is not None:
            continue
        body = (issue.body or "").strip()
        parts.append(f"#{issue.number}: {issue.title.strip()}" + (f"\n\n{body}" if body else ""))
    return "\n\n".join(parts)[:MAX_ISSUE_CHARS]


def pull_provenance(author: str, commits: Sequence[PullCommit]) -> tuple[str, ...]:
    """Return who wrote a PR: its author's login, each commit's author and co-authors."""
    signals = [author] if author else []
    for item in commits:
        if item.author is not None and item.author.login:
            signals.append(item.author.login)
        git = item.commit.author
        person = f"{git.name or ''} <{git.email or ''}>" if git is not None else ""
        signals += commit_signals(person if person.strip(" <>") else "", item.commit.message)
    return tuple(dict.fromkeys(s for s in signals if s))
