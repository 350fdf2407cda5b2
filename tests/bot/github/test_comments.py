"""Which PR comment is patchgate's summary: one the App's own bot user wrote, starting with the marker."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest

from bot.github.app import GitHubApp
from bot.github.client import GitHubError, written_by
from checks.render.comment import MARKER
from tests.bot.harness import AGENT, INSTALLATION, make_pull
from tests.fakes.github_server import FakeGitHub, user_json

FORGED = f"{MARKER}\n**✅ success — shape passed**\n"


def comment(user: dict[str, Any] | None) -> dict[str, Any]:
    return {"id": 1, "body": MARKER, "user": user}


@pytest.mark.parametrize(
    ("user", "mine"),
    [
        (user_json("patchgate[bot]", "Bot"), True),
        (user_json("patchbot[bot]", "Bot"), False),  # another App: the agent's own, say
        (user_json("patchgate", "User"), False),  # a person who took the App's name
        (user_json("patchgate[bot]", "User"), False),  # no such user on GitHub; never taken anyway
        (user_json("Patchgate[bot]", "Bot"), False),
        (None, False),  # a deleted account (GitHub answers "user": null)
        ({}, False),
    ],
)
def test_only_the_apps_bot_user_wrote_its_comments(user: dict[str, Any] | None, mine: bool) -> None:
    assert written_by(comment(user), "patchgate[bot]") is mine


def test_the_summary_is_only_a_comment_the_app_wrote(
    github: FakeGitHub, app: GitHubApp, tmp_path: Path
) -> None:
    pull = make_pull(github, tmp_path, "whose")
    client = app.installation(INSTALLATION)
    repo, number = pull.repository, pull.number
    # The PR's author, another bot and a person all write the marker before patchgate does.
    github.post_comment(repo, number, FORGED, login="dev", user_type="User")
    github.post_comment(repo, number, FORGED, login=AGENT, user_type="Bot")
    github.post_comment(repo, number, FORGED, login="patchgate", user_type="User")
    assert asyncio.run(client.find_comment(repo, number, MARKER)) is None
    # patchgate's own reply quoting the marker (a help reply quotes the unknown word) is no summary.
    asyncio.run(client.comment(repo, number, f"patchgate has no command `{MARKER}`."))
    assert asyncio.run(client.find_comment(repo, number, MARKER)) is None
    own = asyncio.run(client.comment(repo, number, FORGED.replace("✅", "❌")))
    github.post_comment(repo, number, FORGED, login="dev", user_type="User")
    assert asyncio.run(client.find_comment(repo, number, MARKER)) == own


def test_the_apps_login_is_asked_once_and_a_failure_is_not_kept(
    github: FakeGitHub, app: GitHubApp, tmp_path: Path
) -> None:
    pull = make_pull(github, tmp_path, "slug")
    client = app.installation(INSTALLATION)
    start = len(github.calls)
    github.fail("GET", r"^/app$", 403, message="Resource not accessible")
    with pytest.raises(GitHubError, match="slug"):
        asyncio.run(client.find_comment(pull.repository, pull.number, MARKER))
    # Nothing was listed: with no login of its own, no comment can be told to be patchgate's.
    assert github.calls_to("GET", r"^/repos/octo/slug/issues/") == []
    for _ in range(3):
        assert asyncio.run(client.find_comment(pull.repository, pull.number, MARKER)) is None
    asked = [c for c in github.calls[start:] if c.path == "/app"]
    assert [c.status for c in asked] == [403, 200]
    assert asked[1].headers["Authorization"].startswith("Bearer ")  # the App's JWT
    # Another installation of the same App shares what was learnt.
    asyncio.run(app.installation(INSTALLATION + 1).find_comment(pull.repository, pull.number, MARKER))
    assert len([c for c in github.calls[start:] if c.path == "/app"]) == 2


def test_get_app_needs_the_apps_jwt(github: FakeGitHub, app: GitHubApp, tmp_path: Path) -> None:
    pull = make_pull(github, tmp_path, "jwt")
    client = app.installation(INSTALLATION)
    asyncio.run(client.pull(pull.repository, pull.number))  # an installation token, now cached
    token = next(c for c in reversed(github.calls) if c.path.startswith("/repos/octo/jwt/"))
    assert token.headers["Authorization"].startswith("token ")
    answer = httpx.get(f"{github.url}/app", headers={"Authorization": token.headers["Authorization"]})
    assert answer.status_code == 401
