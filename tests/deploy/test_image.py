"""The service image builds FROM the debootstrapped rootfs and serves against real PostgreSQL and Redis."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest

from tests.bot.harness import free_port

pytestmark = [pytest.mark.docker, pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]


@pytest.fixture(scope="module")
def image() -> str:
    from sandbox.engine import engine_available

    if not engine_available():
        pytest.skip("no Docker engine is reachable; scripts/engine.sh starts one")
    from sandbox.serviceimage import ensure_service_image

    # A no-op when the sources have not changed since the last build (scripts/test.sh builds it).
    return ensure_service_image()


@pytest.fixture
def container(image: str, postgres_url: str, redis_url: str) -> Iterator[tuple[str, str]]:
    from sandbox.engine import docker_client

    port = free_port()
    client = docker_client()
    # Host networking: the test PostgreSQL and Redis listen on the host's loopback.
    # Read-only root, a /tmp tmpfs, no capabilities: as the Helm chart runs it.
    box = client.containers.run(
        image,
        ["serve", "--no-workers"],
        detach=True,
        network_mode="host",
        read_only=True,
        tmpfs={"/tmp": "size=64m"},
        cap_drop=["ALL"],
        security_opt=["no-new-privileges"],
        environment={
            "PATCHGATE_HOST": "127.0.0.1",
            "PATCHGATE_PORT": str(port),
            "PATCHGATE_WEBHOOK_SECRET": "image-test-secret",
            "PATCHGATE_DATABASE_URL": postgres_url,
            "PATCHGATE_BROKER": redis_url,
        },
        labels={"patchgate.test": "service-image"},
    )
    assert box.id is not None
    try:
        yield f"http://127.0.0.1:{port}", box.id
    finally:
        box.remove(force=True)
        client.close()


def test_patchgate_serve_in_the_image_is_healthy_and_ready(container: tuple[str, str]) -> None:
    from sandbox.engine import docker_client

    url, box_id = container
    deadline = time.monotonic() + 120
    ready: httpx.Response | None = None
    while time.monotonic() < deadline:
        try:
            ready = httpx.get(f"{url}/readyz", timeout=2)
            if ready.status_code == 200:
                break
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    logs = docker_client().containers.get(box_id).logs().decode(errors="replace")
    assert ready is not None and ready.status_code == 200, logs[-4000:]
    assert ready.json() == {
        "ready": True,
        "database": "ok",
        "queue": "ok",
        "docker": "not used by this process",
        "warm_up": "ok",
    }
    assert httpx.get(f"{url}/healthz").json() == {"status": "ok"}
    # It says which store it uses, without the password.
    assert '"database": "postgresql+psycopg://postgres@127.0.0.1' in logs


def test_the_image_runs_as_the_service_user_without_a_database_default(image: str) -> None:
    from sandbox.engine import docker_client

    config = docker_client().images.get(image).attrs["Config"]
    assert config["User"] == "10001:10001"
    assert not any(e.startswith("PATCHGATE_DATABASE_URL=") for e in config["Env"])
