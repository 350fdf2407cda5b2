"""A fake OpenAI-compatible chat server: a real HTTP server in a thread, scripted per call.

It speaks ``POST /v1/chat/completions`` (and ``/chat/completions``) well enough for
litellm's real OpenAI client path, and records every request so tests can assert
what the judge was shown. Replies come from a script (one per call, in order) and,
once the script is used up, from a responder function.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PATHS = ("/v1/chat/completions", "/chat/completions")


@dataclass(frozen=True)
class Reply:
    """One scripted answer. ``raw`` replaces the whole HTTP body (for garbage bodies)."""

    content: str | None = ""
    status: int = 200
    refusal: str | None = None
    delay_s: float = 0.0
    raw: bytes | None = None
    finish_reason: str = "stop"
    prompt_tokens: int = 100
    completion_tokens: int = 20
    headers: tuple[tuple[str, str], ...] = ()

    @classmethod
    def json(cls, payload: object, **kw: Any) -> Reply:
        return cls(content=json.dumps(payload), **kw)

    @classmethod
    def error(cls, status: int, message: str = "scripted error", **kw: Any) -> Reply:
        body = json.dumps({"error": {"message": message, "type": "server_error", "code": status}})
        # retry-after 0 keeps client back-off out of the test's wall time.
        return cls(status=status, raw=body.encode(), headers=(("retry-after", "0"),), **kw)


Responder = Callable[[dict[str, Any]], Reply]


@dataclass
class FakeOpenAI:
    """The server's state: the script, the fallback responder, and what it received."""

    responder: Responder | None = None
    script: list[Reply] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    stopping: threading.Event = field(default_factory=threading.Event)
    url: str = ""

    def push(self, *replies: Reply) -> None:
        """Append replies to the script; each call consumes one."""
        with self.lock:
            self.script.extend(replies)

    def next_reply(self, request: dict[str, Any]) -> Reply:
        with self.lock:
            self.requests.append(request)
            if self.script:
                return self.script.pop(0)
        if self.responder is not None:
            return self.responder(request)
        return Reply.error(500, "fake server: script exhausted")

    @property
    def prompts(self) -> list[str]:
        """Every message text of every request received, one string per request."""
        with self.lock:
            return ["\n".join(_text(m) for m in r.get("messages", [])) for r in self.requests]

    @property
    def calls(self) -> int:
        with self.lock:
            return len(self.requests)


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")


def _completion(request: dict[str, Any], reply: Reply) -> bytes:
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.refusal is not None:
        message["refusal"] = reply.refusal
    body = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model", "fake"),
        "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason}],
        "usage": {
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens,
        },
    }
    return json.dumps(body).encode()


def _handler(state: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet test output
            return

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length)
            if self.path.split("?")[0] not in PATHS:
                self._send(404, b'{"error": {"message": "not found"}}', ())
                return
            request = json.loads(raw or b"{}")
            reply = state.next_reply(request)
            if reply.delay_s and state.stopping.wait(reply.delay_s):
                return
            body = reply.raw if reply.raw is not None else _completion(request, reply)
            self._send(reply.status, body, reply.headers)

        def _send(self, status: int, body: bytes, headers: tuple[tuple[str, str], ...]) -> None:
            # The client may have given up (timeout tests): a closed socket is expected.
            try:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                for name, value in headers:
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass

    return Handler


@contextmanager
def serve(responder: Responder | None = None, *replies: Reply) -> Iterator[FakeOpenAI]:
    """Run a fake server on a free local port for the duration of the block."""
    state = FakeOpenAI(responder=responder, script=list(replies))
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    # A short poll interval keeps shutdown (once per test) quick.
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-openai", daemon=True
    )
    thread.start()
    try:
        yield state
    finally:
        state.stopping.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
