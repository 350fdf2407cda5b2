"""The Docker engine connection: one place that turns "no engine" into EngineUnavailable."""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterator

import docker
import requests
from docker.errors import APIError, DockerException

from sandbox.errors import EngineUnavailable, SandboxError

# Image pulls and builds can take minutes; a run's own deadline is enforced separately.
API_TIMEOUT_S = 600
DEFAULT_HOST = "unix:///var/run/docker.sock"
# /_ping exists in every API version; 1.24 is the oldest current engines accept.
PROBE_API_VERSION = "1.24"


def docker_client() -> docker.DockerClient:
    """Connect to the Docker engine from the environment (DOCKER_HOST or the local socket).

    Raises EngineUnavailable, whose message says how to start an engine, when
    none answers a ping.
    """
    _check_unix_socket()
    # Ping with a pinned API version first: docker-py's version probe leaks its socket
    # when no engine answers. Then negotiate the version with the engine that did answer.
    try:
        probe = docker.from_env(version=PROBE_API_VERSION, timeout=10)
    except (DockerException, OSError) as exc:
        raise EngineUnavailable(_first_line(str(exc))) from exc
    try:
        probe.ping()
    except (DockerException, OSError, requests.exceptions.RequestException) as exc:
        raise EngineUnavailable(_first_line(str(exc))) from exc
    finally:
        probe.close()
    try:
        return docker.from_env(timeout=API_TIMEOUT_S)
    except (DockerException, OSError) as exc:
        raise EngineUnavailable(_first_line(str(exc))) from exc


@contextlib.contextmanager
def engine_errors() -> Iterator[None]:
    """Turn the engine client's exceptions into EngineUnavailable and SandboxError."""
    try:
        yield
    except requests.exceptions.ConnectionError as exc:
        raise EngineUnavailable(str(exc).splitlines()[0]) from exc
    except requests.exceptions.RequestException as exc:
        raise SandboxError(f"the Docker engine did not answer in time: {exc}") from exc
    except APIError as exc:
        raise SandboxError(f"the Docker engine failed the run: {exc.explanation}") from exc
    except DockerException as exc:
        raise SandboxError(f"the Docker engine failed the run: {exc}") from exc


def engine_available() -> bool:
    """Return True when a Docker engine answers."""
    try:
        docker_client().close()
    except EngineUnavailable:
        return False
    return True


def _check_unix_socket() -> None:
    """Fail fast, and without leaking a socket as docker-py does, when the local socket is dead."""
    host = os.environ.get("DOCKER_HOST") or DEFAULT_HOST
    if not host.startswith("unix://"):
        return
    path = host.removeprefix("unix://")
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            probe.settimeout(10)
            probe.connect(path)
    except OSError as exc:
        raise EngineUnavailable(f"cannot connect to {path}: {exc.strerror or exc}") from exc


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else "no detail"
