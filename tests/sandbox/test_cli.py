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
