"""Settings of the GitHub App service, read once through pydantic-settings.

Sources, highest precedence first: ``PATCHGATE_*`` environment variables, then
the config file (dotenv format, written by ``patchgate setup``; path from
``PATCHGATE_CONFIG``, default ``.state/patchgate.env``). Secrets are
``SecretStr``: they never print, and they never travel on a command line or
in a URL.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Annotated

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from checks.quality.inputs import JudgeSettings

DEFAULT_CONFIG = Path(".state/patchgate.env")
# GitHub caps webhook payloads at 25 MB and drops larger ones; anything bigger is not GitHub.
GITHUB_MAX_PAYLOAD = 25 * 1024 * 1024

Seconds = Annotated[float, Field(gt=0)]


class SettingsError(Exception):
    """A setting needed by the command is missing or unusable; the message names the variable."""


class Settings(BaseSettings):
    """Everything the web service and the workers need to know."""

    model_config = SettingsConfigDict(env_prefix="PATCHGATE_", extra="ignore", frozen=True)

    # The GitHub App (``patchgate setup`` writes these three).
    app_id: int | None = None
    private_key: SecretStr | None = None
    private_key_path: Path | None = None
    webhook_secret: SecretStr | None = None

    # Where state lives.
    database_url: str = "sqlite:///.state/patchgate.db"
    broker: str = "memory"
    # A directory, github:OWNER/REPO[@REF] or a git URL (bot.service.suitestore).
    test_store: str | Path = ".state/suites"
    work_dir: Path = Path(".state/work")

    # The judge model (litellm); no key means quality is reported as skipped.
    judge_api_base: str | None = None
    judge_api_key: SecretStr | None = None
    # One judge request's timeout and litellm's retries of it; and the wall time all judge
    # calls of one gate run may take together (quality, shadow, pairwise ranking).
    judge_timeout_s: Seconds = 60.0
    judge_num_retries: int = Field(default=2, ge=0, le=10)
    judge_budget_s: Seconds = 180.0

    # Workers.
    concurrency: int = Field(default=2, ge=1)
    # Fairness: jobs of one repository running at once across all workers (None: no limit), and
    # sandbox containers one worker process runs at once across all its jobs.
    max_jobs_per_repository: int | None = Field(default=4, ge=1)
    max_sandboxes: int = Field(default=2, ge=1)
    # An OCI runtime registered with the workers' Docker engine for sandbox containers
    # (e.g. runsc for gVisor); unset: the engine's default (runc).
    sandbox_runtime: str | None = None
    job_attempts: int = Field(default=3, ge=1)
    lease_s: Seconds = 60.0
    reaper_interval_s: Seconds = 15.0
    retry_backoff_s: float = Field(default=2.0, ge=0)

    # The web service.
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=0, le=65535)
    public_url: str = "http://127.0.0.1:8000"
    # Details-page links: their own key (default: derived from the webhook secret), a previous
    # key still accepted during a rotation, and how long a link lives (default 90 days).
    run_token_key: SecretStr | None = None
    run_token_previous_key: SecretStr | None = None
    run_token_ttl_s: Seconds = 90 * 24 * 3600.0
    max_body_bytes: int = Field(default=GITHUB_MAX_PAYLOAD, gt=0)
    # `patchgate worker` serves /metrics on this port (on PATCHGATE_HOST); unset: it serves none.
    metrics_port: int | None = Field(default=None, ge=1, le=65535)

    # GitHub.
    github_api_url: str = "https://api.github.com"
    github_url: str = "https://github.com"
    check_name: str = "patchgate"
    github_retries: int = Field(default=3, ge=0)
    max_rate_limit_wait_s: Seconds = 900.0
    max_tarball_bytes: int = Field(default=512 * 1024 * 1024, gt=0)
    # Tarballs kept by sha under <work_dir>/tarballs for later jobs (0: no cache).
    tarball_cache_bytes: int = Field(default=2 * 1024 * 1024 * 1024, ge=0)
    http_timeout_s: Seconds = 30.0
    # Opt-in: also upload each PR's findings as SARIF to code scanning (the App then needs the
    # security_events: write permission; an upload GitHub refuses is logged, never a verdict).
    upload_sarif: bool = False

    @field_validator("public_url", "github_api_url", "github_url")
    @classmethod
    def _no_trailing_slash(cls, value: str) -> str:
        return value.rstrip("/")

    @field_validator("broker")
    @classmethod
    def _known_broker(cls, value: str) -> str:
        if value != "memory" and not value.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("broker must be 'memory' or a redis:// URL")
        return value

    def judge(self) -> JudgeSettings | None:
        """Return how to reach the judge, or None when no judge is configured."""
        if not self.judge_api_base and self.judge_api_key is None:
            return None
        return JudgeSettings(
            api_base=self.judge_api_base,
            api_key=self.judge_api_key.get_secret_value() if self.judge_api_key else None,
            timeout_s=self.judge_timeout_s,
            num_retries=self.judge_num_retries,
            budget_s=self.judge_budget_s,
        )

    def private_key_pem(self) -> str:
        """Return the App's private key (PEM), from the value or the file."""
        if self.private_key is not None:
            return self.private_key.get_secret_value()
        if self.private_key_path is not None:
            try:
                return self.private_key_path.read_text()
            except OSError as exc:
                raise SettingsError(f"PATCHGATE_PRIVATE_KEY_PATH: cannot read the key: {exc}") from exc
        raise SettingsError("no App private key: set PATCHGATE_PRIVATE_KEY or PATCHGATE_PRIVATE_KEY_PATH")

    def require_app(self) -> tuple[int, str]:
        """Return (App id, private key) or say which setting is missing."""
        if self.app_id is None:
            raise SettingsError("PATCHGATE_APP_ID is not set (run `patchgate setup` to create the App)")
        return self.app_id, self.private_key_pem()

    def require_webhook_secret(self) -> bytes:
        """Return the webhook secret; the service refuses to start without one."""
        if self.webhook_secret is None or not self.webhook_secret.get_secret_value():
            raise SettingsError("PATCHGATE_WEBHOOK_SECRET is not set: every delivery would be rejected")
        return self.webhook_secret.get_secret_value().encode()


