"""The head's environment image: for a change whose dependency files ask for something base's do not.

Built FROM base's environment image (base's dependencies already there, so
only what the change adds or changes is fetched) by ``pip install`` of the
head's requirements, in a build container that is a run in all but its
one way out:

- no network: ``network_mode: none``; pip reaches the package index through
  the proxy of ``sandbox/egress.py`` and nothing else (no other host, no
  name lookup, never during a test run: runs have no network at all);
- the limits of a run: memory without swap, pids, CPUs, ``cap_drop ALL``,
  ``no-new-privileges``, and a bounded time;
- apart from the grader: pip runs as the sandbox user and installs into a
  folder of its own that the grader never imports from (``headsite.py``:
  a wheel's ``.pth`` file, or files replacing pytest's, would otherwise run
  in the grader of every head run);
- no secrets: nothing of the service's environment; the index URL reaches
  pip only in a pip.conf on a read-only mount, and when that URL carries
  credentials only wheels are installed (``--only-binary :all:``), so no
  code of the change's choosing (an sdist's ``setup.py``) runs where it
  could read them.

Requirements that name a URL, a VCS or a local path are never installed
here (the dependencies gate refuses them). The image is tagged by the base
environment image's id and the head's requirements, so an unchanged set is
built once. What went wrong is one of two things:

- :class:`InstallFailed` - pip could not install what the change asks for
  while the index answered: the PR's failure, with pip's error;
- :class:`~sandbox.errors.ImageBuildError` - the index did not answer (an
  outage), the engine failed, the proxy could not start: infrastructure.

Which of the two is decided by a probe of the index from the host after
the build, never by what the build printed (code of the change's choosing
could print an outage's words).
"""

from __future__ import annotations

import base64
import hashlib
import re
import shutil
import ssl
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path
from tempfile import TemporaryDirectory
from urllib.parse import unquote, urlsplit, urlunsplit

import docker
from docker.types import LogConfig, Mount

from sandbox.buildlock import build_lock
from sandbox.depfiles import Requirement, is_direct, read_dependencies
from sandbox.egress import allowed_targets, index_only
from sandbox.engine import docker_client
from sandbox.envimage import (
    ENV_REPOSITORY,
    build_container,
    commit_image,
    failing_requirement,
    install_failure,
    run_to_end,
    without_tools,
)
from sandbox.errors import ImageBuildError
from sandbox.headsite import BUILD_UID, HEAD_SITE, LAYOUT, hook_archive, site_dir_archive, site_packages
from sandbox.images import Log, image_exists, image_id, no_log
from sandbox.pipconf import PipSettings, pip_conf_text, pip_settings

BUILD_DIR = "/run/patchgate-build"
LABEL = "patchgate.head-build"
MiB = 1024 * 1024
BUILD_LOG = LogConfig(type=LogConfig.types.JSON, config={"max-size": "1m", "max-file": "2"})
# A user or password shorter than this is no secret (and masking it would garble pip's words).
MIN_SECRET_CHARS = 4
# A part of an index URL's path or query this long may be a token: masked wherever pip prints it.
TOKEN_CHARS = 12


@dataclass(frozen=True)
class BuildLimits:
    """A head build's bounds: those of a run, with the time pip needs."""

    timeout_s: float = 600.0
    memory_mb: int = 2048
    pids: int = 512
    cpus: float = 2.0


class InstallFailed(Exception):
    """pip could not install the change's dependencies while the index answered: the PR's failure.

    Not a SandboxError: nothing of the gate broke.
    """

    def __init__(self, message: str, output: str, requirement: Requirement | None = None) -> None:
        super().__init__(message)
        self.output = output
        # The requirement pip named as the one it could not install, when it named one.
        self.requirement = requirement


def head_requirements(head_tree: Path) -> tuple[Requirement, ...]:
    """The head's requirements a build installs: those on the index (direct ones are refused elsewhere)."""
    return tuple(r for r in read_dependencies(head_tree).requirements if not is_direct(r.text))


def head_image_tag(
    base_image: str, requirements: tuple[Requirement, ...], *, index_url: str, wheels_only: bool
) -> str:
    """Return the tag for ``requirements`` from ``index_url`` over ``base_image`` (by its content id).

    The index is part of it (without its credentials): the same requirement from another index
    may be other code.
    """
    parts = [b"head", image_id(base_image).encode(), _shown(index_url).encode(), str(wheels_only).encode(),
             LAYOUT.encode()]  # fmt: skip
    digest = hashlib.sha256(b"\0".join(parts))
    for r in sorted(requirements, key=lambda r: r.text):
        digest.update(b"\0" + r.text.encode())
    return f"{ENV_REPOSITORY}:head-{digest.hexdigest()[:16]}"


