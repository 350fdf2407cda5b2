"""The sandbox base image: built from Debian packages alone, or from a registry image.

Without a registry (the default), the base image is two steps:

1. ``debootstrap --variant=minbase --include=python3,python3-pip,ca-certificates``
   makes a Debian rootfs, which ``docker import`` turns into ``patchgate-rootfs:<hash>``;
2. ``docker build`` of ``images/base.Dockerfile`` FROM that rootfs adds the pinned tools
   of ``images/tools-requirements.txt`` and the sandbox user (uid 10001).

With ``from_registry=True`` the tools layer is built FROM ``python:3.11-slim`` instead
(``images/registry.Dockerfile``). Either result is tagged ``patchgate-base:<recipe hash>``
and ``patchgate-base:latest``; when the hashed tag exists nothing is built.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import docker
from docker.errors import APIError, DockerException, ImageNotFound

from sandbox.buildlock import build_lock
from sandbox.engine import docker_client
from sandbox.errors import ImageBuildError, ImageMissing
from sandbox.host import run_process
from sandbox.pipconf import PipSettings, pip_settings

Log = Callable[[str], None]

IMAGES_DIR = Path(__file__).parent / "images"
TOOLS_REQUIREMENTS = IMAGES_DIR / "tools-requirements.txt"
ISOLATED_TOOLS = IMAGES_DIR / "isolated-tools.txt"
WRAP_TOOLS = IMAGES_DIR / "wrap_tools.py"
# Where the isolated tools' launchers are: first on every sandbox run's PATH.
ISOLATED_BIN = "/opt/patchgate/bin"
BASE_DOCKERFILE = IMAGES_DIR / "base.Dockerfile"
REGISTRY_DOCKERFILE = IMAGES_DIR / "registry.Dockerfile"

BASE_REPOSITORY = "patchgate-base"
ROOTFS_REPOSITORY = "patchgate-rootfs"
BUILD_COMMAND = "patchgate sandbox build"

DEBIAN_SUITE = "bookworm"
DEBIAN_MIRROR = "http://deb.debian.org/debian"
DEBIAN_PACKAGES = ("python3", "python3-pip", "ca-certificates")
# Bump when the build steps change in a way the hashed inputs do not show.
RECIPE_VERSION = 1

DEBOOTSTRAP_TIMEOUT_S = 1800.0
BUILD_TIMEOUT_S = 3600.0


def no_log(_: str) -> None:
    """Discard progress lines when the caller passes no log."""


def rootfs_tag() -> str:
    """Return the tag of the imported Debian rootfs for the current recipe."""
    recipe = {"suite": DEBIAN_SUITE, "mirror": DEBIAN_MIRROR, "packages": DEBIAN_PACKAGES}
    return f"{ROOTFS_REPOSITORY}:{_digest(recipe)}"


def base_image_tag(*, from_registry: bool = False) -> str:
    """Return ``patchgate-base:<hash>``, the tag the current recipe builds."""
    recipe = {
        "version": RECIPE_VERSION,
        "dockerfile": dockerfile_text(from_registry=from_registry),
        "tools": TOOLS_REQUIREMENTS.read_text(),
        "isolated": ISOLATED_TOOLS.read_text(),
        "wrap": WRAP_TOOLS.read_text(),
        "rootfs": None if from_registry else rootfs_tag(),
    }
    return f"{BASE_REPOSITORY}:{_digest(recipe)}"


def dockerfile_text(*, from_registry: bool = False) -> str:
    """Return the Dockerfile of the tools layer (FROM the rootfs, or FROM python:3.11-slim)."""
    return (REGISTRY_DOCKERFILE if from_registry else BASE_DOCKERFILE).read_text()


def ensure_base_image(*, from_registry: bool = False, force: bool = False, log: Log | None = None) -> str:
    """Build the base image unless its hashed tag exists; return that tag.

    Raises EngineUnavailable without an engine and ImageBuildError when a build
    step fails (the message names the step and shows its output).
    """
    say = log or no_log
    tag = base_image_tag(from_registry=from_registry)
    client = docker_client()
    try:
        with build_lock("base", say):
            if not force and image_exists(client, tag):
                say(f"{tag} is up to date")
                _tag_latest(client, tag)
                return tag
            settings = pip_settings()
            if from_registry:
                say("building the tools layer FROM python:3.11-slim")
                _build_tools(
                    client, tag=tag, dockerfile=REGISTRY_DOCKERFILE, args={}, settings=settings, say=say
                )
            else:
                rootfs = _ensure_rootfs(client, force=force, say=say)
                _build_tools(
                    client,
                    tag=tag,
                    dockerfile=BASE_DOCKERFILE,
                    args={"ROOTFS": rootfs},
                    settings=settings,
                    say=say,
                )
            _tag_latest(client, tag)
            say(f"built {tag}")
            return tag
    finally:
        client.close()


def require_image(client: docker.DockerClient, image: str) -> None:
    """Raise ImageMissing, naming the build command, unless ``image`` exists locally."""
    if not image_exists(client, image):
        raise ImageMissing(image, BUILD_COMMAND)


def image_exists(client: docker.DockerClient, image: str) -> bool:
    """Return True when ``image`` is present in the engine's image store."""
    try:
        client.images.get(image)
    except ImageNotFound:
        return False
    return True


