"""Where the hidden and held-out suites come from: a directory, a GitHub repository or a git URL.

``PATCHGATE_TEST_STORE`` (and ``patchgate run --suites``) takes one of::

    /srv/suites                      a directory on this machine (no commit recorded)
    github:org/suites[@ref]          a repository the App is installed on, read with that
                                     installation's token (sent in a header, never in a URL)
    git+https://host/org/suites.git[@ref]   any git URL (git+file:///..., git+ssh://...),
    /path/to/repo.git[@ref]                 or a local git repository: fetched with git

Every source has the same ``<owner>/<repo>/{hidden,held-out}/`` layout. A
repository's suites are unpacked once per commit under the cache directory
(``<work_dir>/suites``): a job whose ref still names the same commit reads
them from disk, and the report records that commit. Each use marks its
commit's folder; when a new commit is unpacked, the folders of commits no
job has used for ``PRUNE_AFTER_S`` are removed, the newest ``KEEP_COMMITS``
always kept. A job reads its suites within minutes of resolving them, so a
folder a running job still needs is never removed.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import re
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal, Protocol

from checks.behaviour.suites import Suites, suites_for
from checks.workspace import extract_tar
from sandbox.host import run_process
from sandbox.trees import remove

SourceKind = Literal["dir", "github", "git"]
_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_SHA = re.compile(r"^[0-9a-f]{40}$")
GIT_TIMEOUT_S = 300.0
# Unpacked commits unused for this long are removed when another is unpacked; the newest few stay.
PRUNE_AFTER_S = 24 * 3600.0
KEEP_COMMITS = 3
_MIRROR = "git"


class SuitesUnavailable(Exception):
    """The suites source cannot be read (not found, no access, not a repository); retrying will not help."""


@dataclass(frozen=True)
class SuiteSource:
    """A parsed test store setting."""

    kind: SourceKind
    location: str  # a directory, ``owner/repo`` or a git URL
    ref: str = "HEAD"


def parse_source(spec: str | Path) -> SuiteSource:
    """Parse a test store setting; raise ValueError naming what is wrong."""
    text = str(spec)
    if text.startswith("github:"):
        repo, _, ref = text.removeprefix("github:").partition("@")
        if not _REPO.match(repo) or {".", ".."} & set(repo.split("/")):
            raise ValueError(f"test store {text!r}: expected github:OWNER/REPO[@REF]")
        return SuiteSource("github", repo, ref or "HEAD")
    if text.startswith("git+"):
        url, ref = _split_ref(text.removeprefix("git+"))
        return SuiteSource("git", url, ref)
    path, ref = _split_ref(text)
    if Path(path, ".git").exists() or (Path(path, "HEAD").is_file() and Path(path, "objects").is_dir()):
        return SuiteSource("git", str(Path(path).resolve()), ref)
    return SuiteSource("dir", text)


def _split_ref(text: str) -> tuple[str, str]:
    # The ref follows the last "@" after the last "/" (user@host in a URL is not a ref).
    head, sep, ref = text.rpartition("@")
    if sep and "/" not in ref and ref:
        return head, ref
    return text, "HEAD"


class TarballReader(Protocol):
    """How GitHub suites are read (bot.github.app.GitHubApp's suites client)."""

    async def commit_sha(self, repository: str, ref: str) -> str: ...

    async def tarball(self, repository: str, ref: str) -> bytes: ...


def cache_dir(cache: Path, source: SuiteSource, commit: str) -> Path:
    """Return where the suites of ``source`` at ``commit`` are unpacked."""
    # A hash, not the location: nothing in a URL becomes a path (and no credential either).
    return cache / hashlib.sha256(f"{source.kind}:{source.location}@{commit}".encode()).hexdigest()[:32]


def suites_at(root: Path, repository: str, commit: str | None) -> Suites:
    """Return ``repository``'s suites under an unpacked store, with the commit they came from."""
    return replace(suites_for(root, repository), commit=commit)


def unpack(data: bytes, target: Path, *, github: bool) -> None:
    """Extract a suites archive into ``target`` atomically, with the trees' bounds."""
    from bot.github.trees import unpack_github_tarball

    staging = target.with_name(f".{target.name}.{os.getpid()}")
    remove(staging)
    if github:
        unpack_github_tarball(data, staging)
    else:
        extract_tar(data, staging)
    try:
        staging.rename(target)
    except OSError:  # another worker unpacked the same commit meanwhile
        remove(staging)


def git_commit(source: SuiteSource) -> str:
    """Resolve the source's ref to a commit with ``git ls-remote`` (or rev-parse for a sha)."""
    if _SHA.match(source.ref):
        return source.ref
    out = _git("ls-remote", "--", source.location, source.ref, what=f"resolve {source.ref}")
    for line in out.decode().splitlines():
        sha, _, name = line.partition("\t")
        if name in (source.ref, f"refs/heads/{source.ref}", f"refs/tags/{source.ref}^{{}}") or (
            name == f"refs/tags/{source.ref}"
        ):
            return sha
    raise SuitesUnavailable(f"suites repository: no ref {source.ref!r}")


def git_archive(source: SuiteSource, commit: str, mirror: Path) -> bytes:
    """Fetch ``commit`` into a bare mirror and return its tree as a tar."""
    if not (mirror / "HEAD").is_file():
        mirror.mkdir(parents=True, exist_ok=True)
        _git("init", "--bare", "--quiet", str(mirror), what="create the mirror")
    _git("-C", str(mirror), "fetch", "--quiet", "--depth", "1", "--", source.location, commit, what="fetch")
    return _git("-C", str(mirror), "archive", "--format=tar", commit, what="archive")


def _git(*args: str, what: str) -> bytes:
    # No prompt for credentials: a git URL that needs them gets them from a credential helper.
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    result = run_process(("git", *args), env=env, timeout=GIT_TIMEOUT_S, output_cap=512 * 1024 * 1024)
    if result.returncode != 0 or result.timed_out:
        # git's message, not the command line: the URL may carry what a helper would add.
        message = result.stderr.decode("utf-8", "replace").strip().splitlines()
        raise SuitesUnavailable(f"suites repository: git could not {what}: {message[-1] if message else '?'}")
    return result.stdout


def prune(cache: Path, *, keep: Path, now: float | None = None) -> list[Path]:
    """Remove unpacked commits unused for PRUNE_AFTER_S (never ``keep`` or the newest few); return them."""
    now = time.time() if now is None else now
    try:
        folders = [
            p for p in cache.iterdir() if p.is_dir() and p.name != _MIRROR and not p.name.startswith(".")
        ]
        used = sorted(((p.stat().st_mtime, p) for p in folders), reverse=True)
    except OSError:
        return []
    removed = []
    for mtime, folder in used[KEEP_COMMITS:]:
        if folder != keep and now - mtime > PRUNE_AFTER_S:
            remove(folder)
            removed.append(folder)
    return removed


def _touch(folder: Path) -> None:
    with contextlib.suppress(OSError):
        os.utime(folder)


class SuiteStore:
    """Resolve a repository's suites from the configured source, caching repositories by commit."""

    def __init__(self, spec: str | Path, cache: Path, github: TarballReader | None = None) -> None:
        self.source = parse_source(spec)
        self.cache = cache
        self.github = github
        # One fetch at a time per process: two jobs of one commit unpack it once, and git's
        # shallow-file lock in the mirror is never contended.
        self._fetching = asyncio.Lock()

    async def suites(self, repository: str) -> Suites:
        """Return ``repository``'s suites; an unreadable source gives Suites with ``error`` set.

        Transient GitHub trouble (5xx, rate limits) propagates: the worker retries the job.
        """
        src = self.source
        if src.kind == "dir":
            return suites_at(Path(src.location), repository, None)
        try:
            if src.kind == "github":
                if self.github is None:
                    raise SuitesUnavailable("a github: test store needs the GitHub App (the service)")
                commit = await self.github.commit_sha(src.location, src.ref)
            else:
                commit = await asyncio.to_thread(git_commit, src)
            target = cache_dir(self.cache, src, commit)
            async with self._fetching:
                if not target.is_dir():
                    await self._fetch(src, commit, target)
                    await asyncio.to_thread(prune, self.cache, keep=target)
                else:
                    await asyncio.to_thread(_touch, target)
        except SuitesUnavailable as exc:
            return Suites(error=str(exc))
        return suites_at(target, repository, commit)

    async def _fetch(self, src: SuiteSource, commit: str, target: Path) -> None:
        self.cache.mkdir(parents=True, exist_ok=True)
        if self.github is not None and src.kind == "github":
            data = await self.github.tarball(src.location, commit)
        else:
            data = await asyncio.to_thread(git_archive, src, commit, self.cache / _MIRROR)
        await asyncio.to_thread(unpack, data, target, github=src.kind == "github")
