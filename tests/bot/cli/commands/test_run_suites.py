"""`patchgate run --suites`: the suites from a git repository, as the service would read them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.bot.cli.commands.test_run import patchgate
from tests.conftest import GitRepo

POLICY = (
    "gates:\n  ruff: {enabled: false}\n  mypy: {enabled: false}\n  bandit: {enabled: false}\n"
    "  semgrep: {enabled: false}\n"
)


@pytest.mark.docker
def test_run_with_suites_from_a_git_repository(git_repo: GitRepo, tmp_path: Path) -> None:
    git_repo.commit("base", {"calc/__init__.py": "", "calc/ops.py": "def add(a, b):\n    return a + b\n"})
    git_repo.branch("agent/sub")
    git_repo.commit(
        "sub", {"calc/ops.py": "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n"}
    )
    store = GitRepo(tmp_path / "suites")
    sha = store.commit(
        "suites",
        {
            "octo/calc/hidden/test_ops.py": "from calc.ops import sub\n\n\n"
            "def test_sub():\n    assert sub(5, 3) == 2\n"
        },
    )
    policy = tmp_path / "policy.yml"
    policy.write_text(POLICY)
    out = tmp_path / "report.json"
    done = patchgate(
        "run", "--repo", git_repo.path, "--base", "main", "--head", "agent/sub", "--policy", policy,
        "--suites", f"git+file://{store.path}@main", "--suites-for", "octo/calc",
        "--suites-cache", tmp_path / "cache", "--format", "json", "--out", out,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    assert report["suites_commit"] == sha
    (hidden,) = report["behaviour"]["suites"]
    assert (hidden["kind"], hidden["passed"], hidden["total"]) == ("hidden", 1, 1)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--suites-for", "octo/calc", "--hidden", "."), "--suites replaces --hidden and --held-out"),
        ((), "--suites needs --suites-for OWNER/REPO"),
        (
            ("--suites-for", "octo/calc", "--suites", "git+file:///nonexistent/suites.git"),
            "--suites: suites repository",
        ),
    ],
)
def test_run_refuses_unusable_suites_arguments(
    git_repo: GitRepo, tmp_path: Path, extra: tuple[str, ...], message: str
) -> None:
    git_repo.commit("base", {"a.py": ""})
    done = patchgate(
        "run", "--repo", git_repo.path, "--base", "main", "--head", "main",
        "--suites", f"git+file://{tmp_path}/none.git", "--suites-cache", tmp_path / "cache", *extra,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert message in done.stderr


@pytest.mark.docker
def test_run_reproduces_a_differential_verdict_and_replays_a_recorded_seed(
    git_repo: GitRepo, tmp_path: Path
) -> None:
    git_repo.commit("base", {"calc/__init__.py": "def half(x):\n    raise NotImplementedError\n"})
    git_repo.branch("agent/half")
    # Wrong on one residue only: which input finds it first depends on the draws.
    git_repo.commit("half", {"calc/__init__.py": "def half(x):\n    return x // 2 if x % 89 != 7 else 0\n"})
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    (hidden / "ref.py").write_text("def half(x: int) -> int:\n    return x // 2\n")
    (hidden / "half.diff.yml").write_text("functions:\n  - function: calc.half\n    reference: ref.half\n")
    policy = tmp_path / "policy.yml"
    policy.write_text(POLICY)

    def differential(*extra: str) -> dict[str, object]:
        out = tmp_path / "report.json"
        done = patchgate(
            "run", "--repo", git_repo.path, "--base", "main", "--head", "agent/half", "--policy", policy,
            "--hidden", hidden, "--format", "json", "--out", out, *extra,
        )  # fmt: skip
        assert done.returncode == 1, done.stderr
        [found] = json.loads(out.read_text())["behaviour"]["differential"]
        return found

    first, again = differential(), differential()
    assert first == again  # the same change, the same inputs, the same counterexample
    seed = "0123456789abcdef0123456789abcdef"
    assert differential("--differential-seed", seed)["seed"] == seed


@pytest.mark.slow
def test_run_refuses_a_seed_that_no_report_records(git_repo: GitRepo) -> None:
    git_repo.commit("base", {"a.py": ""})
    done = patchgate(
        "run", "--repo", git_repo.path, "--base", "main", "--head", "main", "--differential-seed", "42"
    )
    assert done.returncode == 2
    assert "--differential-seed '42': 32 hex digits" in done.stderr
