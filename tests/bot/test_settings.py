"""Settings: PATCHGATE_ environment variables over the config file; secrets stay secret."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pydantic import ValidationError

from bot.cli.commands.setup import write_config
from bot.settings import Settings, SettingsError, load_settings

PEM = "-----BEGIN PRIVATE KEY-----\nMIIE\nabc\n-----END PRIVATE KEY-----\n"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.startswith("PATCHGATE_"):
            monkeypatch.delenv(key)


def test_defaults(tmp_path: Path) -> None:
    s = load_settings(tmp_path / "absent.env")
    assert (s.app_id, s.broker, s.concurrency) == (None, "memory", 2)
    assert s.database_url == "sqlite:///.state/patchgate.db"
    assert s.github_api_url == "https://api.github.com"
    with pytest.raises(SettingsError, match="PATCHGATE_APP_ID"):
        s.require_app()
    with pytest.raises(SettingsError, match="PATCHGATE_WEBHOOK_SECRET"):
        s.require_webhook_secret()


def test_the_config_file_written_by_setup_is_read_and_the_environment_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "patchgate.env"
    write_config(
        config,
        {
            "PATCHGATE_APP_ID": "12",
            "PATCHGATE_PRIVATE_KEY": PEM,
            "PATCHGATE_WEBHOOK_SECRET": 'quo"te\\back',
            "PATCHGATE_CONCURRENCY": "4",
        },
    )
    assert config.stat().st_mode & 0o777 == 0o600
    s = load_settings(config)
    assert s.require_app() == (12, PEM)
    assert s.require_webhook_secret() == b'quo"te\\back'
    assert s.concurrency == 4
    monkeypatch.setenv("PATCHGATE_CONCURRENCY", "7")
    monkeypatch.setenv("PATCHGATE_CONFIG", str(config))
    assert load_settings().concurrency == 7


def test_rewriting_the_config_keeps_other_lines(tmp_path: Path) -> None:
    config = tmp_path / "patchgate.env"
    config.write_text("PATCHGATE_BROKER=redis://127.0.0.1:6379/0\nPATCHGATE_APP_ID=1\n")
    config.chmod(0o644)
    write_config(config, {"PATCHGATE_APP_ID": "2"})
    assert config.stat().st_mode & 0o777 == 0o600
    s = load_settings(config)
    assert (s.app_id, s.broker) == (2, "redis://127.0.0.1:6379/0")


def test_the_private_key_can_be_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key = tmp_path / "app.pem"
    key.write_text(PEM)
    monkeypatch.setenv("PATCHGATE_APP_ID", "3")
    monkeypatch.setenv("PATCHGATE_PRIVATE_KEY_PATH", str(key))
    assert load_settings(tmp_path / "absent.env").require_app() == (3, PEM)
    monkeypatch.setenv("PATCHGATE_PRIVATE_KEY_PATH", str(tmp_path / "missing.pem"))
    with pytest.raises(SettingsError, match="PATCHGATE_PRIVATE_KEY_PATH"):
        load_settings(tmp_path / "absent.env").require_app()


def test_secrets_never_print(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATCHGATE_WEBHOOK_SECRET", "hunter2")
    monkeypatch.setenv("PATCHGATE_PRIVATE_KEY", PEM)
    monkeypatch.setenv("PATCHGATE_JUDGE_API_KEY", "sk-secret")
    s = load_settings(tmp_path / "absent.env")
    assert "hunter2" not in repr(s) and "MIIE" not in repr(s) and "sk-secret" not in repr(s)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("PATCHGATE_BROKER", "kafka://x"),
        ("PATCHGATE_CONCURRENCY", "0"),
        ("PATCHGATE_LEASE_S", "0"),
    ],
)
def test_invalid_values_are_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, name: str, value: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ValidationError):
        load_settings(tmp_path / "absent.env")


def test_urls_lose_their_trailing_slash() -> None:
    s = Settings(public_url="https://gate.example/", github_api_url="https://ghe.example/api/v3/")
    assert (s.public_url, s.github_api_url) == ("https://gate.example", "https://ghe.example/api/v3")


def test_a_state_directory_the_process_cannot_write_is_refused_at_start_naming_the_fix(
    tmp_path: Path,
) -> None:
    import os

    from bot.settings import SettingsError, check_state

    blocker = tmp_path / "state"
    blocker.write_text("a file where the state directory should be")
    settings = Settings(work_dir=blocker / "work", database_url=f"sqlite:///{tmp_path / 'ok' / 'db.sqlite'}")
    with pytest.raises(SettingsError) as refused:
        check_state(settings)
    message = str(refused.value)
    assert message.startswith(f"PATCHGATE_WORK_DIR {blocker / 'work'} is not writable by this process")
    assert f"uid {os.getuid()}" in message and "chown -R" in message
    writable = Settings(work_dir=tmp_path / "work", database_url=f"sqlite:///{blocker / 'db.sqlite'}")
    with pytest.raises(SettingsError, match="the SQLite database's directory"):
        check_state(writable)
    check_state(Settings(work_dir=tmp_path / "work", database_url=f"sqlite:///{tmp_path / 'db' / 'x.db'}"))
    # A web process without workers writes no work directory (it runs on a read-only root).
    check_state(Settings(work_dir=blocker / "work", database_url="postgresql://db/x"), runs_jobs=False)
    assert not list((tmp_path / "work").iterdir())  # the probe leaves nothing behind
