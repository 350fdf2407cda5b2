"""The GitHub Action's gate step, run as the runner would run it: bash, real git, real Docker.

The other steps are GitHub's own actions (setup-python, cache, checkout);
this drives the one script patchgate owns, with the environment the runner
gives it, against a local repository and a suites checkout.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

from tests.checks.behaviour.test_layer import BASE, HIDDEN, RIGHT, WRONG
from tests.checks.render.test_sarif import schema
from tests.conftest import GitRepo
from tests.deploy.test_lint import ACTION

pytestmark = pytest.mark.docker


def gate_step() -> dict[str, object]:
    steps = yaml.safe_load(ACTION.read_text())["runs"]["steps"]
    step: dict[str, object] = next(s for s in steps if s.get("id") == "gate")
    return step


Gated = tuple[int, dict[str, str], Path, str]


def run_gate(repo: GitRepo, tmp_path: Path, head: str, fail_on: str = "failure") -> Gated:
    workspace = repo.path
    suites = workspace / ".patchgate-suites" / "octo" / "calc" / "hidden"
    suites.mkdir(parents=True)
    for name, text in HIDDEN.items():
        (suites / name).write_text(text)
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    output, summary = tmp_path / "github-output", tmp_path / "step-summary"
    env = {
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "HOME": str(tmp_path),
        "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_REPOSITORY": "octo/calc",
        "GITHUB_OUTPUT": str(output),
        "GITHUB_STEP_SUMMARY": str(summary),
        "BASE": "main",
        "HEAD": head,
        "POLICY": "",
        "FAIL_ON": fail_on,
        "OUT": str(temp / "patchgate"),
    }
    step = gate_step()
    argv = ["bash", "-e", "-c", str(step["run"])]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=900, check=False)
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines() if "=" in line)
    assert summary.read_text().startswith("### "), done.stderr
    return done.returncode, outputs, Path(outputs["sarif"]), done.stdout


@pytest.fixture
def calc(git_repo: GitRepo) -> GitRepo:
    git_repo.commit("base", BASE)
    git_repo.branch("agent/right")
    git_repo.commit("right", {"calc/__init__.py": RIGHT})
    git_repo.branch("agent/wrong", "main")
    git_repo.commit("wrong", {"calc/__init__.py": WRONG + "import os\n"})
    return git_repo


def test_a_passing_change_passes_the_job(calc: GitRepo, tmp_path: Path) -> None:
    code, outputs, sarif, _ = run_gate(calc, tmp_path, "agent/right")
    assert (code, outputs["conclusion"]) == (0, "success")
    jsonschema.Draft4Validator(schema()).validate(json.loads(sarif.read_text()))


def test_a_failing_change_fails_the_job_with_annotations_and_sarif(calc: GitRepo, tmp_path: Path) -> None:
    code, outputs, sarif, stdout = run_gate(calc, tmp_path, "agent/wrong")
    assert (code, outputs["conclusion"]) == (1, "failure")
    # The runner turns these lines into annotations on the diff.
    assert "::warning file=calc/__init__.py,line=7,endLine=7,title=ruff%3A F401::" in stdout
    log = json.loads(sarif.read_text())
    jsonschema.Draft4Validator(schema()).validate(log)
    assert any(r["ruleId"] == "ruff/F401" for r in log["runs"][0]["results"])


def test_fail_on_decides_which_conclusions_fail_the_job(calc: GitRepo, tmp_path: Path) -> None:
    code, outputs, _, _ = run_gate(calc, tmp_path, "agent/wrong", fail_on="neutral")
    assert (code, outputs["conclusion"]) == (0, "failure")