def check_writable(directory: Path, what: str) -> None:
    """Raise SettingsError, naming the owner and the fix, unless this process can write ``directory``.

    The service image runs as uid 10001: a state directory a host created as root
    (a compose bind mount, a hostPath) otherwise fails later, mid-job, with a bare OSError.
    """
    probe = directory
    try:
        directory.mkdir(parents=True, exist_ok=True)
        probe = directory / f".patchgate-write-check-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        where = (
            directory if directory.exists() else next((p for p in directory.parents if p.exists()), directory)
        )
        try:
            owner = f"owned by uid {where.stat().st_uid}"
        except OSError:
            owner = "unreadable"
        if exc.errno == errno.EROFS:
            fix = "mount a writable volume there"
        else:
            fix = f"make it this uid's, e.g. `chown -R {os.getuid()} {where}`"
        raise SettingsError(
            f"{what} {directory} is not writable by this process (uid {os.getuid()}; {where} is {owner}): "
            f"{fix} ({exc.strerror or exc})"
        ) from exc


def check_state(settings: Settings, *, runs_jobs: bool = True) -> None:
    """Check, at start, that the directories this process writes are writable (see check_writable).

    The work directory only where jobs run: a web process without workers writes none (the
    chart and the image test run it on a read-only root).
    """
    if runs_jobs:
        check_writable(settings.work_dir, "PATCHGATE_WORK_DIR")
    url = settings.database_url
    if url.startswith("sqlite:///") and url != "sqlite:///:memory:":
        check_writable(Path(url.removeprefix("sqlite:///")).parent, "the SQLite database's directory")


def config_path() -> Path:
    """Return the config file's path: ``PATCHGATE_CONFIG`` or the default."""
    return Path(os.environ.get("PATCHGATE_CONFIG", str(DEFAULT_CONFIG)))


def load_settings(config: Path | None = None) -> Settings:
    """Read the settings from the environment and the config file (the environment wins)."""
    path = config if config is not None else config_path()
    # A missing file is fine: the environment alone can configure everything.
    return Settings(_env_file=path if path.is_file() else None)  # type: ignore[call-arg]
