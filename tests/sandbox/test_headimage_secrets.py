"""What of a package index's URL may be secret: never shown, never beside code of the change's choosing."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from sandbox.headimage import _shown, has_credentials, scrubbed

CLOUDSMITH = "https://dl.cloudsmith.io/AbCdTok123xyz/org/repo/python/simple/"


@pytest.mark.parametrize(
    ("url", "secret"),
    [
        ("https://pypi.org/simple", False),
        ("https://pypi.org/simple/", False),
        ("https://mirror.example:8443/simple/", False),
        ("https://devpi.example/root/pypi/+simple/", False),
        # A token in the user or password, the path (Cloudsmith), the query, or an unknown layout.
        ("https://tok:@pypi.example/simple", True),
        ("https://user:pass@pypi.example/simple", True),
        (CLOUDSMITH, True),
        ("https://pypi.example/simple?token=abc", True),
        ("https://artifacts.example/artifactory/api/pypi/pypi/simple", True),
    ],
)
def test_only_public_layouts_count_as_holding_no_secret(url: str, secret: bool) -> None:
    assert has_credentials(url) is secret
    # The path of an index that may hold one is never shown; a public one's is.
    assert (urlsplit(url).path in _shown(url)) is (not secret)
    assert "tok" not in _shown(url) and "pass" not in _shown(url)


def test_a_token_in_the_path_never_reaches_what_pip_printed() -> None:
    said = (
        f"Looking in indexes: {CLOUDSMITH}\nERROR: 404 for {CLOUDSMITH}pkg/ (AbCdTok123xyz)\npython3 -m pip"
    )
    clean = scrubbed(said, CLOUDSMITH)
    assert "AbCdTok123xyz" not in clean
    assert "python3 -m" in clean  # short words of the path are no tokens: the rest stays readable
    assert scrubbed("Looking in indexes: https://pypi.org/simple", "https://pypi.org/simple").endswith(
        "/simple"
    )
