"""Where image builds install Python packages from: the index URL and the CA bundle."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from sandbox.errors import ImageBuildError

DEFAULT_INDEX_URL = "https://pypi.org/simple"
HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")


class PipSettings(BaseSettings):
    """Index and CA bundle for builds; read from the environment when asked, never at import."""

    model_config = SettingsConfigDict(frozen=True, extra="ignore", populate_by_name=True)

    index_url: str = Field(default=DEFAULT_INDEX_URL, validation_alias="PIP_INDEX_URL")
    ca_bundle: Path = Field(
        default=HOST_CA_BUNDLE, validation_alias=AliasChoices("PATCHGATE_CA_BUNDLE", "PIP_CERT")
    )


def pip_settings(*, index_url: str | None = None, ca_bundle: Path | None = None) -> PipSettings:
    """Return the build's pip settings: explicit arguments win over the environment."""
    settings = PipSettings()
    overrides: dict[str, object] = {}
    if index_url is not None:
        overrides["index_url"] = index_url
    if ca_bundle is not None:
        overrides["ca_bundle"] = ca_bundle
    if overrides:
        settings = settings.model_copy(update=overrides)
    if not settings.ca_bundle.is_file():
        raise ImageBuildError(
            f"CA bundle {settings.ca_bundle} does not exist; pass one (PATCHGATE_CA_BUNDLE) "
            "so builds can verify the package index"
        )
    return settings


def pip_conf_text(settings: PipSettings, cert_path: str) -> str:
    """Render a pip.conf for a build container that sees the CA bundle at ``cert_path``.

    A plain-http index (a local mirror) is trusted explicitly: pip ignores it otherwise.
    """
    lines = [
        "[global]",
        f"index-url = {settings.index_url}",
        f"cert = {cert_path}",
        "disable-pip-version-check = true",
        "no-cache-dir = true",
        "break-system-packages = true",
    ]
    parts = urlsplit(settings.index_url)
    if parts.scheme == "http" and parts.hostname:
        lines.append(f"trusted-host = {parts.hostname}")
    return "\n".join(lines) + "\n"