def image_id(image: str, client: docker.DockerClient | None = None) -> str:
    """Return the content id of ``image`` (``sha256:...``): a tag rebuilt from the same recipe gets a new one.

    Raises ImageMissing when it is not in the engine's image store. Without ``client``, asks
    the engine over a connection of its own.
    """
    from sandbox.engine import docker_client

    engine = client if client is not None else docker_client()
    try:
        found = engine.images.get(image)
    except ImageNotFound:
        raise ImageMissing(image, BUILD_COMMAND) from None
    finally:
        if client is None:
            engine.close()
    return str(found.id)


def _ensure_rootfs(client: docker.DockerClient, *, force: bool, say: Log) -> str:
    tag = rootfs_tag()
    if not force and image_exists(client, tag):
        say(f"{tag} is up to date")
        return tag
    if shutil.which("debootstrap") is None:
        raise ImageBuildError(
            "debootstrap is not installed (Debian: `apt-get install -y debootstrap`, "
            "or run scripts/engine.sh); it builds the base image without a registry"
        )
    scratch = Path(tempfile.mkdtemp(prefix="patchgate-rootfs-", dir="/var/tmp"))
    try:
        archive = _debootstrap(scratch, say)
        say(f"docker import -> {tag}")
        repository, _, version = tag.partition(":")
        try:
            client.api.import_image_from_file(str(archive), repository=repository, tag=version)
        except DockerException as exc:
            raise ImageBuildError(f"docker import of the sandbox rootfs failed: {exc}") from exc
    finally:
        _remove_scratch(scratch, say)
    if not image_exists(client, tag):
        raise ImageBuildError(f"docker import reported success but {tag} is missing")
    return tag


def _debootstrap(scratch: Path, say: Log) -> Path:
    """Make the Debian rootfs under ``scratch`` and return it as a tarball."""
    root = scratch / "root"
    say(f"debootstrap {DEBIAN_SUITE} into {root} (about a minute)")
    run_process(
        [
            "debootstrap",
            "--variant=minbase",
            f"--include={','.join(DEBIAN_PACKAGES)}",
            DEBIAN_SUITE,
            str(root),
            DEBIAN_MIRROR,
        ],
        timeout=DEBOOTSTRAP_TIMEOUT_S,
        check=True,
        what="debootstrap the sandbox rootfs (needs root and a Debian mirror)",
    )
    for deb in (root / "var/cache/apt/archives").glob("*.deb"):
        deb.unlink()
    for index in (root / "var/lib/apt/lists").glob("*_*"):
        index.unlink()
    archive = scratch / "rootfs.tar"
    run_process(
        ["tar", "--numeric-owner", "-C", str(root), "-c", "-f", str(archive), "."],
        timeout=DEBOOTSTRAP_TIMEOUT_S,
        check=True,
        what="archive the sandbox rootfs",
    )
    return archive


