"""Fixtures of the GitHub client tests: the App and one installation's client, against the fake."""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from bot.github.app import GitHubApp
from bot.github.client import Installation
from bot.settings import Settings
from tests.bot.harness import APP_ID, INSTALLATION
from tests.fakes.github_server import FakeGitHub


@pytest.fixture
def settings(github: FakeGitHub, app_key: tuple[str, bytes]) -> Settings:
    return Settings(
        app_id=APP_ID,
        private_key=SecretStr(app_key[0]),
        webhook_secret=SecretStr("s"),
        github_api_url=github.url,
        retry_backoff_s=0.01,
        github_retries=3,
        max_rate_limit_wait_s=5,
    )


@pytest.fixture
def app(settings: Settings) -> GitHubApp:
    return GitHubApp(settings)


@pytest.fixture
def client(app: GitHubApp) -> Installation:
    return app.installation(INSTALLATION)
