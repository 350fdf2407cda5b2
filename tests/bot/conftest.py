"""Fixtures of the service tests: the App's key pair, the fake GitHub, servers."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.bot.harness import APP_ID, Server, server_env
from tests.fakes.github_server import FakeGitHub, fake_github


@pytest.fixture(scope="session")
def app_key() -> tuple[str, bytes]:
    """The App's RSA key pair: (private PEM, public PEM)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return private, public


@pytest.fixture(scope="session")
def github(app_key: tuple[str, bytes]) -> Iterator[FakeGitHub]:
    with fake_github(APP_ID, app_key[1]) as fake:
        yield fake


@pytest.fixture
def make_server(
    github: FakeGitHub, app_key: tuple[str, bytes], tmp_path: Path
) -> Iterator[Callable[..., Server]]:
    """Build (not start) server processes sharing one state directory; all are stopped afterwards."""
    servers: list[Server] = []

    def make(**extra: str) -> Server:
        state = tmp_path / "state"
        state.mkdir(exist_ok=True)
        server = Server(
            server_env(github=github, private_key=app_key[0], state=state, **extra),
            log=tmp_path / "server.log",
        )
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.stop()


@pytest.fixture(scope="module")
def server(
    github: FakeGitHub, app_key: tuple[str, bytes], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    """One running server for the tests that do not need a private one."""
    state = tmp_path_factory.mktemp("state")
    srv = Server(
        server_env(github=github, private_key=app_key[0], state=state), log=state / "server.log"
    ).start()
    yield srv
    srv.stop()


def _fresh_postgres(url: str) -> Iterator[str]:
    """Create a database of its own for one test on the server behind ``url``; drop it afterwards."""
    import uuid

    import psycopg
    from sqlalchemy.engine import make_url

    base = make_url(url)
    name = f"patchgate_{uuid.uuid4().hex[:12]}"
    admin = base.set(drivername="postgresql", database="postgres").render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield base.set(database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty database: SQLite in a temporary file, or PostgreSQL from scripts/services.sh."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'store.db'}"
        return
    url = os.environ.get("PATCHGATE_TEST_POSTGRES_URL")
    if not url:
        pytest.skip('PATCHGATE_TEST_POSTGRES_URL is not set: run `eval "$(bash scripts/services.sh)"`')
    yield from _fresh_postgres(url)


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh, empty PostgreSQL database (the store every process of a scaled-out service shares)."""
    url = os.environ.get("PATCHGATE_TEST_POSTGRES_URL")
    if not url:
        pytest.skip('PATCHGATE_TEST_POSTGRES_URL is not set: run `eval "$(bash scripts/services.sh)"`')
    yield from _fresh_postgres(url)


@pytest.fixture
def redis_url() -> Iterator[str]:
    """The Redis from scripts/services.sh, flushed before and after the test."""
    url = os.environ.get("PATCHGATE_TEST_REDIS_URL")
    if not url:
        pytest.skip('PATCHGATE_TEST_REDIS_URL is not set: run `eval "$(bash scripts/services.sh)"`')
    import redis

    client = redis.Redis.from_url(url)
    client.flushdb()
    yield url
    client.flushdb()
    client.close()