def _remove_scratch(scratch: Path, say: Log) -> None:
    """Delete the debootstrap scratch, but never through a mount it left behind.

    A failed debootstrap can leave /proc, /sys or a bind of /dev mounted inside its
    target; deleting through those would delete the host's.
    """
    prefix = str(scratch.resolve()) + "/"
    mounted = [
        line.split()[1]
        for line in Path("/proc/self/mounts").read_text().splitlines()
        if line.split()[1].startswith(prefix)
    ]
    for point in sorted(mounted, key=len, reverse=True):
        run_process(["umount", "-l", point], timeout=60)
    if any(line.split()[1].startswith(prefix) for line in Path("/proc/self/mounts").read_text().splitlines()):
        say(f"left {scratch} in place: something is still mounted inside it")
        return
    shutil.rmtree(scratch, ignore_errors=True)


def _build_tools(
    client: docker.DockerClient,
    *,
    tag: str,
    dockerfile: Path,
    args: dict[str, str],
    settings: PipSettings,
    say: Log,
) -> None:
    with tempfile.TemporaryDirectory(prefix="patchgate-build-") as scratch:
        context = Path(scratch)
        shutil.copyfile(dockerfile, context / "Dockerfile")
        for source in (TOOLS_REQUIREMENTS, ISOLATED_TOOLS, WRAP_TOOLS):
            shutil.copyfile(source, context / source.name)
        shutil.copyfile(settings.ca_bundle, context / "ca-certificates.crt")
        buildargs = {**args, "PIP_INDEX_URL": settings.index_url}
        say(f"docker build {tag} (pip install of {TOOLS_REQUIREMENTS.name})")
        build_context(client, context=context, tag=tag, buildargs=buildargs, say=say)
    _prune_tools_stage(client, say)


def build_context(
    client: docker.DockerClient, *, context: Path, tag: str, buildargs: dict[str, str], say: Log
) -> None:
    """``docker build`` the Dockerfile in ``context`` as ``tag``, streaming its output to ``say``.

    Raises ImageBuildError with the build's last lines when a step fails.
    """
    tail: list[str] = []
    try:
        stream = client.api.build(
            path=str(context),
            tag=tag,
            buildargs=buildargs,
            rm=True,
            forcerm=True,
            pull=False,
            decode=True,
            timeout=int(BUILD_TIMEOUT_S),
        )
        for line in _build_lines(stream):
            tail = [*tail[-40:], line]
            say(line)
    except APIError as exc:
        raise ImageBuildError(f"docker build of {tag} failed: {exc.explanation}") from exc
    except _BuildFailed as exc:
        shown = "\n".join(tail)
        raise ImageBuildError(f"docker build of {tag} failed: {exc}\n{shown}") from exc
    if not image_exists(client, tag):
        raise ImageBuildError(f"docker build reported success but {tag} is missing")


def ensure_rootfs(*, force: bool = False, log: Log | None = None) -> str:
    """Import the Debian rootfs unless its tag exists; return the tag (the service image builds FROM it).

    Raises EngineUnavailable without an engine and ImageBuildError when debootstrap fails.
    """
    say = log or no_log
    client = docker_client()
    try:
        # The same lock as the base image's build, which may be importing this rootfs too.
        with build_lock("base", say):
            return _ensure_rootfs(client, force=force, say=say)
    finally:
        client.close()


def _prune_tools_stage(client: docker.DockerClient, say: Log) -> None:
    """Delete the untagged images of the `tools` stage: their history holds the build args."""
    try:
        pruned = client.images.prune(filters={"dangling": True, "label": "patchgate.stage=tools"})
    except APIError as exc:
        say(f"could not delete the tools stage's images: {exc.explanation}")
        return
    say(f"deleted {len(pruned.get('ImagesDeleted') or [])} images of the tools stage")


class _BuildFailed(Exception):
    pass


def _build_lines(stream: Iterator[dict[str, object]]) -> Iterator[str]:
    for chunk in stream:
        if "error" in chunk:
            raise _BuildFailed(str(chunk["error"]).strip())
        text = chunk.get("stream")
        if isinstance(text, str) and text.strip():
            yield text.rstrip()


def _tag_latest(client: docker.DockerClient, tag: str) -> None:
    client.api.tag(tag, BASE_REPOSITORY, "latest")


def _digest(recipe: object) -> str:
    blob = json.dumps(recipe, sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:16]
