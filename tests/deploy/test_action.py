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


def default_input(name: str) -> str:
    inputs = yaml.safe_load(ACTION.read_text())["inputs"]
    return str(inputs[name]["default"])


def run_gate(
    repo: GitRepo, tmp_path: Path, head: str, fail_on: str = "failure", *, path: str | None = None
) -> Gated:
    workspace = repo.path
    suites = workspace / ".patchgate-suites" / "octo" / "calc" / "hidden"
    suites.mkdir(parents=True)
    for name, text in HIDDEN.items():
        (suites / name).write_text(text)
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    output, summary = tmp_path / "github-output", tmp_path / "step-summary"
    env = {
        "PATH": path or f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "HOME": str(tmp_path),
        "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_REPOSITORY": "octo/calc",
        "GITHUB_OUTPUT": str(output),
        "GITHUB_STEP_SUMMARY": str(summary),
        "BASE": "main",
        "HEAD": head,
        "POLICY": "",
        "FAIL_ON": fail_on,
        "CATEGORY": "agents/patchgate",
        "OUT": str(temp / "patchgate"),
    }
    step = gate_step()
    argv = ["bash", "-e", "-c", str(step["run"])]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=900, check=False)
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines() if "=" in line)
    if path is None:
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
    # The category input reaches the file and the output upload-sarif reads.
    assert log["runs"][0]["automationDetails"] == {"id": "agents/patchgate/"}
    assert outputs["sarif-category"] == "agents/patchgate"


def test_fail_on_decides_which_conclusions_fail_the_job(calc: GitRepo, tmp_path: Path) -> None:
    code, outputs, _, _ = run_gate(calc, tmp_path, "agent/wrong", fail_on="neutral")
    assert (code, outputs["conclusion"]) == (0, "failure")


def test_by_default_a_gate_that_reached_no_verdict_fails_the_job(calc: GitRepo, tmp_path: Path) -> None:
    # patchgate crashes (a sandbox that never started): no JSON report, so the conclusion is neutral.
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "patchgate").write_text(
        "#!/bin/sh\necho 'patchgate run: sandbox: the engine is gone' >&2\nexit 3\n"
    )
    (fake / "patchgate").chmod(0o755)
    path = f"{fake}:{Path(sys.executable).parent}:{os.environ['PATH']}"
    code, outputs, _, stdout = run_gate(calc, tmp_path, "agent/wrong", default_input("fail-on"), path=path)
    assert (code, outputs["conclusion"]) == (1, "neutral"), stdout
    assert "neutral" in default_input("fail-on").split(",")


@pytest.mark.slow
def test_the_actions_install_is_pinned_whole(tmp_path: Path) -> None:
    """Resolve the Action's own install against PyPI: every distribution it brings has a pin."""
    steps = yaml.safe_load(ACTION.read_text())["runs"]["steps"]
    [install] = [s for s in steps if s.get("name") == "Install patchgate"]
    assert '--constraint "$GITHUB_ACTION_PATH/constraints.txt"' in install["run"]
    constraints = ACTION.parent / "constraints.txt"
    pins = dict(
        line.split("==", 1)
        for line in constraints.read_text().splitlines()
        if line and not line.startswith("#")
    )
    report = tmp_path / "report.json"
    root = ACTION.parents[3]
    argv = [sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--ignore-installed"]
    argv += ["--report", str(report), "--constraint", str(constraints), str(root)]
    subprocess.run(argv, check=True, capture_output=True, timeout=600)
    resolved = {
        item["metadata"]["name"].lower().replace("_", "-").replace(".", "-"): item["metadata"]["version"]
        for item in json.loads(report.read_text())["install"]
    }
    resolved.pop("patchgate")
    unpinned = {name: v for name, v in resolved.items() if pins.get(name) != v}
    assert unpinned == {}, "run .venv/bin/python scripts/action-pins.py"
