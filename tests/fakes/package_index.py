"""A real PEP 503 package index over HTTP, with basic auth, serving wheels built on the fly.

Environment-image tests install from it: no public index is needed, and the credentials
in its URL stand in for a private index's token that must never reach an image.
"""

from __future__ import annotations

import base64
import hashlib
import io
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def make_wheel(name: str, version: str, module_source: str) -> tuple[str, bytes]:
    """Return (filename, bytes) of a pure-Python wheel with one module named ``name``."""
    dist = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": module_source.encode(),
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{dist}/WHEEL": (
            b"Wheel-Version: 1.0\nGenerator: patchgate-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{dist}/RECORD,,")
    files[f"{dist}/RECORD"] = ("\n".join(record) + "\n").encode()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path, data in files.items():
            archive.writestr(path, data)
    return f"{name}-{version}-py3-none-any.whl", buffer.getvalue()


@dataclass
class PackageIndex:
    """What the running index serves and what it was asked."""

    user: str
    password: str
    wheels: dict[str, dict[str, bytes]] = field(default_factory=dict)  # project -> file -> bytes
    requests: list[str] = field(default_factory=list)
    url: str = ""

    def add(self, name: str, version: str, module_source: str) -> None:
        filename, data = make_wheel(name, version, module_source)
        self.wheels.setdefault(name, {})[filename] = data


def _handler(index: PackageIndex) -> type[BaseHTTPRequestHandler]:
    expected = "Basic " + base64.b64encode(f"{index.user}:{index.password}".encode()).decode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            index.requests.append(self.path)
            if self.headers.get("Authorization") != expected:
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="index"')
                self.end_headers()
                return
            parts = [p for p in self.path.split("/") if p]
            if len(parts) == 2 and parts[0] == "simple" and parts[1] in index.wheels:
                links = "".join(
                    f'<a href="/files/{parts[1]}/{fn}">{fn}</a>\n' for fn in index.wheels[parts[1]]
                )
                self._send(200, f"<html><body>\n{links}</body></html>".encode(), "text/html")
            elif len(parts) == 3 and parts[0] == "files" and parts[2] in index.wheels.get(parts[1], {}):
                self._send(200, index.wheels[parts[1]][parts[2]], "application/octet-stream")
            else:
                self._send(404, b"not found", "text/plain")

        def _send(self, status: int, body: bytes, kind: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler


@contextmanager
def serve_index(index: PackageIndex, host: str) -> Iterator[PackageIndex]:
    """Serve ``index`` on ``host`` (an address containers can reach) until the block ends."""
    server = ThreadingHTTPServer((host, 0), _handler(index))
    port = server.server_address[1]
    index.url = f"http://{index.user}:{index.password}@{host}:{port}/simple"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield index
    finally:
        server.shutdown()
        server.server_close()
