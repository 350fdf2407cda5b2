"""A way out to the package index and nowhere else: for installing what a change asks for.

``index_only(client, index_url)`` starts, for one build, a proxy container
on the engine's default network that listens on a Unix socket only (in a
host folder made for this build) and tunnels ``CONNECT`` to the index's
host:port (and, for pypi.org, files.pythonhosted.org:443), refusing
everything else (``images/egress_proxy.py``). The build container itself
has **no network** (``network_mode: none``, loopback only): it mounts that
folder and starts the relay (``Egress.relay``), which carries
``127.0.0.1:3128`` to the socket, and pip is told to use that proxy. So no
connection, no name lookup and no address of the host or its neighbours is
reachable from the build; only the proxy decides. (An ``internal`` Docker
network would not do: its containers still reach every address of the host
itself.) The proxy and the folder are removed when the build ends, whatever
happened. The index must be ``https`` (the proxy only tunnels).
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import docker
from docker.errors import APIError, DockerException, NotFound
from docker.types import LogConfig, Mount

from sandbox.errors import ImageBuildError
from sandbox.images import Log, base_image_tag, no_log

PROXY_SOURCE = Path(__file__).resolve().parent / "images" / "egress_proxy.py"
EGRESS_DIR = "/run/patchgate-egress"
SOCKET = f"{EGRESS_DIR}/run/proxy.sock"
RELAY_PORT = 3128
LABEL = "patchgate.egress"
# Where pypi.org's simple pages send pip for the files themselves.
_FILE_HOSTS = {"pypi.org": ("files.pythonhosted.org:443",)}
_READY_S = 30.0


@dataclass(frozen=True)
class Egress:
    """What a build container needs: these mounts, ``relay`` run first, and ``proxy_url`` for pip."""

    mounts: tuple[Mount, ...]
    allowed: tuple[str, ...]
    proxy_url: str = f"http://127.0.0.1:{RELAY_PORT}"
    relay: str = f"python3 -I {EGRESS_DIR}/egress_proxy.py --relay {RELAY_PORT} {SOCKET}"


def allowed_targets(index_url: str) -> tuple[str, ...]:
    """The host:port pairs a build may reach for ``index_url``; raise ImageBuildError for a non-https one."""
    parts = urlsplit(index_url)
    if parts.scheme != "https" or not parts.hostname:
        raise ImageBuildError(
            f"a build for the change's dependencies needs an https package index, not {index_url!r}"
        )
    host = parts.hostname.lower()
    return (f"{host}:{parts.port or 443}", *_FILE_HOSTS.get(host, ()))


@contextlib.contextmanager
def index_only(client: docker.DockerClient, index_url: str, *, say: Log = no_log) -> Iterator[Egress]:
    """Start the proxy for one build; stop it and remove its folder afterwards."""
    allowed = allowed_targets(index_url)
    name = f"patchgate-egress-{uuid.uuid4().hex[:12]}"
    folder = Path(tempfile.mkdtemp(prefix="patchgate-egress-"))
    (folder / "run").mkdir()
    folder.chmod(0o755)
    (folder / "run").chmod(0o777)  # the proxy (nobody) makes its socket there
    shutil.copyfile(PROXY_SOURCE, folder / "egress_proxy.py")
    (folder / "egress_proxy.py").chmod(0o444)
    proxy: Any = None
    try:
        proxy = client.containers.create(
            base_image_tag(),
            command=["python3", "-I", f"{EGRESS_DIR}/egress_proxy.py", "--serve", SOCKET, ",".join(allowed)],
            name=name,
            user="65534:65534",
            labels={LABEL: name},
            mounts=[Mount(EGRESS_DIR, str(folder), type="bind", read_only=False)],
            read_only=True,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges:true"],
            mem_limit=256 * 1024 * 1024,
            pids_limit=64,
            # A line per refused request, as many as the build asks: the engine keeps the last few.
            log_config=LogConfig(type=LogConfig.types.JSON, config={"max-size": "1m", "max-file": "2"}),
        )
        proxy.start()
        _wait_ready(proxy, folder / "run" / "proxy.sock")
    except (DockerException, ImageBuildError) as exc:
        _remove(proxy, folder)
        raise ImageBuildError(f"the build's way to the index could not be made: {exc}") from exc
    say(f"build proxy {name}: to {', '.join(allowed)} only")
    try:
        # The build mounts the folder read-only: the socket, the relay, and nothing it can change.
        yield Egress((Mount(EGRESS_DIR, str(folder), type="bind", read_only=True),), allowed)
    finally:
        _remove(proxy, folder)


def _remove(proxy: Any, folder: Path) -> None:
    if proxy is not None:
        with contextlib.suppress(NotFound, APIError):
            proxy.remove(force=True)
    shutil.rmtree(folder, ignore_errors=True)


def _wait_ready(proxy: Any, socket_path: Path) -> None:
    deadline = time.monotonic() + _READY_S
    while time.monotonic() < deadline:
        if socket_path.exists() and b"listening on" in proxy.logs():
            return
        proxy.reload()
        if proxy.status not in ("created", "running"):
            raise ImageBuildError(f"the proxy stopped: {proxy.logs()[-500:].decode(errors='replace')}")
        time.sleep(0.1)
    raise ImageBuildError("the proxy did not start")
