"""The change under review: base and head trees without .git, and what changed between them."""

from __future__ import annotations

import io
import re
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from sandbox.host import ProcessError, run_process
from sandbox.trees import DEFAULT_BOUNDS, Bounds, Tally, TreeBoundExceeded

# Beyond this many changed files the rest are listed as a notice and not examined.
MAX_CHANGED_FILES = 2000

FileStatus = Literal["added", "modified", "deleted", "renamed", "copied", "type_changed"]
_STATUS: dict[str, FileStatus] = {
    "A": "added",
    "M": "modified",
    "D": "deleted",
    "R": "renamed",
    "C": "copied",
    "T": "type_changed",
}
_HUNK = re.compile(rb"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")


Side = Literal["base", "head"]


class WorkspaceError(Exception):
    """The change cannot be examined (not a repository, unknown ref, ...): a usage error."""


class TreeRefused(Exception):
    """The base or head tree breaks a bound of ``sandbox.trees`` and is not examined.

    On the head that is the PR's failure; on the base, a maintainer's problem.
    """

    def __init__(
        self, side: Side, cause: TreeBoundExceeded, *, base_sha: str = "", head_sha: str = ""
    ) -> None:
        super().__init__(f"the {side} tree: {cause}")
        self.side: Side = side
        self.cause = cause
        self.base_sha = base_sha
        self.head_sha = head_sha


@dataclass(frozen=True)
class ChangedFile:
    path: str
    status: FileStatus
    old_path: str | None = None
    binary: bool = False
    # 1-based line numbers at head that the change added or modified.
    lines: frozenset[int] = frozenset()

    @property
    def is_python(self) -> bool:
        return self.path.endswith(".py") and self.status != "deleted" and not self.binary


@dataclass(frozen=True)
class Workspace:
    base_dir: Path
    head_dir: Path
    base_sha: str
    head_sha: str
    changed: tuple[ChangedFile, ...]
    notices: tuple[str, ...] = field(default=())

    def file(self, path: str) -> ChangedFile | None:
        """Return the change record for ``path`` at head, if it changed."""
        for f in self.changed:
            if f.path == path:
                return f
        return None

    def changed_lines(self, path: str) -> frozenset[int]:
        f = self.file(path)
        return f.lines if f is not None else frozenset()

    @property
    def python_files(self) -> tuple[ChangedFile, ...]:
        return tuple(f for f in self.changed if f.is_python)


def _git(repo: Path, *args: str, what: str) -> bytes:
    try:
        return run_process(
            ("git", "-c", "core.quotepath=off", "-C", str(repo), *args), timeout=300, check=True, what=what
        ).stdout
    except ProcessError as exc:
        raise WorkspaceError(f"{what}: {exc.result.stderr.decode('utf-8', 'replace').strip()}") from exc


def from_git(repo: Path, base: str, head: str, dest: Path) -> Workspace:
    """Export ``base...head`` of a local repository (merge-base semantics) into ``dest``."""
    repo = repo.resolve()
    if (
        not (repo / ".git").exists()
        and run_process(("git", "-C", str(repo), "rev-parse", "--git-dir"), timeout=30).returncode != 0
    ):
        raise WorkspaceError(f"{repo} is not a git repository")
    head_sha = (
        _git(repo, "rev-parse", "--verify", f"{head}^{{commit}}", what=f"unknown head ref {head!r}")
        .decode()
        .strip()
    )
    _git(repo, "rev-parse", "--verify", f"{base}^{{commit}}", what=f"unknown base ref {base!r}")
    base_sha = (
        _git(repo, "merge-base", base, head, what=f"no merge base for {base!r} and {head!r}").decode().strip()
    )
    base_dir, head_dir = dest / "base", dest / "head"
    sides: tuple[tuple[Side, str, Path], ...] = (("base", base_sha, base_dir), ("head", head_sha, head_dir))
    for side, sha, target in sides:
        if not _git(repo, "ls-tree", "--name-only", sha, what=f"list {sha}").strip():
            target.mkdir(parents=True)  # an empty tree: tarfile cannot read git's file-less archive
            continue
        archive = _git(repo, "archive", "--format=tar", sha, what=f"export {sha}")
        try:
            extract_tar(archive, target)
        except TreeBoundExceeded as exc:
            raise TreeRefused(side, exc, base_sha=base_sha, head_sha=head_sha) from exc
    diff = _git(
        repo,
        "diff",
        "--no-color",
        "--no-ext-diff",
        "-M",
        "-U0",
        "--no-textconv",
        base_sha,
        head_sha,
        what="diff base and head",
    )
    numstat = _git(repo, "diff", "--numstat", "-z", "-M", base_sha, head_sha, what="diff base and head")
    names = _git(repo, "diff", "--name-status", "-z", "-M", base_sha, head_sha, what="diff base and head")
    changed, notices = parse_changes(diff, numstat, names)
    return Workspace(base_dir, head_dir, base_sha, head_sha, changed, notices)


