"""The service image: deploy/Dockerfile FROM the debootstrapped rootfs, so no registry is needed.

The build context is assembled in a temporary folder from the project's
sources alone (never ``.state/``, which holds the App's private key), with
the CA bundle pip verifies the index with. The image is tagged
``patchgate:<digest of the context>`` and ``patchgate:latest``; when the
digest's tag exists nothing is built, so a second build is a no-op.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from docker.errors import APIError

from sandbox.engine import docker_client
from sandbox.images import Log, build_context, ensure_rootfs, image_exists, no_log
from sandbox.pipconf import pip_settings

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = ROOT / "deploy" / "Dockerfile"
REPOSITORY = "patchgate"
# What `pip install .` needs: the packages and the files pyproject.toml names.
SOURCES = ("pyproject.toml", "README.md", "bot", "checks", "sandbox", "rubrics")
_SKIPPED = ("__pycache__", ".ruff_cache", ".mypy_cache", ".pytest_cache")


def _files(root: Path) -> Iterator[Path]:
    for name in SOURCES:
        top = root / name
        if top.is_file():
            yield top
            continue
        for path in sorted(top.rglob("*")):
            if path.is_file() and not any(part in _SKIPPED for part in path.parts) and path.suffix != ".pyc":
                yield path


def context_digest(root: Path = ROOT) -> str:
    """Return a digest of everything the image is built from (sources, Dockerfile, rootfs recipe)."""
    from sandbox.images import rootfs_tag

    digest = hashlib.sha256(rootfs_tag().encode() + DOCKERFILE.read_bytes())
    for path in _files(root):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def image_tag(root: Path = ROOT) -> str:
    """Return ``patchgate:<digest>``, the tag the current sources build."""
    return f"{REPOSITORY}:{context_digest(root)}"


def ensure_service_image(*, force: bool = False, log: Log | None = None, root: Path = ROOT) -> str:
    """Build the service image unless its tag exists; return the tag.

    Raises EngineUnavailable without an engine and ImageBuildError when a step fails.
    """
    say = log or no_log
    tag = image_tag(root)
    client = docker_client()
    try:
        if not force and image_exists(client, tag):
            say(f"{tag} is up to date")
        else:
            rootfs = ensure_rootfs(log=say)
            settings = pip_settings()
            with tempfile.TemporaryDirectory(prefix="patchgate-service-") as scratch:
                context = Path(scratch)
                for path in _files(root):
                    target = context / "src" / path.relative_to(root)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(path, target)
                shutil.copyfile(DOCKERFILE, context / "Dockerfile")
                shutil.copyfile(settings.ca_bundle, context / "ca-certificates.crt")
                say(f"docker build {tag} FROM {rootfs}")
                build_context(
                    client,
                    context=context,
                    tag=tag,
                    buildargs={"ROOTFS": rootfs, "PIP_INDEX_URL": settings.index_url},
                    say=say,
                )
            # The build stage saw the index URL: it does not stay around. Housekeeping only: the
            # image is built, and an engine busy with another prune (409) does not undo that.
            try:
                client.images.prune(filters={"dangling": True, "label": "patchgate.stage=service-build"})
            except APIError as exc:
                say(f"left the build stage for a later prune ({exc.explanation or exc})")
        client.api.tag(tag, REPOSITORY, "latest")
        return tag
    finally:
        client.close()
