"""The build network for a change's dependencies: out to the package index through the proxy, nowhere else.

Real Docker. The index is the tests' fake one over https (a certificate of
its own) on the engine's bridge gateway; beside it listens a "neighbour",
standing for any service the host or its network offers. A probe run as the
build runs (no network, the relay to the proxy) tries every way out; the
same probe on the default bridge shows each of those ways open there, so the
probe is not blind. (On an ``internal`` Docker network, the first design,
this probe reached the neighbour directly: the host's own addresses stay
reachable from such a network.)
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sandbox.egress import Egress, allowed_targets, index_only
from sandbox.engine import docker_client
from sandbox.errors import ImageBuildError
from sandbox.images import base_image_tag
from tests.fakes.package_index import Neighbour, PackageIndex, bridge_gateway, https_index, neighbour_on

pytestmark = pytest.mark.docker

PROBE = r"""
import base64, json, socket, ssl, sys, urllib.parse
cfg = json.loads(sys.argv[1])
index = urllib.parse.urlsplit(cfg["index"])
out = {}

def attempt(name, fn):
    try:
        out[name] = fn()
    except Exception as exc:
        out[name] = "error: " + type(exc).__name__

def via_proxy(line):
    host, port = cfg["proxy"].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(line.encode() + b"\r\n\r\n")
        return s.recv(200).split(b"\r\n")[0].decode()

def fetch_index():
    host, port = cfg["proxy"].rsplit(":", 1)
    raw = socket.create_connection((host, int(port)), timeout=10)
    raw.sendall(f"CONNECT {index.hostname}:{index.port} HTTP/1.1\r\n\r\n".encode())
    assert raw.recv(200).startswith(b"HTTP/1.1 200")
    tls = ssl.create_default_context(cafile="/ca/index.crt").wrap_socket(raw, server_hostname=index.hostname)
    auth = base64.b64encode(f"{index.username}:{index.password}".encode()).decode()
    request = f"GET /simple/pgdemo/ HTTP/1.1\r\nHost: {index.hostname}\r\nAuthorization: Basic {auth}\r\n"
    tls.sendall((request + "Connection: close\r\n\r\n").encode())
    return tls.recv(200).split(b"\r\n")[0].decode()

def direct(host, port):
    with socket.create_connection((host, port), timeout=5):
        return "connected"

if cfg["proxy"]:
    attempt("index through the proxy", fetch_index)
    neighbour = f"{cfg['gateway']}:{cfg['neighbour']}"
    attempt("neighbour through the proxy", lambda: via_proxy(f"CONNECT {neighbour} HTTP/1.1"))
    attempt("a public name through the proxy", lambda: via_proxy("CONNECT example.com:443 HTTP/1.1"))
    plain = f"GET http://{index.hostname}:{index.port}/simple/ HTTP/1.1"
    attempt("plain http through the proxy", lambda: via_proxy(plain))
attempt("neighbour directly", lambda: direct(cfg["gateway"], cfg["neighbour"]))
attempt("index directly", lambda: direct(index.hostname, index.port))
attempt("a name lookup", lambda: socket.getaddrinfo("pypi.org", 443) and "resolved")
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def gateway(base_image: str) -> str:
    return bridge_gateway()


@pytest.fixture(scope="module")
def tls_index(gateway: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[PackageIndex, Path]]:
    served = PackageIndex(user="builder", password="tok-egress-1")
    served.add("pgdemo", "1.0", "VALUE = 42\n")
    with https_index(served, gateway, tmp_path_factory.mktemp("certs")) as running:
        yield running


@pytest.fixture(scope="module")
def neighbour(gateway: str) -> Iterator[Neighbour]:
    with neighbour_on(gateway) as found:
        yield found


def probe(config: dict[str, Any], ca: Path, egress: Egress | None = None) -> dict[str, str]:
    """Run PROBE as the build would run (no network, the relay first), or on the default bridge."""
    client = docker_client()
    command = f"python3 -I -c {shlex.quote(PROBE)} {shlex.quote(json.dumps(config))}"
    try:
        output = client.containers.run(
            base_image_tag(), ["sh", "-c", f"{egress.relay} && {command}" if egress else command],
            network_mode="none" if egress else "bridge", mounts=[*egress.mounts] if egress else [],
            volumes={str(ca.parent): {"bind": "/ca", "mode": "ro"}}, remove=True, user="65534:65534",
        )  # fmt: skip
    finally:
        client.close()
    return json.loads(output.decode().strip().splitlines()[-1])


def test_the_only_way_out_of_the_build_network_is_the_index_through_the_proxy(
    tls_index: tuple[PackageIndex, Path], neighbour: Neighbour, gateway: str
) -> None:
    index, ca = tls_index
    before = len(neighbour.connections)
    client = docker_client()
    try:
        said: list[str] = []
        with index_only(client, index.url, say=said.append) as egress:
            proxy_at = egress.proxy_url.removeprefix("http://")
            config = {"index": index.url, "proxy": proxy_at, "gateway": gateway, "neighbour": neighbour.port}
            seen = probe(config, ca, egress)
            folder = Path(egress.mounts[0]["Source"])
            # This build's proxy, by the name it said (other builds may share the engine).
            (name,) = re.findall(r"patchgate-egress-[0-9a-f]{12}", "\n".join(said))
            proxy = client.containers.get(name)
        assert seen["index through the proxy"] == "HTTP/1.0 200 OK", seen
        for refused in (
            "neighbour through the proxy",
            "a public name through the proxy",
            "plain http through the proxy",
        ):
            assert seen[refused].startswith("HTTP/1.1 403"), (refused, seen)
        for closed in ("neighbour directly", "index directly", "a name lookup"):
            assert seen[closed].startswith("error: "), (closed, seen)
        assert neighbour.connections[before:] == []
        # Nothing is left behind: the proxy and its folder went with the build.
        assert client.containers.list(all=True, filters={"id": str(proxy.id)}) == []
        assert not folder.exists()
    finally:
        client.close()


def test_the_probe_sees_those_ways_open_on_an_ordinary_network(
    tls_index: tuple[PackageIndex, Path], neighbour: Neighbour, gateway: str
) -> None:
    index, ca = tls_index
    seen = probe({"index": index.url, "proxy": "", "gateway": gateway, "neighbour": neighbour.port}, ca)
    assert seen["neighbour directly"] == "connected", seen
    assert seen["index directly"] == "connected", seen
    assert neighbour.connections


def test_an_index_that_is_not_https_is_refused_before_anything_is_made() -> None:
    with pytest.raises(ImageBuildError, match="needs an https package index"):
        allowed_targets("http://index.internal/simple")
    assert allowed_targets("https://pypi.org/simple") == ("pypi.org:443", "files.pythonhosted.org:443")
    assert allowed_targets("https://u:p@mirror.example:8443/simple") == ("mirror.example:8443",)
