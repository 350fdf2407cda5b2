"""The security headers: which answer carries which, replaced rather than doubled."""

from __future__ import annotations

import pytest

from bot.web.headers import encoded, for_path, merged
from bot.web.runpage import PRIVATE, SECURITY_HEADERS

EVERY = dict(SECURITY_HEADERS)
RUNS = {**SECURITY_HEADERS, **PRIVATE}


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/webhook", EVERY),
        ("/healthz", EVERY),
        ("/metrics", EVERY),
        ("/runs/7", RUNS),
        ("/runs/", RUNS),
        ("/runs", EVERY),  # not a run's page
        ("/runsx/1", EVERY),
    ],
)
def test_each_path_gets_its_headers(path: str, expected: dict[str, str]) -> None:
    got = for_path(path)
    assert {k.decode(): v.decode() for k, v in got} == {k.lower(): v for k, v in expected.items()}
    assert len(got) == len(expected)


@pytest.mark.parametrize(
    ("given", "extra", "expected"),
    [
        ([], {"X-A": "1"}, [(b"x-a", b"1")]),
        ([(b"content-type", b"text/html")], {"X-A": "1"}, [(b"content-type", b"text/html"), (b"x-a", b"1")]),
        # the app's own value of a header we set is replaced, whatever its case
        ([(b"X-Frame-Options", b"SAMEORIGIN")], {"X-Frame-Options": "DENY"}, [(b"x-frame-options", b"DENY")]),
        (
            [(b"cache-control", b"max-age=60"), (b"cache-control", b"public")],
            {"Cache-Control": "no-store"},
            [(b"cache-control", b"no-store")],
        ),
    ],
)
def test_merged_replaces_and_never_doubles(
    given: list[tuple[bytes, bytes]], extra: dict[str, str], expected: list[tuple[bytes, bytes]]
) -> None:
    assert merged(given, encoded(extra)) == expected
