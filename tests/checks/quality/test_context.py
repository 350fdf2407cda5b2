from __future__ import annotations

from pathlib import Path

import pytest

from checks.quality.context import (
    changed_definitions,
    clip_text,
    collect,
    numbered_diff,
    split_lines,
)
from checks.quality.prompt import render_file
from checks.workspace import Workspace, from_git
from tests.conftest import GitRepo


def chars(text: str) -> int:
    """A token counter for tests: one token per character, so budgets are easy to reason about."""
    return len(text)


def test_numbered_diff_carries_head_line_numbers() -> None:
    old = ["a", "b", "c", "d", "e", "f", "g", "h", "i"]
    new = ["a", "b", "c", "d", "X", "f", "g", "h", "i", "j"]
    assert numbered_diff(old, new, context=1).splitlines() == [
        "@@ base 4-6 head 4-6 @@",
        "      4 | d",
        "-       | e",
        "+     5 | X",
        "      6 | f",
        "@@ base 9-9 head 9-10 @@",
        "      9 | i",
        "+    10 | j",
    ]
    assert numbered_diff(["same"], ["same"]) == ""


def test_changed_definitions_are_the_innermost_enclosing_ones() -> None:
    source = (
        "import os\n"  # 1
        "\n"  # 2
        "@decorator\n"  # 3
        "def top():\n"  # 4
        "    return 1\n"  # 5
        "\n"  # 6
        "class K:\n"  # 7
        "    attr = 1\n"  # 8
        "    def method(self):\n"  # 9
        "        def inner():\n"  # 10
        "            pass\n"  # 11
        "        return inner\n"  # 12
    )
    assert changed_definitions(source, frozenset({5})) == [(3, 5)]
    assert changed_definitions(source, frozenset({11})) == [(10, 11)]
    assert changed_definitions(source, frozenset({12})) == [(9, 12)]
    # A class-body line selects the class, which already contains the method.
    assert changed_definitions(source, frozenset({8, 12})) == [(7, 12)]
    assert changed_definitions(source, frozenset({1})) == []
    assert changed_definitions("def broken(:\n", frozenset({1})) == []


def test_split_lines_counts_like_the_parser() -> None:
    assert split_lines("a\r\nb\rc\n") == ["a", "b", "c"]
    assert split_lines("") == []
    assert split_lines("a\n\n") == ["a", ""]


def test_clip_text_is_deterministic_and_marked() -> None:
    text = "word " * 200
    clipped = clip_text(text, 100, chars)
    assert len(clipped) <= 100
    assert clipped.endswith("[... clipped to fit the size budget]")
    assert clip_text(text, 100, chars) == clipped
    assert clip_text("short", 100, chars) == "short"


@pytest.fixture(scope="module")
def three_files(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    root = tmp_path_factory.mktemp("three")
    repo = GitRepo(root / "repo")
    big = "".join(f"def f{i}():\n    return {i}\n\n" for i in range(60))
    repo.commit(
        "base", {"a.py": "def a():\n    return 1\n", "b.py": big, "c.txt": "c\n", "gone.py": "x = 1\n"}
    )
    repo.branch("feature")
    repo.commit(
        "head",
        {
            "a.py": "def a():\n    return 2\n",
            "b.py": big.replace("return 30", "return -30"),
            "c.txt": "c\nd\n",
            "gone.py": None,
            "new.py": "def new():\n    return 0\n",
            "image.png": b"\x89PNG\r\n\x1a\n\x00\x00\x00binary",
            "tests/test_a.py": "def test_a():\n    assert True\n",
            # The change's tests outside tests/ (checks.testinfra.changetests): the judge sees none.
            "conftest.py": "EXPECTED_SECRET = 42\n",
            "test_data.json": '{"expected_secret": 42}\n',
            # A helper in a test folder base does not have is a test only because the change puts a
            # module pytest collects there too (alone, a new testing/helpers.py would be code).
            "testing/helpers.py": "def expected_secret():\n    return 42\n",
            "testing/test_b.py": "def test_b():\n    assert True\n",
        },
    )
    return from_git(repo.path, "main", "feature", root / "ws")


def test_collect_shows_every_non_test_file_within_budget(three_files: Workspace) -> None:
    ctx = collect(three_files, "task", budget=100_000, reserve=0, count=chars)
    assert [v.path for v in ctx.files] == ["a.py", "b.py", "c.txt", "gone.py", "new.py"]
    assert ctx.omitted == ("image.png",)
    views = {v.path: v for v in ctx.files}
    assert "def f30():" in views["b.py"].definitions
    assert "def f29():" not in views["b.py"].definitions
    assert views["gone.py"].diff.splitlines()[1:] == ["-       | x = 1"]
    assert views["new.py"].definitions == ""  # an added file's diff is already its full text
    assert "+     1 | def new():" in views["new.py"].diff
    assert "test_a" not in ctx.render()
    assert "expected_secret" not in ctx.render().lower()


def test_collect_clips_in_path_order_with_a_diff_only_fallback(three_files: Workspace) -> None:
    full = {v.path: v for v in collect(three_files, "task", budget=100_000, reserve=0, count=chars).files}
    # Room for a.py whole, then b.py's diff without its definitions, and nothing more.
    room_a = len(render_file(full["a.py"]))
    budget = len("task") + room_a + len(render_file(full["b.py"], definitions=False)) + 5
    assert len(full["b.py"].definitions) > 5 and len(render_file(full["c.txt"])) > 5
    ctx = collect(three_files, "task", budget=budget, reserve=0, count=chars)
    views = {v.path: v for v in ctx.files}
    assert views["a.py"].definitions
    assert views["b.py"].definitions == ""
    assert "c.txt" in ctx.omitted and "new.py" in ctx.omitted
    assert collect(three_files, "task", budget=budget, reserve=0, count=chars) == ctx


def test_digest_changes_with_what_is_shown(three_files: Workspace) -> None:
    a = collect(three_files, "task one", budget=100_000, reserve=0, count=chars)
    b = collect(three_files, "task two", budget=100_000, reserve=0, count=chars)
    assert a.digest == collect(three_files, "task one", budget=100_000, reserve=0, count=chars).digest
    assert a.digest != b.digest


def test_files_outside_the_tree_are_not_read(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "repo")
    repo.commit("base", {"a.py": "x = 1\n"})
    repo.branch("feature")
    (tmp_path / "secret.txt").write_text("SECRET-OUTSIDE\n")
    (repo.path / "link.txt").symlink_to(tmp_path / "secret.txt")
    repo.commit("link")
    ws = from_git(repo.path, "main", "feature", tmp_path / "ws")
    ctx = collect(ws, "task", budget=100_000, reserve=0, count=chars)
    assert "SECRET-OUTSIDE" not in ctx.render()
