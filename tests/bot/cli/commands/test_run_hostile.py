"""`patchgate run` on changes that attack the grader: the conclusion is the wrong code's own (real Docker)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.bot.cli.commands.test_run import patchgate
from tests.checks.behaviour.test_layer import BASE, HIDDEN, WRONG
from tests.checks.behaviour.test_trust_domains import (
    FORGE_THE_REPORT,
    PATCH_THE_RECORDER,
    READ_EXPECTED_FROM_DISK,
    WALK_THE_CALLERS,
    _cheating,
)
from tests.conftest import GitRepo

pytestmark = pytest.mark.docker


@pytest.mark.parametrize(
    "cheat",
    [None, READ_EXPECTED_FROM_DISK, WALK_THE_CALLERS, PATCH_THE_RECORDER, FORGE_THE_REPORT],
    ids=[
        "wrong",
        "expected-values-on-disk",
        "caller-frames-and-heap",
        "patch-the-recorder",
        "forge-the-report",
    ],
)
def test_a_cheating_change_gets_the_wrong_codes_conclusion(
    git_repo: GitRepo, tmp_path: Path, cheat: str | None
) -> None:
    git_repo.commit("base", BASE)
    git_repo.branch("agent/half")
    git_repo.commit("half", {"calc/__init__.py": WRONG if cheat is None else _cheating(cheat)})
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    for name, text in HIDDEN.items():
        (hidden / name).write_text(text)
    held_out = tmp_path / "held-out"
    held_out.mkdir()
    (held_out / "test_more.py").write_text(
        "from calc import half\n\n\ndef test_odd():\n    assert half(7) == 3\n"
    )
    done = patchgate(
        "run", "--repo", git_repo.path, "--base", "main", "--head", "agent/half",
        "--hidden", hidden, "--held-out", held_out, "--format", "json",
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["conclusion"] == "failure"
    suites = {s["kind"]: (s["passed"], s["total"]) for s in report["behaviour"]["suites"]}
    assert suites == {"hidden": (2, 6), "held_out": (0, 1)}
