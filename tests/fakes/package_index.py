"""A real PEP 503 package index over HTTP(S), with basic auth, serving wheels and sdists built on the fly.

Environment-image tests install from it: no public index is needed, and the credentials
in its URL stand in for a private index's token that must never reach an image. An index
with no user is public (no credentials in its URL, none asked for).
"""

from __future__ import annotations

import base64
import hashlib
import io
import ipaddress
import socket
import ssl
import subprocess
import tarfile
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def make_sdist(name: str, version: str, setup_py: str) -> tuple[str, bytes]:
    """Return (filename, bytes) of a legacy sdist (a ``setup.py``, no ``pyproject.toml``): pip runs it."""
    root = f"{name}-{version}"
    files = {
        f"{root}/setup.py": setup_py.encode(),
        f"{root}/PKG-INFO": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
    }
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for path, data in files.items():
            info = tarfile.TarInfo(path)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return f"{root}.tar.gz", buffer.getvalue()


def make_wheel(
    name: str, version: str, module_source: str, extra: dict[str, str] | None = None
) -> tuple[str, bytes]:
    """Return (filename, bytes) of a pure-Python wheel: one module named ``name``, and ``extra`` files."""
    dist = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": module_source.encode(),
        **{path: text.encode() for path, text in (extra or {}).items()},
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

    user: str = ""
    password: str = ""
    wheels: dict[str, dict[str, bytes]] = field(default_factory=dict)  # project -> file -> bytes (any dist)
    requests: list[str] = field(default_factory=list)
    url: str = ""

    def add(self, name: str, version: str, module_source: str, extra: dict[str, str] | None = None) -> None:
        filename, data = make_wheel(name, version, module_source, extra)
        self.wheels.setdefault(name, {})[filename] = data

    def add_sdist(self, name: str, version: str, setup_py: str) -> None:
        filename, data = make_sdist(name, version, setup_py)
        self.wheels.setdefault(name, {})[filename] = data


def _handler(index: PackageIndex) -> type[BaseHTTPRequestHandler]:
    expected = "Basic " + base64.b64encode(f"{index.user}:{index.password}".encode()).decode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            index.requests.append(self.path)
            if index.user and self.headers.get("Authorization") != expected:
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
def serve_index(
    index: PackageIndex, host: str, *, tls: tuple[Path, Path] | None = None
) -> Iterator[PackageIndex]:
    """Serve ``index`` on ``host`` (an address containers can reach) until the block ends.

    ``tls`` (certificate, key) serves it over https.
    """
    server = ThreadingHTTPServer((host, 0), _handler(index))
    port = server.server_address[1]
    scheme = "http"
    if tls is not None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*tls)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        scheme = "https"
    credentials = f"{index.user}:{index.password}@" if index.user else ""
    index.url = f"{scheme}://{credentials}{host}:{port}/simple"
    thread = threading.Thread(target=server.serve_forever, daemon=True)  # one thread per request: a stalled
    # TLS handshake holds its own thread only
    thread.start()
    try:
        yield index
    finally:
        server.shutdown()
        server.server_close()


def self_signed(ip: str, directory: Path) -> tuple[Path, Path]:
    """A certificate for ``ip`` (its own CA: the file a client trusts) and its key, made by openssl."""
    cert, key = directory / "index.crt", directory / "index.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", f"/CN={ip}",
         "-addext", f"subjectAltName=IP:{ip}", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


def bridge_gateway() -> str:
    """The Docker bridge's gateway: an address of this host that containers on the default network reach."""
    from sandbox.engine import docker_client

    client = docker_client()
    try:
        ipam = client.networks.get("bridge").attrs["IPAM"]["Config"][0]
    finally:
        client.close()
    # The engine may omit the gateway; Docker gives the bridge the subnet's first address.
    return str(ipam.get("Gateway") or ipaddress.ip_network(ipam["Subnet"])[1])


@contextmanager
def https_index(index: PackageIndex, host: str, directory: Path) -> Iterator[tuple[PackageIndex, Path]]:
    """Serve ``index`` over https on ``host`` with a certificate of its own; yield it and that certificate."""
    directory.mkdir(parents=True, exist_ok=True)
    cert, key = self_signed(host, directory)
    directory.chmod(0o755)
    cert.chmod(0o644)  # read by containers' users
    with serve_index(index, host, tls=(cert, key)) as running:
        yield running, cert


@dataclass
class Neighbour:
    """A listening socket standing for any service the host or its network offers; counts who connected."""

    port: int = 0
    connections: list[str] = field(default_factory=list)


@contextmanager
def neighbour_on(host: str) -> Iterator[Neighbour]:
    """Listen on ``host`` until the block ends, recording each peer that connects."""
    found = Neighbour()
    server = socket.create_server((host, 0))
    found.port = server.getsockname()[1]
    server.settimeout(0.2)
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, peer = server.accept()
            except TimeoutError:
                continue
            found.connections.append(peer[0])
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield found
    finally:
        stop.set()
        thread.join(timeout=5)
        server.close()