def from_trees(base_dir: Path, head_dir: Path, base_sha: str, head_sha: str) -> Workspace:
    """Compare two already-exported trees named ``base`` and ``head`` in one folder (the GitHub path)."""
    if (base_dir.name, head_dir.name) != ("base", "head") or base_dir.parent != head_dir.parent:
        raise WorkspaceError("trees must be sibling folders named base and head")
    common = ("git", "-c", "core.quotepath=off", "diff", "--no-index", "--no-color", "--no-ext-diff", "-M")
    diff = run_process((*common, "-U0", "--no-textconv", "base", "head"), cwd=base_dir.parent, timeout=300)
    numstat = run_process((*common, "--numstat", "-z", "base", "head"), cwd=base_dir.parent, timeout=300)
    names = run_process((*common, "--name-status", "-z", "base", "head"), cwd=base_dir.parent, timeout=300)
    # git diff --no-index exits 1 when the trees differ.
    for r in (diff, numstat, names):
        if r.returncode not in (0, 1):
            raise WorkspaceError(f"cannot compare trees: {r.stderr.decode('utf-8', 'replace')}")
    changed, notices = parse_changes(diff.stdout, numstat.stdout, names.stdout, strip=("base/", "head/"))
    return Workspace(base_dir, head_dir, base_sha, head_sha, changed, notices)


def extract_tar(
    data: bytes, target: Path, *, bounds: Bounds = DEFAULT_BOUNDS, top_folder: bool = False
) -> None:
    """Extract a tar into ``target``, dropping links that point outside it and special files.

    The PR's author controls the archive: every member is checked against
    ``bounds`` (depth, name and path length, entries, unpacked bytes) before
    anything is written, and the first one that breaks a bound raises
    TreeBoundExceeded naming it. With ``top_folder`` the bounds apply below
    the archive's single top-level folder (a GitHub tarball's).
    """
    target.mkdir(parents=True, exist_ok=True)
    root = target.resolve()
    tally = Tally(bounds)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        safe = []
        for member in tar:
            rel = member.name.partition("/")[2] if top_folder else member.name
            tally.add(rel, member.size, member.linkname)
            dest = (root / member.name).resolve()
            if not dest.is_relative_to(root):
                continue
            if member.issym() or member.islnk():
                link = (
                    (dest.parent / member.linkname).resolve()
                    if member.issym()
                    else (root / member.linkname).resolve()
                )
                if not link.is_relative_to(root):
                    continue
            elif not (member.isfile() or member.isdir()):
                continue
            safe.append(member)
        tar.extractall(root, members=safe, filter="data")


def _strip(path: str, prefixes: tuple[str, ...]) -> str:
    for p in prefixes:
        if path.startswith(p):
            return path[len(p) :]
    return path


