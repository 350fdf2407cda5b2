"""Environment images: the base image plus a repository's dependencies, cached by their files.

The build runs ``pip install`` as root in a container FROM the base image (with the
network; runs never have one) and commits it as ``patchgate-env:<hash>``. The index URL
(which may carry credentials) reaches pip only through a pip.conf on a read-only bind
mount, so it is in no layer, no image config and no history entry.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import shutil
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import docker
from docker.errors import APIError, DockerException, NotFound
from docker.types import Mount
from requests.exceptions import ConnectionError as RequestsConnectionError
from requests.exceptions import ReadTimeout

from sandbox.buildlock import build_lock
from sandbox.depfiles import Dependencies, Requirement, read_dependencies
from sandbox.engine import docker_client
from sandbox.errors import ImageBuildError
from sandbox.images import (
    ISOLATED_TOOLS,
    TOOLS_REQUIREMENTS,
    Log,
    base_image_tag,
    image_exists,
    no_log,
    require_image,
)
from sandbox.pipconf import PipSettings, pip_conf_text, pip_settings

ENV_REPOSITORY = "patchgate-env"
BUILD_DIR = "/run/patchgate-build"
INSTALL_TIMEOUT_S = 1800
BUILD_MEMORY = 4096 * 1024 * 1024
LABEL = "patchgate.env-build"

# pip reads the config file from the environment of this shell only, so the
# container's (committed) environment never names it.
_INSTALL = (
    f"PIP_CONFIG_FILE={BUILD_DIR}/pip.conf exec python3 -m pip install --no-input "
    f"--progress-bar off -r {BUILD_DIR}/requirements.txt"
)

_FAILURES = (
    re.compile(r"No matching distribution found for (\S+)"),
    re.compile(r"Could not find a version that satisfies the requirement (\S+)"),
    re.compile(r"Failed to build (\S+)"),
    re.compile(r"Failed building wheel for (\S+)"),
    re.compile(r"Invalid requirement: '([^']+)'"),
)
# Then "Cannot install (.+?) because these package versions have conflicting", found by `_conflict`:
# as a pattern, each "Cannot install " of a line was a start that scanned the rest of the line for
# the reason, so a line of them was quadratic (1.3 s for 64k characters of the PR-fed pip output).
_CONFLICT = ("Cannot install ", " because these package versions have conflicting")


def env_image_tag(base_tree: Path, base: str | None = None) -> str | None:
    """Return the tag for ``base_tree``'s dependencies, or None when it has none."""
    deps = read_dependencies(base_tree)
    if not deps.requirements:
        return None
    digest = hashlib.sha256((base or base_image_tag()).encode())
    for rel in deps.files:
        digest.update(b"\0" + rel.encode() + b"\0" + (base_tree / rel).read_bytes())
    return f"{ENV_REPOSITORY}:{digest.hexdigest()[:16]}"


def ensure_env_image(
    base_tree: Path,
    *,
    index_url: str | None = None,
    ca_bundle: Path | None = None,
    log: Log | None = None,
) -> str:
    """Return the image to run ``base_tree``'s code in, building it when missing.

    A tree without dependency files (or whose files ask for nothing) runs in the
    base image itself. Raises ImageMissing when the base image is not built and
    ImageBuildError naming the failing requirement when an install fails.
    """
    say = log or no_log
    base = base_image_tag()
    client = docker_client()
    try:
        require_image(client, base)
        tag = env_image_tag(base_tree, base)
        if tag is None:
            say(f"{base_tree} declares no dependencies: using {base}")
            return base
        with build_lock(tag.replace(":", "-"), say):
            if image_exists(client, tag):
                say(f"{tag} is up to date")
                return tag
            deps = read_dependencies(base_tree)
            settings = pip_settings(index_url=index_url, ca_bundle=ca_bundle)
            _build(client, base=base, tag=tag, deps=deps, settings=settings, say=say)
        return tag
    finally:
        client.close()


def tool_names() -> frozenset[str]:
    """Return the normalized names of the tools the base image pins."""
    names = set()
    lines = [*TOOLS_REQUIREMENTS.read_text().splitlines(), *ISOLATED_TOOLS.read_text().splitlines()]
    for line in lines:
        requirement = line.split("#", 1)[0].strip()
        if requirement:
            names.add(_norm(requirement))
    return frozenset(names)


def without_tools(requirements: Sequence[Requirement]) -> tuple[list[Requirement], list[Requirement]]:
    """Split the repository's requirements into those to install and pins of patchgate's own tools.

    The gate runs its pinned ruff, mypy, bandit, semgrep and pytest: a repository that pins
    another version (a common dev extra) must not replace them under the gate.
    """
    tools = tool_names()
    keep = [r for r in requirements if _norm(r.text) not in tools]
    dropped = [r for r in requirements if _norm(r.text) in tools]
    return keep, dropped


