"""What the static tool gates share: targets per side, paths, source lines, selection, batch checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from checks.policy import MypyGate
from checks.report import Finding
from checks.shape.container import Batch, ToolFailure
from checks.shape.introduced import Comparison
from checks.shape.static import Lines, argument, budget, check_batches, plain_path, select, targets
from sandbox.spec import Limits
from tests.checks.shape.conftest import make_ws


def test_targets_follow_renames_and_skip_added_files(tmp_path: Path) -> None:
    moved = "O = 1\nP = 2\nQ = 3\n"
    Files = dict[str, str | bytes | None]
    base: Files = {"a.py": "A = 1\n", "old.py": moved, "gone.py": "G", "notes.txt": "x"}
    head: Files = {"a.py": "A = 2\n", "old.py": None, "new.py": moved, "gone.py": None, "added.py": "N"}
    ws = make_ws(tmp_path, base, {**head, "notes.txt": "y"})
    files = targets(ws)
    assert files.head == ("a.py", "added.py", "new.py")
    assert files.base == ("a.py", "old.py")
    assert files.renames == {"old.py": "new.py"}


def test_targets_leave_out_names_with_control_characters(tmp_path: Path) -> None:
    ws = make_ws(tmp_path, {"a.py": "A = 1\n"}, {"a.py": "A = 2\n", "b\nc.py": "B = 1\n", "-c.py": "C = 1\n"})
    files = targets(ws)
    assert files.head == ("-c.py", "a.py")
    assert files.unsafe == ("b\nc.py",)


def test_arguments_never_look_like_options() -> None:
    assert argument("-c.py") == "./-c.py"
    assert plain_path(argument("-c.py")) == "-c.py"


@pytest.mark.parametrize(
    ("path", "plain"),
    [
        ("/src/head/pkg/a.py", "pkg/a.py"),
        ("/src/head/./pkg/a.py", "pkg/a.py"),
        ("/src/base/a.py", "a.py"),
        ("./a.py", "a.py"),
        ("a.py", "a.py"),
    ],
)
def test_plain_path(path: str, plain: str) -> None:
    assert plain_path(path) == plain


def test_lines_reads_one_line_and_never_leaves_the_tree(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a.py").write_bytes(b"first\nsecond \xff\n")
    (tmp_path / "secret.txt").write_text("secret\n")
    (tree / "link.py").symlink_to(tmp_path / "secret.txt")
    lines = Lines(tree)
    assert lines("a.py", 1) == "first"
    assert lines("a.py", 2) == "second \ufffd"
    assert lines("a.py", 3) == ""
    assert lines("a.py", 0) == ""
    assert lines("../secret.txt", 1) == ""
    assert lines("link.py", 1) == ""
    assert lines("missing.py", 1) == ""


def finding(path: str, line: int, introduced: bool) -> Finding:
    return Finding(
        tool="ruff", rule="F", path=path, start_line=line, end_line=line, severity="warning", message="m",
        introduced=introduced,
    )  # fmt: skip


def test_select_keeps_new_findings_and_old_ones_on_changed_lines(tmp_path: Path) -> None:
    ws = make_ws(tmp_path, {"a.py": "A = 1\nB = 2\n"}, {"a.py": "A = 1\nB = 3\nC = 4\n"})
    found = (finding("a.py", 1, False), finding("a.py", 2, False), finding("a.py", 3, True))
    kept, capped = select(Comparison(found, 2), ws)
    assert [(f.start_line, f.introduced) for f in kept] == [(3, True), (2, False)]
    assert capped == ""


def test_select_caps_the_list(tmp_path: Path) -> None:
    ws = make_ws(tmp_path, {"a.py": "A = 1\n"}, {"a.py": "A = 2\n"})
    found = tuple(finding("a.py", n, True) for n in range(1, 11))
    kept, capped = select(Comparison(found, 0), ws, limit=4)
    assert len(kept) == 4
    assert capped == "6 more findings not listed"


@pytest.mark.parametrize(
    ("batch", "message"),
    [
        (Batch(exit_code=None, timed_out=True), "did not finish"),
        (Batch(exit_code=0, truncated=True), "more output"),
        (Batch(exit_code=127, stderr="No such file or directory: 'ruff'"), "not installed"),
        (Batch(exit_code=2, stderr="error: unexpected argument"), "exit code 2"),
    ],
)
def test_check_batches_turns_broken_runs_into_tool_failures(batch: Batch, message: str) -> None:
    with pytest.raises(ToolFailure, match=message):
        check_batches("ruff", [batch], ok_codes=(0,))


def test_check_batches_accepts_expected_exit_codes() -> None:
    check_batches("bandit", [Batch(exit_code=0), Batch(exit_code=1)], ok_codes=(0, 1))


def test_budget_leaves_the_tools_defaults_alone_without_a_policy_budget() -> None:
    limits = Limits(timeout_s=600, memory_mb=2048)
    steps = [{"name": "base", "timeout": 540}, {"name": "head", "timeout": 540}]
    assert budget(limits, steps, MypyGate()) == (limits, steps)
    assert budget(limits, steps, None) == (limits, steps)


@pytest.mark.parametrize(("timeout", "expected"), [(120, 108.0), (1800, 1620.0)])
def test_budget_scales_the_container_and_every_step(timeout: float, expected: float) -> None:
    limits = Limits(timeout_s=600, memory_mb=2048)
    steps: list[dict[str, object]] = [{"name": "base", "timeout": 540}, {"name": "head", "timeout": 540}]
    got, scaled = budget(limits, steps, MypyGate(timeout_s=timeout, memory_mb=4096))
    assert (got.timeout_s, got.memory_mb, got.pids) == (timeout, 4096, limits.pids)
    assert [s["timeout"] for s in scaled] == [expected, expected]
    assert [s["timeout"] for s in steps] == [540, 540]  # the tool's plan is not changed in place
