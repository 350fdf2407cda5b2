"""Suite strength on the check run, end to end: the real server, the real pipeline in Docker, the fake GitHub.

With ``strength.report_first`` the check run is completed with the verdict
before the mutants finish, then completed again with their figures; by
default it is completed once, after them. The mutants may lower the first
conclusion (a floor breached: action_required), never raise it. A new head
on the same base reuses the suites' base runs, and its check run says so.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.bot.harness import POLICY, Pull, Server, jobs, make_pull, server_env, wait_for
from tests.fakes.github_server import FakeGitHub

# The base's add() subtracts; every PR below makes it add.
STRONG = "from app import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
WEAK = "from app import add\n\n\ndef test_add_returns():\n    assert add(2, 3) is not None\n"
# Four mutants keep each PR short.
FEW_MUTANTS = "  max_mutants: 4\n"

pytestmark = [pytest.mark.docker, pytest.mark.slow]


@pytest.fixture(scope="module")
def real_server(
    github: FakeGitHub, app_key: tuple[str, bytes], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    """One server running the real pipeline (checks.pipeline:run_pipeline) for this module's PRs."""
    from sandbox.engine import engine_available

    if not engine_available():
        pytest.skip("no Docker engine is reachable; scripts/engine.sh starts one")
    from sandbox.images import ensure_base_image

    ensure_base_image()
    state = tmp_path_factory.mktemp("state")
    env = server_env(github=github, private_key=app_key[0], state=state)
    server = Server(env, log=state / "server.log", pipeline="checks.pipeline:run_pipeline").start()
    yield server
    server.stop()


def gate(
    server: Server,
    github: FakeGitHub,
    root: Path,
    name: str,
    *,
    suite: str,
    strength: str,
    mutants: str = FEW_MUTANTS,
) -> Pull:
    """Make a repository with a one-test hidden suite and ``strength`` policy (its PR is not opened yet)."""
    hidden = Path(server.env["PATCHGATE_TEST_STORE"]) / "octo" / name / "hidden"
    hidden.mkdir(parents=True)
    (hidden / "test_add.py").write_text(suite)
    return make_pull(github, root, name, policy=POLICY + "strength:\n" + mutants + strength)


def run_to_the_end(server: Server, pull: Pull, files: Mapping[str, str | bytes | None]) -> None:
    pull.push({**files, "patchgate-test.json": None})
    server.post("pull_request", pull.payload("opened"))
    wait_for(
        lambda: any(j["state"] == "done" for j in jobs(server, pull.repository)), 900, "the real pipeline"
    )


def completions(github: FakeGitHub, repository: str) -> list[dict[str, Any]]:
    """The requests that completed the repository's check run, in order."""
    return [
        c.body
        for c in github.check_run_calls(repository)
        if c.method == "PATCH" and c.status < 300 and c.body.get("conclusion")
    ]


ADDS = {"app.py": "def add(a, b):\n    return a + b\n"}


def test_report_first_completes_the_run_with_the_verdict_then_with_the_mutants(
    real_server: Server, github: FakeGitHub, tmp_path: Path
) -> None:
    pull = gate(real_server, github, tmp_path, "firststrong", suite=STRONG, strength="  report_first: true\n")
    run_to_the_end(real_server, pull, ADDS)
    first, final = completions(github, pull.repository)
    assert (first["conclusion"], final["conclusion"]) == ("success", "success")
    before = first["output"]["summary"].replace("\\", "")
    assert "Suite strength: still measuring" in before and "may change to `action_required`" in before
    assert "kills" not in before and "hidden suite runs 1/1 changed lines" in before
    after = final["output"]["summary"].replace("\\", "")
    assert "still measuring" not in after
    assert "hidden suite kills 4/4 mutants of the changed lines (100%)" in after
    assert github.problems == []


def test_a_floor_breached_after_the_verdict_lowers_it_to_action_required(
    real_server: Server, github: FakeGitHub, tmp_path: Path
) -> None:
    strength = "  report_first: true\n  min_mutation_score: 0.9\n"
    pull = gate(real_server, github, tmp_path, "firstweak", suite=WEAK, strength=strength)
    run_to_the_end(real_server, pull, ADDS)
    first, final = completions(github, pull.repository)
    assert (first["conclusion"], final["conclusion"]) == ("success", "action_required")
    summary = final["output"]["summary"].replace("\\", "")
    assert "hidden suite too weak for this change (hidden suite kills 0/4 mutants (0%), needs 90%)" in summary
    run = pull.completed()
    assert run is not None and run["conclusion"] == "action_required"
    assert [j["conclusion"] for j in jobs(real_server, pull.repository)] == ["action_required"]


