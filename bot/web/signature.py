"""Webhook signatures: HMAC-SHA256 of the raw body, compared in constant time. No I/O.

GitHub sends ``X-Hub-Signature-256: sha256=<hex>`` (and a legacy SHA-1
``X-Hub-Signature``, which is never accepted):
https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries
"""

from __future__ import annotations

import hashlib
import hmac

HEADER = "X-Hub-Signature-256"
_PREFIX = "sha256="


def sign(secret: bytes, body: bytes) -> str:
    """Return the ``X-Hub-Signature-256`` value GitHub would send for ``body``."""
    return _PREFIX + hmac.new(secret, body, hashlib.sha256).hexdigest()


def verify(secret: bytes, body: bytes, header: str | None) -> bool:
    """Return True only for a well-formed sha256 signature of ``body`` under ``secret``."""
    if not secret or header is None or not header.startswith(_PREFIX):
        return False
    expected = sign(secret, body)
    # compare_digest wants equal types; a non-ASCII header is simply wrong.
    try:
        given = header.encode("ascii")
    except UnicodeEncodeError:
        return False
    return hmac.compare_digest(expected.encode("ascii"), given)
