from __future__ import annotations

from pathlib import Path

import pytest

from bot.cli.demo_repo import ExampleError, ExamplePR, build_example, example_suites, load_prs
from tests.conftest import git

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "duration"


def test_the_duration_example_becomes_a_repository_with_a_branch_per_pr(tmp_path: Path) -> None:
    dest = tmp_path / "duration"
    prs = build_example(EXAMPLE, dest)
    assert [(p.branch, p.author, p.expected) for p in prs] == [
        ("agent/parse-duration", "coder-agent[bot]", "success"),
        ("agent/parse-duration-regex", "coder-agent[bot]", "failure"),
        ("agent/parse-duration-green", "coder-agent[bot]", "failure"),
        ("agent/parse-duration-scanner", "coder-agent[bot]", "failure"),
    ]
    assert git(dest, "branch", "--show-current").strip() == "main"
    assert "raise NotImplementedError" in (dest / "durations/parse.py").read_text()
    branches = git(dest, "for-each-ref", "--format=%(refname:short)", "refs/heads").split()
    assert sorted(branches) == sorted(["main", *(p.branch for p in prs)])
    for pr in prs:
        # One commit on top of main, by the agent, titled like the PR.
        log = git(dest, "log", "--format=%an|%s", f"main..{pr.branch}").splitlines()
        assert log == [f"{pr.author}|{pr.title}"]
    green = "agent/parse-duration-green"
    changed = git(dest, "diff", "--no-renames", "--name-status", "main", green).split("\n")
    assert "D\ttests/test_parse.py" in changed
    assert "A\tconftest.py" in changed
    assert "A\ttests/test_parse_duration.py" in changed
    assert git(dest, "diff", "--name-only", "main", "agent/parse-duration").split() == ["durations/parse.py"]
    # The suites stay out of the repository.
    assert not list(dest.rglob("*.cases.yml"))
    assert not list(dest.rglob("*.diff.yml")) and not (dest / "ref.py").exists()
    assert "suites" not in git(dest, "ls-files", "--", ".").split("/")


def test_the_example_is_reproducible(tmp_path: Path) -> None:
    build_example(EXAMPLE, tmp_path / "a")
    build_example(EXAMPLE, tmp_path / "b")
    for ref in ("main", "agent/parse-duration-green"):
        assert git(tmp_path / "a", "rev-parse", ref) == git(tmp_path / "b", "rev-parse", ref)


def test_example_suites() -> None:
    suites = example_suites(EXAMPLE)
    assert suites.hidden == EXAMPLE / "suites/hidden"
    assert suites.held_out == EXAMPLE / "suites/held-out"


def make_example(root: Path, pr_yml: str, delete: str | None = None) -> Path:
    (root / "repo").mkdir(parents=True)
    (root / "repo/a.py").write_text("A = 1\n")
    pr = root / "prs/1-one"
    (pr / "files").mkdir(parents=True)
    (pr / "files/b.py").write_text("B = 2\n")
    (pr / "pr.yml").write_text(pr_yml)
    if delete is not None:
        (pr / "delete.txt").write_text(delete)
    return root


GOOD_PR = "title: t\nauthor: someone[bot]\nbranch: agent/x\nexpected: failure\n"


def test_load_prs_reads_the_pr_files(tmp_path: Path) -> None:
    src = make_example(tmp_path, GOOD_PR)
    (src / "prs/notes").mkdir()
    assert [pr for _, pr in load_prs(src)] == [ExamplePR("agent/x", "t", "", "someone[bot]", "failure")]


@pytest.mark.parametrize(
    ("pr_yml", "delete", "message"),
    [
        ("title: t\nauthor: a\nbranch: b\nexpected: maybe\n", None, "expected"),
        ("title: t\nauthor: a\nbranch: '-b'\nexpected: success\n", None, "branch"),
        ("title: t\nauthor: a\nbranch: b\nexpected: success\nextra: 1\n", None, "extra"),
        (GOOD_PR, "../outside.py\n", "not a path inside the repository"),
        (GOOD_PR, "missing.py\n", "does not exist in the base tree"),
    ],
)
def test_malformed_examples_name_the_file(
    tmp_path: Path, pr_yml: str, delete: str | None, message: str
) -> None:
    src = make_example(tmp_path / "src", pr_yml, delete)
    with pytest.raises(ExampleError, match=message):
        build_example(src, tmp_path / "dest")


def test_an_existing_destination_is_refused(tmp_path: Path) -> None:
    src = make_example(tmp_path / "src", GOOD_PR, "# nothing\n\na.py\n")
    (tmp_path / "dest").mkdir()
    (tmp_path / "dest/keep").write_text("x")
    with pytest.raises(ExampleError, match="not empty"):
        build_example(src, tmp_path / "dest")
    build_example(src, tmp_path / "fresh")
    # delete.txt skips blank lines and comments, and the deletion happens on the PR branch only.
    assert (tmp_path / "fresh/a.py").exists()
    changed = git(tmp_path / "fresh", "diff", "--name-status", "main", "agent/x").split("\n")
    assert changed[:2] == ["D\ta.py", "A\tb.py"]