def parse_changes(
    diff: bytes, numstat: bytes, name_status: bytes, strip: tuple[str, ...] = ()
) -> tuple[tuple[ChangedFile, ...], tuple[str, ...]]:
    """Turn ``git diff`` output (-U0, --numstat -z, --name-status -z) into changed files."""
    binary = _parse_binary(numstat, strip)
    lines = _parse_hunks(diff, strip)
    files = [
        ChangedFile(path, status, old, path in binary, frozenset(lines.get(path, ())))
        for path, (status, old) in _parse_name_status(name_status, strip).items()
    ]
    files.sort(key=lambda f: f.path)
    notices: list[str] = []
    # Names git cannot decode as UTF-8 cannot travel through the tools' JSON (and Python
    # cannot import them); they are listed, not examined.
    odd = [f for f in files if not (_utf8(f.path) and _utf8(f.old_path or ""))]
    if odd:
        shown = ", ".join(ascii(f.path) for f in odd[:5])
        notices.append(f"{len(odd)} changed file(s) with names that are not UTF-8 were not examined: {shown}")
        files = [f for f in files if f not in odd]
    if len(files) > MAX_CHANGED_FILES:
        notices.append(
            f"the change touches {len(files)} files; only the first {MAX_CHANGED_FILES} "
            "(by path) were examined"
        )
        files = files[:MAX_CHANGED_FILES]
    return tuple(files), tuple(notices)


def _utf8(path: str) -> bool:
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _decode(raw: bytes, strip: tuple[str, ...]) -> str:
    return _strip(raw.decode("utf-8", "surrogateescape"), strip)


def _parse_name_status(data: bytes, strip: tuple[str, ...]) -> dict[str, tuple[FileStatus, str | None]]:
    # Records: "M\0path\0", or for renames and copies "R100\0old\0new\0".
    out: dict[str, tuple[FileStatus, str | None]] = {}
    parts = data.split(b"\0")
    i = 0
    while i < len(parts):
        code = parts[i].decode("ascii", "replace")
        i += 1
        if not code:
            continue
        status = _STATUS.get(code[0], "modified")
        if code[0] in "RC":
            old, new = _decode(parts[i], strip), _decode(parts[i + 1], strip)
            i += 2
            out[new] = (status, old)
        else:
            out[_decode(parts[i], strip)] = (status, None)
            i += 1
    return out


def _parse_binary(data: bytes, strip: tuple[str, ...]) -> set[str]:
    # Records: "added\tdeleted\tpath\0" or, for renames, "added\tdeleted\t\0old\0new\0";
    # binary files show "-" for both counts.
    out: set[str] = set()
    parts = data.split(b"\0")
    i = 0
    while i < len(parts):
        rec = parts[i]
        i += 1
        if not rec:
            continue
        added, _deleted, path_b = rec.split(b"\t", 2)
        if not path_b:
            path_b = parts[i + 1]
            i += 2
        if added == b"-":
            out.add(_decode(path_b, strip))
    return out


def _parse_hunks(diff: bytes, strip: tuple[str, ...]) -> dict[str, set[int]]:
    lines: dict[str, set[int]] = {}
    current: str | None = None
    for raw in diff.splitlines():
        if raw.startswith(b"+++ "):
            target = raw[4:].rstrip(b"\t").decode("utf-8", "surrogateescape")
            if target.startswith('"'):
                target = _unquote(target)
            if target == "/dev/null":
                current = None
                continue
            current = _strip(target[2:] if target[:2] in ("b/", "a/") else target, strip)
            lines.setdefault(current, set())
        elif (m := _HUNK.match(raw)) and current is not None:
            start = int(m.group(1))
            count = int(m.group(2)) if m.group(2) is not None else 1
            lines[current].update(range(start, start + count))
    return lines


def _unquote(quoted: str) -> str:
    """Undo git's C-style quoting of unusual path names."""
    body = quoted[1:-1].encode("latin-1", "backslashreplace")
    return body.decode("unicode_escape").encode("latin-1").decode("utf-8", "surrogateescape")
