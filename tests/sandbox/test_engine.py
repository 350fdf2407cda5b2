"""The engine connection: an unreachable engine is an error that says how to start one."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox.docker import DockerSandbox
from sandbox.engine import docker_client, engine_available
from sandbox.errors import EngineUnavailable
from sandbox.spec import RunSpec


@pytest.fixture
def no_engine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-such-docker.sock")


@pytest.mark.usefixtures("no_engine")
def test_unreachable_engine_says_how_to_start_one() -> None:
    with pytest.raises(EngineUnavailable, match="dockerd") as info:
        docker_client()
    assert "scripts/engine.sh" in str(info.value)
    assert not engine_available()


@pytest.mark.usefixtures("no_engine")
def test_a_run_without_an_engine_raises_not_returns() -> None:
    with pytest.raises(EngineUnavailable):
        DockerSandbox().run(RunSpec(image="patchgate-base:latest", argv=("true",)))
