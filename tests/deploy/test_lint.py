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
    done = run(tool("zizmor"), "--offline", "--min-severity", "low", ".github/")
    assert done.returncode == 0, done.stdout + done.stderr


def test_actionlint_finds_nothing_in_the_workflows() -> None:
    done = run(tool("actionlint"), "-no-color", *map(str, WORKFLOWS))
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_hadolint_finds_nothing_in_the_dockerfiles(dockerfile: Path) -> None:
    done = run(tool("hadolint"), "--failure-threshold", "info", str(dockerfile))
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_action_is_pinned_by_commit_and_checkouts_keep_no_credentials() -> None:
    for workflow in WORKFLOWS:
        data = yaml.safe_load(workflow.read_text())
        assert "concurrency" in data, f"{workflow.name}: no concurrency group"
        for job in data["jobs"].values():
            for step in job["steps"]:
                uses = step.get("uses")
                if uses is None:
                    continue
                ref = uses.partition("@")[2]
                assert len(ref) == 40 and all(c in "0123456789abcdef" for c in ref), uses
                if uses.startswith("actions/checkout@"):
                    assert step["with"]["persist-credentials"] is False


def test_dependabot_watches_pip_and_actions() -> None:
    config = yaml.safe_load((ROOT / ".github" / "dependabot.yml").read_text())
    assert {u["package-ecosystem"] for u in config["updates"]} == {"pip", "github-actions"}


def test_the_build_context_never_holds_the_state_directory() -> None:
    ignored = (ROOT / ".dockerignore").read_text().splitlines()
    assert ".state" in ignored
