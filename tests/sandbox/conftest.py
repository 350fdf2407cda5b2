"""Sandbox test fixtures: one base image build per session, shared by every Docker test."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from sandbox.docker import DockerSandbox
from sandbox.engine import engine_available
from sandbox.images import ensure_base_image

# Every container a test session starts carries this label, so tests can find (and
# prove the absence of) their own containers while other sessions share the engine.
SESSION_LABEL = "patchgate.test-session"


@pytest.fixture(scope="session")
def session_id() -> str:
    return uuid.uuid4().hex


@pytest.fixture(scope="session")
def base_image() -> str:
    """Build (or find) the sandbox base image once per session."""
    if not engine_available():
        pytest.skip("no Docker engine is reachable; scripts/engine.sh starts one")
    return ensure_base_image()


@pytest.fixture(scope="session")
def sandbox(base_image: str, session_id: str) -> Iterator[DockerSandbox]:
    box = DockerSandbox(max_concurrency=4, labels={SESSION_LABEL: session_id})
    yield box
    box.client().close()
