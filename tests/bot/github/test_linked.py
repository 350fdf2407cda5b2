from __future__ import annotations

import pytest

from bot.github.linked import Issue, PullCommit, competes_for, issue_text, linked_issues, pull_provenance
from checks.policy import Ranking

REPO = "octo/shop"


@pytest.mark.parametrize(
    ("body", "numbers"),
    [
        ("Closes #12", [12]),
        ("closes #12, fixes #13 and resolves #12", [12, 13]),
        ("Fixes: #7", [7]),
        ("FIXED #7", [7]),
        ("resolved octo/shop#9", [9]),
        ("Resolves OCTO/SHOP#9", [9]),
        ("closes https://github.com/octo/shop/issues/21", [21]),
        ("closes other/repo#3 and https://github.com/other/repo/issues/4", []),  # not readable
        ("see #12; related to #13", []),  # no closing keyword
        ("prefixes #12", []),  # "fixes" inside a word is no keyword
        ("closes #0", []),
        ("", []),
        ("fix #1 fix #2 fix #3 fix #4", [1, 2, 3]),  # at most MAX_LINKED
    ],
)
def test_linked_issues(body: str, numbers: list[int]) -> None:
    assert linked_issues(body, REPO) == numbers


def test_names_as_long_as_github_allows_are_linked() -> None:
    owner, name = "o" * 39, "r" * 100
    assert linked_issues(f"fixes {owner}/{name}#5", f"{owner}/{name}") == [5]
    assert linked_issues(f"fixes https://github.com/{owner}/{name}/issues/6", f"{owner}/{name}") == [6]


def test_linked_issues_is_linear_in_the_body() -> None:
    # Each of these took the old pattern a long time: "fix", spaces and a letter 77 s at 64k spaces
    # (its spaces around the colon split every way); "fix-fix-..." rescanned the rest of the run
    # from each "fix". Now milliseconds; a regression hangs here until the suite's timeout.
    assert linked_issues("fix" + " " * 1_000_000 + "a, fixes #7", REPO) == [7]
    assert linked_issues("fix-" * 250_000 + " fixes #8", REPO) == [8]
    assert linked_issues("fixes " + "a" * 1_000_000 + "/b#9 fixes #10", REPO) == [10]


def test_issue_text_skips_pull_requests_and_empty_bodies() -> None:
    issues = [
        Issue(number=12, title="Parse durations", body="`parse_duration('1h30m')` should work.\r\n"),
        Issue(number=13, title="A PR, not an issue", body="x", pull_request={"url": "..."}),
        Issue(number=14, title="No body", body=None),
    ]
    assert issue_text(issues) == (
        "#12: Parse durations\n\n`parse_duration('1h30m')` should work.\n\n#14: No body"
    )
    assert issue_text([]) == ""


def test_pull_provenance_reads_logins_authors_and_trailers() -> None:
    commits = [
        PullCommit.model_validate(
            {
                "sha": "a" * 40,
                "commit": {
                    "author": {"name": "Claude", "email": "noreply@anthropic.com", "date": "2026-01-01"},
                    "message": "Add sub\n\nCo-authored-by: Dev <dev@example.com>\n",
                },
                "author": None,
            }
        ),
        PullCommit.model_validate(
            {"commit": {"author": None, "message": "fix"}, "author": {"login": "claude[bot]", "id": 1}}
        ),
    ]
    assert pull_provenance("claude[bot]", commits) == (
        "claude[bot]",
        "Claude <noreply@anthropic.com>",
        "Dev <dev@example.com>",
    )
    assert pull_provenance("", []) == ()


POLICY = Ranking(labels=["issue-{n}"], branches=["agent/issue-{n}-*", "fix/{n}"])


@pytest.mark.parametrize(
    ("body", "labels", "branch", "policy", "issue"),
    [
        ("closes #12", [], "agent/x", POLICY, 12),
        ("closes #12", ["issue-13"], "agent/issue-14-a", POLICY, 12),  # the closing keyword first
        ("", ["bug", "issue-13"], "agent/issue-14-a", POLICY, 13),  # then a label
        ("", [], "agent/issue-14-attempt-2", POLICY, 14),  # then the branch
        ("", [], "fix/15", POLICY, 15),
        ("", [], "fix/15-more", POLICY, None),  # templates match whole names
        ("", ["issue-x"], "agent/issue--a", POLICY, None),
        ("", ["issue-13"], "main", Ranking(), None),  # no templates: closing keywords only
        ("closes #12", [], "agent/x", Ranking(enabled=False), None),
        ("", [], "a.b/issue-7", Ranking(branches=["a.b/issue-{n}"]), 7),  # "." is literal
        ("", [], "aXb/issue-7", Ranking(branches=["a.b/issue-{n}"]), None),
    ],
)
def test_competes_for(body: str, labels: list[str], branch: str, policy: Ranking, issue: int | None) -> None:
    assert competes_for(body, labels, branch, REPO, policy) == issue


def test_a_template_without_one_number_is_refused() -> None:
    with pytest.raises(ValueError, match="exactly once"):
        Ranking(labels=["issue"])
