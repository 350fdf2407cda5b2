"""Webhook signature verification: sha256 only, the exact raw body, the exact secret."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from bot.web.signature import sign, verify

SECRET = b"It's a Secret to Everybody"
BODY = b"Hello, World!"


def test_matches_githubs_documented_example() -> None:
    # https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries#testing-the-webhook-payload-validation
    expected = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    assert sign(SECRET, BODY) == expected
    assert verify(SECRET, BODY, expected)


@pytest.mark.parametrize(
    ("header", "why"),
    [
        (None, "missing header"),
        ("", "empty header"),
        (
            "sha1=" + hmac.new(SECRET, BODY, hashlib.sha1).hexdigest(),
            "a valid sha1 signature is not accepted",
        ),
        ("sha256=" + "0" * 64, "wrong digest"),
        (sign(SECRET, BODY).upper(), "prefix must be lower case"),
        (sign(SECRET, BODY)[:-1], "truncated"),
        (sign(SECRET, BODY) + "0", "extended"),
        (sign(b"another secret", BODY), "other secret"),
        (sign(SECRET, BODY + b" "), "other body"),
        ("sha256=ü" + "0" * 63, "non-ascii"),
    ],
)
def test_rejects(header: str | None, why: str) -> None:
    assert not verify(SECRET, BODY, header), why


def test_an_empty_secret_verifies_nothing() -> None:
    assert not verify(b"", BODY, sign(b"", BODY))
