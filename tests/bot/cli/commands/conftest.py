"""Fixtures of the command tests: a change whose behaviour passes, for the quality layer to run."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import GitRepo

# Shape tools are not what this is about: only behaviour (which must pass) and quality run.
POLICY = """\
gates:
  loads: {enabled: false}
  ruff: {enabled: false}
  mypy: {enabled: false}
  bandit: {enabled: false}
  semgrep: {enabled: false}
  hygiene: {enabled: false}
quality:
  rubrics: [default]
"""


@pytest.fixture
def passing_change(git_repo: GitRepo, tmp_path: Path) -> tuple[GitRepo, Path, Path]:
    git_repo.commit("base", {"calc/__init__.py": "", "calc/ops.py": "def add(a, b):\n    return a + b\n"})
    git_repo.branch("agent/sub")
    git_repo.commit(
        "sub",
        {"calc/ops.py": "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"},
    )
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    (hidden / "test_ops.py").write_text(
        "from calc.ops import sub\n\n\ndef test_sub():\n    assert sub(5, 3) == 2\n"
    )
    policy = tmp_path / "policy.yml"
    policy.write_text(POLICY)
    return git_repo, hidden, policy
