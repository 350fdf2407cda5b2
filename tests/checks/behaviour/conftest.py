"""Behaviour test fixtures: one sandbox base image and one DockerSandbox per session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sandbox.docker import DockerSandbox
from sandbox.engine import engine_available
from sandbox.images import ensure_base_image


@pytest.fixture(scope="session")
def behaviour_image() -> str:
    """Build (or find) the sandbox base image once; the behaviour tests' repositories need nothing more."""
    if not engine_available():
        pytest.skip("no Docker engine is reachable; scripts/engine.sh starts one")
    return ensure_base_image()


@pytest.fixture(scope="session")
def behaviour_sandbox(behaviour_image: str) -> Iterator[DockerSandbox]:
    box = DockerSandbox(max_concurrency=2, labels={"patchgate.test": "behaviour"})
    yield box
    box.client().close()
