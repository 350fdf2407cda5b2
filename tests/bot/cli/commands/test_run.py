"""`patchgate run` as a user runs it: the real console script, real git, real Docker."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import DEEP_FILE, GitRepo

PATCHGATE = (sys.executable, "-m", "bot.cli")
ROOT = Path(__file__).resolve().parents[4]


def patchgate(
    *args: str | Path, cwd: Path = ROOT, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PATCHGATE, *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        # The commands read the config file as the service does: a developer's own
        # (.state/patchgate.env, a judge in it perhaps) must not reach the tests.
        env={**os.environ, "PATCHGATE_CONFIG": os.devnull, **(env or {})},
    )


@pytest.fixture
def calc_repo(git_repo: GitRepo) -> GitRepo:
    git_repo.commit(
        "base",
        {
            "calc/__init__.py": "",
            "calc/ops.py": 'def add(a: int, b: int) -> int:\n    """Add."""\n    return a + b\n',
        },
    )
    git_repo.branch("agent/sub")
    git_repo.commit(
        "add sub",
        {
            "calc/ops.py": 'def add(a: int, b: int) -> int:\n    """Add."""\n    return a + b\n\n\n'
            'def sub(a: int, b: int) -> int:\n    """Subtract."""\n    return a - b\n'
        },
    )
    git_repo.branch("agent/broken", "main")
    git_repo.commit(
        "add mul",
        {
            "calc/ops.py": 'def add(a: int, b: int) -> int:\n    """Add."""\n    return a + b\n\n\n'
            "def mul(a: int, b: int) -> int:\n    return a * c\n"
        },
    )
    return git_repo


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    hidden = tmp_path / "store" / "hidden"
    hidden.mkdir(parents=True)
    (hidden / "test_ops.py").write_text(
        "from calc.ops import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
        "def test_sub():\n    from calc.ops import sub\n    assert sub(5, 3) == 2\n"
    )
    return hidden


@pytest.mark.docker
def test_success_json_report_and_exit_code(calc_repo: GitRepo, suite: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    done = patchgate(
        "run",
        "--repo",
        calc_repo.path,
        "--base",
        "main",
        "--head",
        "agent/sub",
        "--hidden",
        suite,
        "--format",
        "json",
        "--out",
        out,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    assert {"conclusion", "reasons", "shape", "behaviour", "quality", "timings", "version"} <= set(report)
    assert report["conclusion"] == "success"
    (hidden,) = report["behaviour"]["suites"]
    assert (hidden["kind"], hidden["passed"], hidden["total"], hidden["pass_rate"]) == ("hidden", 2, 2, 1.0)
    assert report["behaviour"]["fail_to_pass"] == 1
    assert report["quality"]["status"] == "skipped"


@pytest.mark.docker
def test_failure_markdown_names_the_finding(calc_repo: GitRepo, suite: Path) -> None:
    done = patchgate(
        "run",
        "--repo",
        calc_repo.path,
        "--base",
        "main",
        "--head",
        "agent/broken",
        "--hidden",
        suite,
        "--format",
        "markdown",
    )
    assert done.returncode == 1, done.stderr
    first = done.stdout.splitlines()[0]
    assert first.startswith("### ❌ failure")
    assert "| **shape** | ❌ failed |" in done.stdout
    # `c` is undefined: ruff (F821) and mypy both say so, on the line the PR added
    assert "F821" in done.stdout
    assert len(done.stdout.encode()) <= 65_535


@pytest.mark.docker
def test_invalid_policy_on_base_is_action_required(git_repo: GitRepo) -> None:
    git_repo.commit(
        "base", {"a.py": "x = 1\n", ".github/patchgate.yml": "gates:\n  mypy:\n    max_new_errors: lots\n"}
    )
    git_repo.branch("agent/x")
    git_repo.commit("pr", {"a.py": "x = 2\n"})
    done = patchgate(
        "run", "--repo", git_repo.path, "--base", "main", "--head", "agent/x", "--format", "json"
    )
    # action_required has its own exit code, apart from neutral (3).
    assert done.returncode == 4
    report = json.loads(done.stdout)
    assert report["conclusion"] == "action_required"
    assert "line 3: gates.mypy.max_new_errors" in report["reasons"][0]


@pytest.mark.docker
def test_policy_from_the_pr_is_ignored(git_repo: GitRepo, tmp_path: Path) -> None:
    # The PR breaks the policy file; the gate reads the base's, so the PR cannot turn it off
    # (and the edit itself is a hygiene finding, seen elsewhere). Nothing is run: no suites.
    git_repo.commit("base", {"a.txt": "1\n", ".github/patchgate.yml": "behaviour: {require_suites: false}\n"})
    git_repo.branch("agent/x")
    git_repo.commit("pr", {".github/patchgate.yml": "gates: [not, a, mapping]\n"})
    done = patchgate(
        "run", "--repo", git_repo.path, "--base", "main", "--head", "agent/x", "--format", "json"
    )
    report = json.loads(done.stdout)
    assert not any("patchgate.yml:" in r and "mapping" in r for r in report["reasons"]), report["reasons"]
    assert any(f["rule"] == "policy-edited" for f in report["shape"]["findings"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--base", "main", "--head", "nope"), "unknown head ref 'nope'"),
        (
            ("--base", "main", "--head", "main", "--hidden", "/nonexistent/suite"),
            "--hidden /nonexistent/suite",
        ),
        (("--base", "main", "--head", "main", "--policy", "/nonexistent.yml"), "--policy /nonexistent.yml"),
    ],
)
def test_usage_errors_exit_2(git_repo: GitRepo, args: tuple[str, ...], message: str) -> None:
    git_repo.commit("base", {"a.py": "x = 1\n"})
    done = patchgate("run", "--repo", git_repo.path, *args)
    assert done.returncode == 2
    assert message in done.stderr


def test_version_and_a_help_that_imports_no_command() -> None:
    import subprocess
    import sys

    done = patchgate("--version")
    assert done.returncode == 0 and done.stdout.startswith("patchgate ")
    # `--help` lists every command without importing one (the heavy libraries stay unloaded).
    heavy = ("bot.cli.commands.", "pydantic", "litellm", "docker")
    probe = (
        "import sys; from bot.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        f"print(sorted(m for m in sys.modules if m.startswith({heavy!r})))"
    )
    argv = [sys.executable, "-c", probe]
    listed = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, check=True)
    assert listed.stdout.strip().splitlines()[-1] == "[]"
    assert "policy" in listed.stdout and "calibrate" in listed.stdout


def test_not_a_repository_exits_2(tmp_path: Path) -> None:
    done = patchgate("run", "--repo", tmp_path, "--base", "main", "--head", "x")
    assert done.returncode == 2
    assert "not a git repository" in done.stderr


def test_base_equal_to_head_is_neutral(git_repo: GitRepo) -> None:
    git_repo.commit("base", {"a.py": "x = 1\n"})
    done = patchgate("run", "--repo", git_repo.path, "--base", "main", "--head", "main")
    assert done.returncode == 3
    assert "the change is empty" in done.stdout


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_file_1100_directories_deep_fails_the_change_with_a_report(
    deep_repo: GitRepo, tmp_path: Path, fmt: str
) -> None:
    # Before: tarfile.add recursed until RecursionError (an "internal error", neutral), then
    # removing the temporary tree recursed too and `patchgate run` died without a report.
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    done = patchgate(
        "run", "--repo", deep_repo.path, "--base", "main", "--head", "agent/deep", "--format", fmt,
        env={"TMPDIR": str(scratch)},
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert list(scratch.iterdir()) == []  # no temporary tree left behind
    if fmt == "json":
        report = json.loads(done.stdout)
        assert report["conclusion"] == "failure"
        [reason] = report["reasons"]
        [finding] = report["shape"]["findings"]
        assert DEEP_FILE.startswith(finding["path"].partition("…")[0])
    else:
        assert done.stdout.startswith("❌ failure") or "failure" in done.stdout.splitlines()[0]
        reason = " ".join(done.stdout.split())
    assert "shape: the change's tree breaks a bound: d/d/d/d/" in reason
    assert "nested more than 100 levels deep" in reason


def test_help_documents_the_exit_codes() -> None:
    done = patchgate("run", "--help")
    assert done.returncode == 0
    for line in (
        "0  success",
        "1  failure",
        "2  usage or configuration error",
        "3  neutral",
        "4  action_required",
    ):
        assert line in done.stdout


@pytest.mark.docker
def test_sigterm_removes_the_runs_containers(calc_repo: GitRepo, tmp_path: Path) -> None:
    import signal
    import time

    import docker

    slow = tmp_path / "slow"
    slow.mkdir()
    (slow / "test_slow.py").write_text("import time\n\n\ndef test_slow():\n    time.sleep(300)\n")
    client = docker.from_env()  # first: without an engine, no process is left behind
    proc = subprocess.Popen(
        [*PATCHGATE, "run", "--repo", str(calc_repo.path), "--base", "main", "--head", "agent/sub",
         "--hidden", str(slow)],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    mine: dict[str, str | list[str] | bool] = {"label": f"patchgate.owner-pid={proc.pid}"}
    # ignore_removed: a short-lived run's container can go between the list and its inspect.
    try:
        deadline = time.monotonic() + 120
        while not client.containers.list(all=True, filters=mine, ignore_removed=True):
            assert proc.poll() is None, "patchgate run ended before it started a container"
            assert time.monotonic() < deadline, "no sandbox container appeared"
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 128 + signal.SIGTERM
        assert client.containers.list(all=True, filters=mine, ignore_removed=True) == []
    finally:
        if proc.poll() is None:
            proc.kill()
        for leftover in client.containers.list(all=True, filters=mine, ignore_removed=True):
            leftover.remove(force=True)
        client.close()


@pytest.mark.docker
def test_progress_goes_to_stderr_when_asked_and_never_to_stdout(calc_repo: GitRepo, suite: Path) -> None:
    argv = ("run", "--repo", calc_repo.path, "--base", "main", "--head", "agent/sub", "--hidden", suite,
            "--format", "json")  # fmt: skip
    shown = patchgate(*argv, "--progress")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["conclusion"] == "success"
    said = [line for line in shown.stderr.splitlines() if line.startswith("patchgate: ")]
    # The mutants run last, after the verdict's own runs: their line comes after behaviour's.
    assert [line.split()[1] for line in said] == ["shape", "behaviour", "strength", "finished:"], said
    assert said[-1].startswith("patchgate: finished: success (")
    assert said[1].startswith("patchgate: behaviour passed · hidden 2/2")
    assert "mutants of the changed lines" in said[2]
    # Not a terminal and not asked: nothing.
    quiet = patchgate(*argv)
    assert not [line for line in quiet.stderr.splitlines() if line.startswith("patchgate: ")]
