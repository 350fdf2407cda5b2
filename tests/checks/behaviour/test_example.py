"""The demo's four agent PRs through the behaviour layer, against real Docker."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bot.cli.demo_repo import build_example, example_suites
from checks.behaviour import run_behaviour
from checks.policyfile import load_policy
from checks.report import BehaviourResult
from checks.runner import LayerContext
from checks.workspace import Workspace, from_git
from sandbox.docker import DockerSandbox
from sandbox.spec import Mount, RunSpec
from tests.conftest import git

pytestmark = pytest.mark.docker

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "duration"
TAMPERED = EXAMPLE / "prs" / "3-tampered-tests"


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("example") / "duration"
    build_example(EXAMPLE, repo)
    # The tampering PR's code alone, without its conftest hook, skip marker and deleted test.
    git(repo, "checkout", "-q", "-b", "untampered", "main")
    shutil.copyfile(TAMPERED / "files/durations/parse.py", repo / "durations/parse.py")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qam", "untampered")
    git(repo, "checkout", "-q", "main")
    return repo


def workspace(repo: Path, branch: str) -> Workspace:
    return from_git(repo, "main", branch, repo.parent / branch.replace("/", "-"))


def behaviour(ws: Workspace, sandbox: DockerSandbox, image: str) -> BehaviourResult:
    policy = load_policy((ws.base_dir / ".github/patchgate.yml").read_text())
    return run_behaviour(LayerContext(ws, policy, sandbox, image), example_suites(EXAMPLE))


def visible_tests_pass(ws: Workspace, sandbox: DockerSandbox, image: str) -> bool:
    """Run the repository's own tests the way its CI would (its own conftest and config included)."""
    spec = RunSpec(
        image=image,
        argv=("python3", "-m", "pytest", "-q", "-p", "no:cacheprovider"),
        copy_in=(Mount(ws.head_dir, "/work/repo"),),
        workdir="/work/repo",
        env={"PYTHONPATH": "/work/repo"},
    )
    return sandbox.run(spec).exit_code == 0


# Base's own tests too (from base): three of its test_parse tests fail on base (a stub).
REPOSITORY = ("repository tests (from base)", 6, 6)


def numbers(result: BehaviourResult) -> list[tuple[str, int, int]]:
    return [(s.name, s.passed, s.total) for s in result.suites]


def test_the_correct_pr_passes(example: Path, behaviour_sandbox: DockerSandbox, behaviour_image: str) -> None:
    ws = workspace(example, "agent/parse-duration")
    result = behaviour(ws, behaviour_sandbox, behaviour_image)
    assert result.status == "passed"
    assert numbers(result) == [("hidden", 21, 21), ("held-out", 14, 14), REPOSITORY]
    assert (result.fail_to_pass, result.fail_to_pass_total, result.pass_to_pass, result.regressions) == (
        36,
        36,
        5,
        0,
    )
    assert visible_tests_pass(ws, behaviour_sandbox, behaviour_image)
    [differential] = result.differential
    assert (differential.agreed, differential.checked, differential.inputs) == (1, 1, 2000)
    efficiency = differential.functions[0].efficiency
    # Faster than the reference (a regular expression against a loop in Python), by a wide margin.
    assert efficiency is not None and efficiency.status == "passed" and efficiency.ratio is not None
    assert efficiency.ratio < 1


def test_the_plausible_pr_passes_its_own_tests_and_fails_the_hidden_ones(
    example: Path, behaviour_sandbox: DockerSandbox, behaviour_image: str
) -> None:
    ws = workspace(example, "agent/parse-duration-regex")
    assert visible_tests_pass(ws, behaviour_sandbox, behaviour_image)
    result = behaviour(ws, behaviour_sandbox, behaviour_image)
    assert result.status == "failed"
    assert numbers(result) == [("hidden", 9, 21), ("held-out", 7, 14), REPOSITORY]
    failures = {f.id: f.message for f in result.suites[0].failures}
    assert (
        failures["parse_duration.cases.yml::garbage"]
        == "expected ValueError to be raised, got datetime.timedelta(0)"
    )
    assert failures["test_parse_duration.py::test_rejects[garbage]"] == "Failed: DID NOT RAISE ValueError"
    assert result.suites[1].failures == []
    # The differential check's first input is already a disagreement, and the smallest there is.
    [check] = result.differential[0].functions
    assert check.counterexample == (
        "head returned datetime.timedelta(0) for parse_duration(''); reference raised ValueError"
    )


def test_the_quadratic_pr_passes_every_test_and_fails_the_efficiency_check(
    example: Path, behaviour_sandbox: DockerSandbox, behaviour_image: str
) -> None:
    ws = workspace(example, "agent/parse-duration-scanner")
    assert visible_tests_pass(ws, behaviour_sandbox, behaviour_image)
    result = behaviour(ws, behaviour_sandbox, behaviour_image)
    assert numbers(result) == [("hidden", 21, 21), ("held-out", 14, 14), REPOSITORY]
    assert result.regressions == 0
    [check] = result.differential[0].functions
    assert (result.status, check.status, check.inputs) == ("failed", "agreed", 2000)
    efficiency = check.efficiency
    assert efficiency is not None and efficiency.status == "failed"
    # Quadratic against linear at 10^5: far past the policy's 5x, whatever the machine's load.
    assert efficiency.ratio is not None and efficiency.ratio > 5


def test_the_tampering_pr_changes_no_behaviour_number(
    example: Path, behaviour_sandbox: DockerSandbox, behaviour_image: str
) -> None:
    tampered = workspace(example, "agent/parse-duration-green")
    untampered = workspace(example, "untampered")
    # Its own suite is green only thanks to the tampering.
    assert visible_tests_pass(tampered, behaviour_sandbox, behaviour_image)
    assert not visible_tests_pass(untampered, behaviour_sandbox, behaviour_image)
    result = behaviour(tampered, behaviour_sandbox, behaviour_image)
    honest = behaviour(untampered, behaviour_sandbox, behaviour_image)
    assert result.status == honest.status == "failed"
    # The suites that count are the same; the tampering PR's own test file is a row of its own (counted for
    # nothing).
    counted = [("hidden", 11, 21), ("held-out", 6, 14), ("repository tests (from base)", 4, 4)]
    assert numbers(result)[:3] == numbers(honest) == counted
    assert numbers(result)[3:] == [("the change's own tests (written by its author)", 1, 1)]
    assert [f.id for f in result.suites[0].failures] == [f.id for f in honest.suites[0].failures]
    assert "test infrastructure restored from base before the runs: conftest.py" in result.detail
