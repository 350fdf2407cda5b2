"""The headers every answer carries (bot/web/runpage.py's), added by a plain ASGI middleware.

Starlette's ``@app.middleware("http")`` (BaseHTTPMiddleware) ran every request
through an anyio task group and memory streams: about a sixth of the server's
CPU at 100 deliveries/s went there (bench/README.md, ingress.py). This one
only wraps ``send`` and rewrites the ``http.response.start`` message.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from bot.web.runpage import PRIVATE, SECURITY_HEADERS

RawHeaders = list[tuple[bytes, bytes]]


def encoded(headers: Mapping[str, str]) -> RawHeaders:
    """Return ``headers`` as ASGI raw headers (lower-case latin-1 names, latin-1 values)."""
    return [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]


def merged(headers: Iterable[tuple[bytes, bytes]], extra: RawHeaders) -> RawHeaders:
    """Return ``headers`` with ``extra`` set: any header of the same name is replaced, not doubled."""
    names = {name for name, _ in extra}
    return [(k, v) for k, v in headers if k.lower() not in names] + extra


_EVERY = encoded(SECURITY_HEADERS)
_RUNS = merged(_EVERY, encoded(PRIVATE))


def for_path(path: str) -> RawHeaders:
    """Return the headers an answer on ``path`` carries: /runs/ and /repos/ pages are never cached either."""
    return _RUNS if path.startswith(("/runs/", "/repos/")) else _EVERY


class SecurityHeaders:
    """ASGI middleware: set ``for_path(path)`` on every HTTP answer."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        extra = for_path(scope["path"])

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": merged(message.get("headers", []), extra)}
            await send(message)

        await self.app(scope, receive, send_with_headers)
