"""One end of the grader-subject channel: requests that may nest, in both directions.

A request is ``{"q": n, "op": ..., ...}``; its answer ``{"r": n, "ok": value}``
or ``{"r": n, "raise": {...}}``. While one side waits for an answer it serves
the other side's requests (a callback may call back), so answers arrive in
stack order. ``{"dead": reason}`` says the sender is going away.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from . import wire

Handler = Callable[[dict[str, Any]], dict[str, Any]]


class PeerGone(Exception):
    """The other side is gone or broke the protocol; the channel is unusable from now on."""


class PeerTimeout(PeerGone):
    """The other side did not answer before the deadline; the channel is unusable from now on."""


class Peer:
    """Send requests, serve the other side's, and keep answers in stack order."""

    def __init__(self, sock: socket.socket, handler: Handler) -> None:
        self.sock = sock
        self.handler = handler
        self.broken: str | None = None
        self._seq = 0
        self._send_lock = threading.Lock()

    def send(self, message: dict[str, Any]) -> None:
        with self._send_lock:
            wire.send(self.sock, message)

    def request(self, message: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
        """Send ``message`` and return its answer, serving nested requests meanwhile."""
        if self.broken is not None:
            raise PeerGone(self.broken)
        self._seq += 1
        seq = self._seq
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            self.send({**message, "q": seq})
            while True:
                left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
                incoming = wire.receive(self.sock, left)
                if "dead" in incoming:
                    raise wire.ChannelClosed(str(incoming.get("dead"))[:300])
                if "q" in incoming:
                    self.send(self.serve(incoming))
                    continue
                if incoming.get("r") != seq:
                    raise wire.ChannelClosed("an answer arrived out of order")
                return incoming
        except wire.ChannelTimeout as exc:
            self.broken = f"the other side did not answer in time ({exc})"
            raise PeerTimeout(self.broken) from None
        except (wire.ChannelClosed, OSError) as exc:
            self.broken = str(exc) or type(exc).__name__
            raise PeerGone(self.broken) from None

    def serve(self, incoming: dict[str, Any]) -> dict[str, Any]:
        """Answer one request of the other side."""
        answer = self.handler(incoming)
        return {**answer, "r": incoming.get("q")}

    def serve_forever(self) -> None:
        """Answer requests until the other side closes the channel."""
        while True:
            try:
                incoming = wire.receive(self.sock)
            except wire.ChannelClosed:
                return
            if "q" not in incoming:
                return
            self.send(self.serve(incoming))