def ensure_head_image(
    base_image: str,
    head_tree: Path,
    *,
    index_url: str | None = None,
    ca_bundle: Path | None = None,
    limits: BuildLimits = BuildLimits(),
    log: Log | None = None,
) -> str:
    """Return an image with head's dependencies installed over ``base_image``, building it when missing.

    Raises InstallFailed when pip fails while the index answers (the PR's failure) and
    ImageBuildError for everything else that stops the build (infrastructure).
    """
    say = log or no_log
    settings = pip_settings(index_url=index_url, ca_bundle=ca_bundle)
    wheels_only = has_credentials(settings.index_url)
    kept, dropped = without_tools(head_requirements(head_tree))
    keep = tuple(kept)
    for r in dropped:
        say(f"not installing {r.text!r} (from {r.origin}): the gate runs its own pinned tool")
    tag = head_image_tag(base_image, keep, index_url=settings.index_url, wheels_only=wheels_only)
    client = docker_client()
    try:
        with build_lock(tag.replace(":", "-"), say):
            if image_exists(client, tag):
                say(f"{tag} is up to date")
                return tag
            _build(client, base=base_image, tag=tag, keep=keep, settings=settings, limits=limits,
                   wheels_only=wheels_only, say=say)  # fmt: skip
        return tag
    finally:
        client.close()


def has_credentials(index_url: str) -> bool:
    """Whether ``index_url`` may carry a secret: a user, a password, a query, or a path of its own.

    A token is not always the URL's user: Cloudsmith-style indexes put it in the path
    (``/TOKEN/org/repo/python/simple/``), others in the query. Only the public layouts of
    PyPI and its mirrors (``/simple``, devpi's ``/<user>/<index>/+simple``) count as holding
    none; any other index gets wheels only, and its path is never shown.
    """
    parts = urlsplit(index_url)
    if parts.username or parts.password or parts.query or parts.fragment:
        return True
    return _PUBLIC_PATH.fullmatch(parts.path) is None


# PyPI's own layout, and devpi's (`/root/pypi/+simple/`): nothing in them is a secret.
_PUBLIC_PATH = re.compile(r"/?(simple|[A-Za-z0-9._-]+/[A-Za-z0-9._-]+/\+simple)?/?")


def _install_command(egress_relay: str, proxy: str, *, wheels_only: bool) -> str:
    only = " --only-binary :all:" if wheels_only else ""
    return (
        f"{egress_relay} && PIP_CONFIG_FILE={BUILD_DIR}/pip.conf exec python3 -m pip install --no-input "
        f"--progress-bar off --proxy {proxy}{only} --target {HEAD_SITE} -r {BUILD_DIR}/requirements.txt"
    )


def _build(client: docker.DockerClient, *, base: str, tag: str, keep: tuple[Requirement, ...],
           settings: PipSettings, limits: BuildLimits, wheels_only: bool, say: Log) -> None:  # fmt: skip
    with (
        TemporaryDirectory(prefix="patchgate-head-env-") as scratch,
        index_only(client, settings.index_url, say=say) as egress,
    ):
        build = Path(scratch)
        build.chmod(0o755)
        (build / "requirements.txt").write_text("".join(f"{r.text}\n" for r in keep))
        shutil.copyfile(settings.ca_bundle, build / "ca.crt")
        (build / "pip.conf").write_text(pip_conf_text(settings, f"{BUILD_DIR}/ca.crt"))
        for name in ("requirements.txt", "ca.crt", "pip.conf"):
            (build / name).chmod(0o644)
        # Asked of base's image before anything of the change's runs: where the gate's hook goes.
        site_dir = site_packages(client, base)
        if not site_dir.startswith("/"):
            raise ImageBuildError(f"{base} names no site-packages folder ({site_dir!r})")
        how = "wheels only: the index URL carries credentials" if wheels_only else "wheels and sdists"
        name = f"patchgate-headbuild-{uuid.uuid4().hex[:12]}"
        say(f"installing the change's {len(keep)} requirements into {tag} ({how}) in {name}")
        container = client.containers.create(
            base,
            command=["sh", "-c", _install_command(egress.relay, egress.proxy_url, wheels_only=wheels_only)],
            name=name,
            # The sandbox user: pip and what it builds write HEAD_SITE alone, never the image's own folders.
            user=f"{BUILD_UID}:{BUILD_UID}",
            labels={LABEL: tag},
            network_mode="none",
            mounts=[Mount(BUILD_DIR, str(build), type="bind", read_only=True), *egress.mounts],
            cap_drop=["ALL"],
            security_opt=["no-new-privileges:true"],
            mem_limit=limits.memory_mb * MiB,
            memswap_limit=limits.memory_mb * MiB,
            pids_limit=limits.pids,
            nano_cpus=int(limits.cpus * 1e9),
            environment={"HOME": "/tmp"},  # noqa: S108 - the build container's own /tmp
            # What a build step prints (an sdist's setup.py, on a public index) is the change's: the
            # engine keeps its last few MiB only, and only those come back to the host.
            log_config=BUILD_LOG,
        )
        with build_container(container, tag):
            container.put_archive("/opt", site_dir_archive())
            # pip masks a URL's password, not a token given as its user (``https://TOKEN:@host``).
            ended = run_to_end(
                container, limits.timeout_s, say, clean=lambda text: scrubbed(text, settings.index_url)
            )
            if ended.status != 0:
                trouble = index_trouble(settings)
                if trouble:
                    raise ImageBuildError(
                        f"the package index {trouble} while installing the change's dependencies "
                        f"({_shown(settings.index_url)})"
                    )
                output = ended.output
                if ended.timed_out:
                    took = f"installing the change's dependencies took more than {limits.timeout_s:g} s"
                    raise InstallFailed(took, output)
                raise InstallFailed(install_failure(output, keep), output, failing_requirement(output, keep))
            # The gate's own hook, written by the engine as root once pip is done: every uid but the
            # grader's sees the change's packages.
            container.put_archive(site_dir, hook_archive())
            commit_image(client, container, base, tag)
    say(f"built {tag}")