def _build(
    client: docker.DockerClient, *, base: str, tag: str, deps: Dependencies, settings: PipSettings, say: Log
) -> None:
    keep, dropped = without_tools(deps.requirements)
    for r in dropped:
        say(f"not installing {r.text!r} (from {r.origin}): the gate runs its own pinned tool")
    with TemporaryDirectory(prefix="patchgate-env-") as scratch:
        build = Path(scratch)
        build.chmod(0o755)
        (build / "requirements.txt").write_text("".join(f"{r.text}\n" for r in keep))
        shutil.copyfile(settings.ca_bundle, build / "ca.crt")
        (build / "pip.conf").write_text(pip_conf_text(settings, f"{BUILD_DIR}/ca.crt"))
        say(f"installing {len(keep)} requirements from {', '.join(deps.files)} into {tag}")
        container = client.containers.create(
            base,
            command=["sh", "-c", _INSTALL],
            name=f"patchgate-envbuild-{uuid.uuid4().hex[:12]}",
            user="0:0",
            labels={LABEL: tag},
            mounts=[Mount(BUILD_DIR, str(build), type="bind", read_only=True)],
            security_opt=["no-new-privileges:true"],
            mem_limit=BUILD_MEMORY,
            pids_limit=4096,
        )
        with build_container(container, tag):
            ended = run_to_end(container, INSTALL_TIMEOUT_S, say)
            if ended.timed_out:
                raise ImageBuildError(f"installing the dependencies took more than {INSTALL_TIMEOUT_S} s")
            if ended.status != 0:
                raise ImageBuildError(install_failure(ended.output, deps.requirements, deps.files))
            commit_image(client, container, base, tag)
    say(f"built {tag}")


@dataclass(frozen=True)
class Ended:
    """How a build container ended: its exit status (None: killed at its deadline) and its output."""

    status: int | None
    output: str
    timed_out: bool = False


def run_to_end(
    container: Any, timeout_s: float, say: Log, *, clean: Callable[[str], str] = lambda text: text
) -> Ended:
    """Start a created build container, wait for it (killing it at ``timeout_s``), and read its output.

    ``clean`` has the output first (a secret scrubbed away) before anything is said or returned.
    """
    container.start()
    try:
        status: int | None = container.wait(timeout=timeout_s).get("StatusCode")
        timed_out = False
    except (ReadTimeout, RequestsConnectionError):
        status, timed_out = None, True
        with contextlib.suppress(NotFound, APIError):
            container.kill()
    output = clean(container.logs(stdout=True, stderr=True).decode("utf-8", "replace"))
    for line in output.splitlines():
        say(line)
    return Ended(status, output, timed_out)


@contextlib.contextmanager
def build_container(container: Any, tag: str) -> Iterator[None]:
    """Remove the build container whatever happens; an engine failure inside is an ImageBuildError."""
    try:
        yield
    except DockerException as exc:
        raise ImageBuildError(f"building {tag} failed in the engine: {exc}") from exc
    finally:
        with contextlib.suppress(NotFound, APIError):
            container.remove(force=True)


def commit_image(client: docker.DockerClient, container: Any, base: str, tag: str) -> None:
    """Commit a build container as ``tag`` with ``base``'s config (not the build's root and ``sh -c``)."""
    # The committed config is the base image's, not the build container's (root, sh -c).
    config = client.images.get(base).attrs["Config"]
    keep = {k: config.get(k) for k in ("Env", "Cmd", "WorkingDir", "User", "Labels")}
    repository, _, version = tag.partition(":")
    container.commit(repository=repository, tag=version, conf=keep)


def failing_requirement(output: str, requirements: Sequence[Requirement]) -> Requirement | None:
    """The requirement pip's output names as the one it could not install (None: it names none of them)."""
    named = next((match[1] for pattern in _FAILURES if (match := pattern.search(output))), None)
    if named is None:
        named = _conflict(output)
    if named is None:
        return None
    failing = named.strip().rstrip(".")
    found = next((r for r in requirements if _same(r.text, failing)), None)
    return found or Requirement(failing, "the dependency files")


def _conflict(output: str) -> str | None:
    """What ``Cannot install (.+?) because these package versions have conflicting`` would capture.

    The first "Cannot install " whose line has the reason after it (at least one character on),
    and what is between: a later "Cannot install " of the same line has no reason after it either.
    """
    head, reason = _CONFLICT
    start = output.find(head)
    while start >= 0:
        line_end = output.find("\n", start)
        line_end = len(output) if line_end < 0 else line_end
        end = output.find(reason, start + len(head) + 1, line_end)
        if end >= 0:
            return output[start + len(head) : end]
        start = output.find(head, line_end)
    return None


def install_failure(output: str, requirements: Sequence[Requirement], files: Sequence[str] = ()) -> str:
    """Name the requirement pip could not install, and the file that asked for it."""
    tail = "\n".join(output.strip().splitlines()[-15:])
    failing = failing_requirement(output, requirements)
    if failing is not None:
        return (
            f"requirement {failing.text!r} (from {failing.origin}) could not be installed in the "
            f"environment image\n{tail}"
        )
    where = f" ({', '.join(files)})" if files else ""
    return f"installing the dependencies{where} failed\n{tail}"


def _norm(requirement: str) -> str:
    """Return a requirement's project name, normalized (PEP 503)."""
    return re.sub(r"[-_.]+", "-", re.split(r"[\s\[<>=!~;@(]", requirement, maxsplit=1)[0]).lower()


def _same(requirement: str, failing: str) -> bool:
    return _norm(requirement) == _norm(failing)
