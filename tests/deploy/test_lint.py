"""The project's own CI workflow and Dockerfiles pass their linters (zizmor, actionlint, hadolint)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILES = sorted([*ROOT.glob("deploy/*Dockerfile"), *ROOT.glob("sandbox/images/*.Dockerfile")])
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
# The GitHub Action and the workflow that shows how to use it (docs/action.md).
ACTION = ROOT / ".github" / "actions" / "patchgate" / "action.yml"
EXAMPLES = sorted((ROOT / "examples" / "github-action").glob("*.yml"))


def tool(name: str) -> str:
    """Return the linter installed into this virtualenv (the dev extra of pyproject.toml)."""
    found = shutil.which(name, path=str(Path(sys.executable).parent))
    if found is None:
        pytest.skip(f"{name} is not installed: run scripts/setup.sh")
    return found


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)


def test_zizmor_finds_nothing_in_the_workflows() -> None:
    # --offline: the audits that ask GitHub's API need a network CI does not promise.
    done = run(tool("zizmor"), "--offline", "--min-severity", "low", ".github/", *map(str, EXAMPLES))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "completed .github/actions/patchgate/action.yml" in done.stderr


def test_actionlint_finds_nothing_in_the_workflows() -> None:
    # The example uses the action by its local path, so actionlint checks its inputs too.
    done = run(tool("actionlint"), "-no-color", *map(str, [*WORKFLOWS, *EXAMPLES]))
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_hadolint_finds_nothing_in_the_dockerfiles(dockerfile: Path) -> None:
    done = run(tool("hadolint"), "--failure-threshold", "info", str(dockerfile))
    assert done.returncode == 0, done.stdout + done.stderr


def _check_steps(steps: list[dict[str, object]]) -> None:
    for step in steps:
        uses = step.get("uses")
        if not isinstance(uses, str) or uses.startswith("./"):
            continue  # a local action is the same commit's, not a moving tag
        ref = uses.partition("@")[2]
        assert len(ref) == 40 and all(c in "0123456789abcdef" for c in ref), uses
        if uses.startswith("actions/checkout@"):
            assert step["with"]["persist-credentials"] is False  # type: ignore[index]


def test_every_action_is_pinned_by_commit_and_checkouts_keep_no_credentials() -> None:
    for workflow in [*WORKFLOWS, *EXAMPLES]:
        data = yaml.safe_load(workflow.read_text())
        assert "concurrency" in data, f"{workflow.name}: no concurrency group"
        for job in data["jobs"].values():
            _check_steps(job["steps"])
    _check_steps(yaml.safe_load(ACTION.read_text())["runs"]["steps"])


def test_dependabot_watches_pip_and_actions() -> None:
    config = yaml.safe_load((ROOT / ".github" / "dependabot.yml").read_text())
    assert {u["package-ecosystem"] for u in config["updates"]} == {"pip", "github-actions"}


def test_the_build_context_never_holds_the_state_directory() -> None:
    ignored = (ROOT / ".dockerignore").read_text().splitlines()
    assert ".state" in ignored


def test_the_pre_commit_hooks_are_the_lint_step_run_from_the_venv() -> None:
    config = ROOT / ".pre-commit-config.yaml"
    done = run(tool("pre-commit"), "validate-config", str(config))
    assert done.returncode == 0, done.stdout + done.stderr
    repos = yaml.safe_load(config.read_text())["repos"]
    hooks = {hook["id"]: hook for repo in repos for hook in repo["hooks"]}
    assert list(hooks) == ["ruff", "ruff-format", "mypy", "import-linter", "actionlint"]
    for hook in hooks.values():
        # language: system from the project's .venv: no network, the versions CI uses.
        assert hook["language"] == "system", hook
        venv_tools = [word for word in hook["entry"].replace("'", " ").split() if word.startswith(".venv/")]
        assert venv_tools, hook
        assert all((ROOT / word).is_file() for word in venv_tools), hook
    assert "mypy tests" in hooks["mypy"]["entry"]  # the tests too, as scripts/test.sh checks them