def index_trouble(settings: PipSettings, timeout_s: float = 10.0) -> str:
    """What is wrong with the index as the host sees it now; empty when it answers the gate.

    Any HTTP status below 500 is an answer, except a refusal of the gate's own credentials
    (401, 403, 407: a token expired or revoked), which no change could be failed for.
    """
    parts = urlsplit(settings.index_url)
    netloc = parts.hostname or ""
    if parts.port:
        netloc += f":{parts.port}"
    url = urlunsplit((parts.scheme, netloc, parts.path.rstrip("/") + "/", "", ""))
    request = urllib.request.Request(url, method="GET")  # noqa: S310 - https or http, the configured index
    if parts.username or parts.password:
        token = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}".encode()
        request.add_header("Authorization", "Basic " + base64.b64encode(token).decode())
    context = ssl.create_default_context(cafile=str(settings.ca_bundle))
    try:
        with urllib.request.urlopen(request, timeout=timeout_s, context=context) as answer:  # noqa: S310
            status = int(answer.status)
    except urllib.error.HTTPError as exc:
        status = exc.code
    except (OSError, ValueError):
        return "did not answer"
    if status in _REFUSED:
        return f"refused the gate's credentials (HTTP {status})"
    if status >= 500:
        return f"did not answer (HTTP {status})"
    # Where the index sends pip for the files themselves (pypi.org: files.pythonhosted.org) must answer too.
    for target in allowed_targets(settings.index_url)[1:]:
        host, _, port = target.rpartition(":")
        if not _answers(f"https://{host}:{port}/", context, timeout_s):
            return f"did not answer (its files at {host})"
    return ""


def _answers(url: str, context: ssl.SSLContext, timeout_s: float) -> bool:
    """Whether ``url`` gives any HTTP answer below 500 from the host."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s, context=context) as answer:  # noqa: S310 - https
            return int(answer.status) < 500
    except urllib.error.HTTPError as exc:
        return exc.code < 500
    except (OSError, ValueError):
        return False


_REFUSED = frozenset({401, 403, 407})


def scrubbed(text: str, index_url: str) -> str:
    """``text`` with what of the index URL may be secret (user, password, path, query) masked."""
    parts = urlsplit(index_url)
    if has_credentials(index_url):
        # The index as pip echoes it ("Looking in indexes: ..."), and any long part of its path or query.
        for whole in sorted(
            {index_url, index_url.rstrip("/"), parts.path, parts.path.rstrip("/")}, key=len, reverse=True
        ):
            if len(whole) > 1:
                text = text.replace(whole, "/…" if whole.startswith("/") else _shown(index_url))
    secrets = {parts.username or "", parts.password or ""}
    secrets |= {s for s in re.split(r"[/?&=]", f"{parts.path}?{parts.query}") if len(s) >= TOKEN_CHARS}
    for secret in sorted(secrets | {unquote(s) for s in secrets}, key=len, reverse=True):
        if len(secret) >= MIN_SECRET_CHARS:
            text = text.replace(secret, "****")
    return text


def _shown(index_url: str) -> str:
    """The index URL without what may be secret in it, for a message: its path only when public."""
    parts = urlsplit(index_url)
    host = parts.hostname or ""
    path = "/…" if has_credentials(index_url) else parts.path
    return urlunsplit((parts.scheme, host + (f":{parts.port}" if parts.port else ""), path, "", ""))
