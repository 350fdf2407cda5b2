"""Build-time pip settings: arguments over environment, plain-http mirrors trusted explicitly."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox.errors import ImageBuildError
from sandbox.pipconf import PipSettings, pip_conf_text, pip_settings


def test_environment_then_arguments(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    bundle = tmp_path / "ca.pem"
    bundle.write_text("cert")
    monkeypatch.setenv("PIP_INDEX_URL", "https://mirror.example/simple")
    monkeypatch.setenv("PATCHGATE_CA_BUNDLE", str(bundle))
    assert pip_settings() == PipSettings(index_url="https://mirror.example/simple", ca_bundle=bundle)
    assert pip_settings(index_url="https://other.example/simple").index_url == "https://other.example/simple"


def test_a_missing_ca_bundle_is_a_build_error(tmp_path: Path) -> None:
    with pytest.raises(ImageBuildError, match="CA bundle"):
        pip_settings(ca_bundle=tmp_path / "absent.pem")


@pytest.mark.parametrize(
    ("url", "trusted"),
    [
        ("https://pypi.org/simple", None),
        ("http://u:p@172.17.0.1:8080/simple", "trusted-host = 172.17.0.1"),
    ],
)
def test_pip_conf(url: str, trusted: str | None) -> None:
    text = pip_conf_text(PipSettings(index_url=url, ca_bundle=Path("/x")), "/run/b/ca.crt")
    assert f"index-url = {url}\n" in text
    assert "cert = /run/b/ca.crt\n" in text
    assert ("trusted-host" in text) == (trusted is not None)
    if trusted:
        assert trusted in text
