"""The Docker engine connection: one place that turns "no engine" into EngineUnavailable."""

from __future__ import annotations

import docker
from docker.errors import DockerException

from sandbox.errors import EngineUnavailable

# Image pulls and builds can take minutes; a run's own deadline is enforced separately.
API_TIMEOUT_S = 600


def docker_client() -> docker.DockerClient:
    """Connect to the Docker engine from the environment (DOCKER_HOST or the local socket).

    Raises EngineUnavailable, whose message says how to start an engine, when
    none answers a ping.
    """
    try:
        client = docker.from_env(timeout=API_TIMEOUT_S)
        client.ping()
    except DockerException as exc:
        raise EngineUnavailable(_first_line(str(exc))) from exc
    except OSError as exc:
        raise EngineUnavailable(_first_line(str(exc))) from exc
    return client


def engine_available() -> bool:
    """Return True when a Docker engine answers."""
    try:
        docker_client().close()
    except EngineUnavailable:
        return False
    return True


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else "no detail"