def test_by_default_the_run_completes_once_with_the_strength_figures(
    real_server: Server, github: FakeGitHub, tmp_path: Path
) -> None:
    pull = gate(real_server, github, tmp_path, "onceweak", suite=WEAK, strength="  min_mutation_score: 0.9\n")
    run_to_the_end(real_server, pull, ADDS)
    (only,) = completions(github, pull.repository)
    assert only["conclusion"] == "action_required"
    summary = only["output"]["summary"].replace("\\", "")
    assert "still measuring" not in summary and "hidden suite kills 0/4 mutants" in summary


def test_the_mutants_never_raise_a_failure(real_server: Server, github: FakeGitHub, tmp_path: Path) -> None:
    # Hostile: the change fails (an unused import on a changed line) yet hands the mutants a suite that
    # kills every one of them, on a repository that posts the verdict first. The late update carries
    # the perfect score and still says failure.
    pull = gate(real_server, github, tmp_path, "firstfails", suite=STRONG, strength="  report_first: true\n")
    run_to_the_end(real_server, pull, {"app.py": "import os\n\n\ndef add(a, b):\n    return a + b\n"})
    first, final = completions(github, pull.repository)
    assert (first["conclusion"], final["conclusion"]) == ("failure", "failure")
    assert "hidden suite kills 4/4 mutants" in final["output"]["summary"].replace("\\", "")
    run = pull.completed()
    assert run is not None and run["conclusion"] == "failure"


def test_a_job_cancelled_after_the_early_verdict_keeps_it_without_the_mutants(
    real_server: Server, github: FakeGitHub, tmp_path: Path
) -> None:
    # Every mutant run takes four seconds or more and there are a dozen of them, two at a time: the
    # PR is closed while they run, long before the last one could finish.
    slow = STRONG.replace("def test_add():\n", "def test_add():\n    time.sleep(4)\n").replace(
        "from app", "import time\n\nfrom app"
    )
    many = "  max_mutants: 20\n"
    pull = gate(
        real_server,
        github,
        tmp_path,
        "firstclosed",
        suite=slow,
        strength="  report_first: true\n",
        mutants=many,
    )
    pull.push({**ADDS, "patchgate-test.json": None})
    real_server.post("pull_request", pull.payload("opened"))
    wait_for(pull.completed, 900, "the verdict before the mutants")
    pull.publish(state="closed")
    real_server.post("pull_request", pull.payload("closed"))
    states = [("done", "pull_request.opened"), ("done", "pull_request.closed")]
    wait_for(
        lambda: [(j["state"], j["trigger"]) for j in jobs(real_server, pull.repository)] == states,
        300,
        "the job states",
    )
    first, final = completions(github, pull.repository)
    # Never "cancelled": the verdict stands, and says its mutants were not run, and why.
    assert (first["conclusion"], final["conclusion"]) == ("success", "success")
    summary = final["output"]["summary"].replace("\\", "")
    assert "still measuring" not in summary and "kills" not in summary
    assert "mutants not run: the pull request was closed" in summary


def test_a_new_head_on_the_same_base_reuses_the_base_runs_and_says_so(
    real_server: Server, github: FakeGitHub, tmp_path: Path
) -> None:
    pull = gate(
        real_server, github, tmp_path, "samebase", suite=STRONG, strength="", mutants="  max_mutants: 0\n"
    )
    run_to_the_end(real_server, pull, ADDS)
    kept = Path(real_server.env["PATCHGATE_WORK_DIR"]) / "base-runs"
    assert len(list(kept.glob("*.json"))) >= 1
    pull.push({"app.py": "def add(a, b):\n    return b + a\n"})  # a new head, the same base
    real_server.post("pull_request", pull.payload("synchronize"))
    wait_for(
        lambda: sum(j["state"] == "done" for j in jobs(real_server, pull.repository)) == 2,
        900,
        "the new head",
    )
    first, second = completions(github, pull.repository)
    assert (first["conclusion"], second["conclusion"]) == ("success", "success")
    reused = "base runs reused from an earlier job"
    assert reused not in first["output"]["summary"] and reused in second["output"]["summary"]
    # The same transitions as the first job computed with its own base run: the test failed on base.
    for done in (first, second):
        assert "fail→pass 1/1" in done["output"]["summary"].replace("\\", ""), done["output"]["summary"]
