"""`patchgate sandbox build` through sandbox.cli.build_command."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox.cli import build_command


@pytest.mark.docker
def test_build_prints_the_tag_and_succeeds_when_up_to_date(
    base_image: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert build_command(from_registry=False, force=False) == 0
    out, err = capsys.readouterr()
    assert out.strip() == base_image
    assert "is up to date" in err


def test_build_without_an_engine_fails_with_the_reason(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/absent.sock")
    assert build_command(from_registry=False, force=False) == 1
    assert "no Docker engine is reachable" in capsys.readouterr().err


@pytest.mark.docker
def test_tag_prints_what_build_builds_without_an_engine(base_image: str, tmp_path: Path) -> None:
    # The GitHub Action keys its image cache on this before any build: it needs no engine.
    import subprocess
    import sys

    env = {"DOCKER_HOST": f"unix://{tmp_path}/absent.sock", "PATH": "/usr/bin:/bin"}
    argv = [sys.executable, "-m", "bot.cli", "sandbox", "tag"]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == base_image
