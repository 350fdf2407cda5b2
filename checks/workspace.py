"""The change under review: base and head trees without .git, and what changed between them."""

from __future__ import annotations

import hashlib
import io
import os
import re
import tarfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from sandbox.host import ProcessError, run_process
from sandbox.trees import DEFAULT_BOUNDS, Bounds, Tally, TreeBoundExceeded, remove

# An archive that its .gitattributes made unlike the commit in more files than this is refused
# (TreeRefused): each is read back on its own, a request to GitHub on the App's path.
MAX_REWRITTEN = 500
# A change that touches more files than this is not examined: its tree is refused (TreeRefused),
# the PR's failure - a bound the PR controls never leaves files unexamined.
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
        # Whatever git calls it: a PR's ``.gitattributes`` (``*.py -diff``) makes any file "binary" to
        # git, and a file the tools skipped would be a file no tool examined.
        return self.path.endswith(".py") and self.status != "deleted"


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
        entries = _ls_tree(repo, sha)
        try:
            if not entries:
                target.mkdir(parents=True)  # an empty tree: tarfile cannot read git's file-less archive
                continue
            extract_tar(_git(repo, "archive", "--format=tar", sha, what=f"export {sha}"), target)
            # git archive applies the tree's own .gitattributes (export-ignore, export-subst): the
            # export is made the commit again, each blob as git holds it.
            rewrite, extra = tree_differences(target, entries)
            for path in extra:
                remove(target / path)
            for entry, data in zip(rewrite, _blobs(repo, rewrite), strict=True):
                write_entry(target, entry, data)
        except TreeBoundExceeded as exc:
            raise TreeRefused(side, exc, base_sha=base_sha, head_sha=head_sha) from exc
    # --no-ext-diff, --no-textconv: the repository's .gitattributes name diff drivers the PR writes.
    common = ("diff", "--no-color", "--no-ext-diff", "--no-textconv", "-M")
    diff = _git(repo, *common, "-U0", "--text", base_sha, head_sha, what="diff base and head")
    numstat = _git(repo, *common, "--numstat", "-z", base_sha, head_sha, what="diff base and head")
    names = _git(repo, *common, "--name-status", "-z", base_sha, head_sha, what="diff base and head")
    try:
        changed, notices = parse_changes(diff, numstat, names)
    except TreeBoundExceeded as exc:
        raise TreeRefused("head", exc, base_sha=base_sha, head_sha=head_sha) from exc
    return Workspace(base_dir, head_dir, base_sha, head_sha, changed, notices)


@dataclass(frozen=True)
class TreeEntry:
    """One file of a commit's tree, as git lists it (``git ls-tree -r``, GitHub's Git Trees API)."""

    path: str
    mode: str  # 100644, 100755, 120000 (a symlink), 160000 (a submodule's commit)
    sha: str
    size: int = 0


def blob_sha(data: bytes) -> str:
    """The sha git names ``data`` by as a blob."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def _file_blob_sha(path: str) -> str:
    """``blob_sha`` of a file's bytes, read a chunk at a time: a tree's file may be gigabytes of
    zeros that its archive held in a few megabytes, never to be read into memory whole."""
    digest = hashlib.sha1(b"blob %d\0" % os.path.getsize(path), usedforsecurity=False)
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def tree_differences(
    target: Path, entries: Sequence[TreeEntry], *, bounds: Bounds = DEFAULT_BOUNDS
) -> tuple[list[TreeEntry], list[str]]:
    """What makes the exported tree ``target`` the commit's own: the entries to write (missing, or not
    the blob git holds) and the paths to remove (no file of the commit).

    An export is ``git archive`` output - GitHub's tarballs too - and ``git archive`` applies the
    tree's own ``.gitattributes``, which the PR writes: ``export-ignore`` leaves a file out (no tool
    would examine it), ``export-subst`` rewrites one (the tests would run other code than the commit's).
    The listing is counted against ``bounds`` first (TreeBoundExceeded), as the export was.
    """
    tally = Tally(bounds)
    wanted: dict[str, TreeEntry] = {}
    for entry in entries:
        tally.add(entry.path, entry.size)
        if entry.mode != "160000":  # a submodule's commit: an empty folder in any export
            wanted[entry.path] = entry
    root = target.resolve()
    have: dict[str, str] = {}
    for folder, dirs, files in os.walk(root):
        for name in [*files, *(d for d in dirs if os.path.islink(os.path.join(folder, d)))]:
            full = os.path.join(folder, name)
            rel = os.path.relpath(full, root).replace(os.sep, "/")
            if os.path.islink(full):
                have[rel] = "120000:" + blob_sha(os.fsencode(os.readlink(full)))
            else:
                have[rel] = "file:" + _file_blob_sha(full)
    rewrite = [
        e
        for path, e in sorted(wanted.items())
        if have.get(path) != ("120000:" if e.mode == "120000" else "file:") + e.sha
    ]
    if len(rewrite) > MAX_REWRITTEN:
        # Each is a request to GitHub: a PR's .gitattributes must not spend an installation's quota.
        raise TreeBoundExceeded(".", "export", MAX_REWRITTEN)
    extra = sorted(path for path in have if path not in wanted)
    return rewrite, extra


def write_entry(target: Path, entry: TreeEntry, data: bytes) -> None:
    """Write one blob of the commit into the exported tree ``target``, as ``extract_tar`` would have:
    a symlink only to a place inside the tree (else it is left out), an executable file executable."""
    if blob_sha(data) != entry.sha:
        raise WorkspaceError(f"{entry.path}: the blob read is not {entry.sha}")
    root = target.resolve()
    dest = root / entry.path
    if not dest.parent.resolve().is_relative_to(root) or not (dest.parent / dest.name).is_relative_to(root):
        return
    if dest.is_symlink() or dest.is_file():
        dest.unlink()
    elif dest.exists():
        remove(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    if entry.mode == "120000":
        link = os.fsdecode(data)
        if (dest.parent / link).resolve().is_relative_to(root) and not os.path.isabs(link):
            dest.symlink_to(link)
        return
    dest.write_bytes(data)
    dest.chmod(0o755 if entry.mode == "100755" else 0o644)


def _ls_tree(repo: Path, sha: str) -> list[TreeEntry]:
    out = _git(repo, "ls-tree", "-r", "-z", "--full-tree", "-l", sha, what=f"list {sha}")
    entries = []
    for record in out.split(b"\0"):
        if not record:
            continue
        meta, _, path = record.partition(b"\t")
        mode, _kind, blob, size = meta.split()
        entries.append(
            TreeEntry(_decode(path, ()), mode.decode(), blob.decode(), int(size) if size.isdigit() else 0)
        )
    return entries


def _blobs(repo: Path, entries: Sequence[TreeEntry]) -> list[bytes]:
    if not entries:
        return []
    # Their sizes were counted against the tree's bounds (tree_differences): the output holds them all.
    cap = sum(e.size + 100 for e in entries)
    try:
        out = run_process(
            ("git", "-C", str(repo), "cat-file", "--batch"),
            stdin="".join(f"{e.sha}\n" for e in entries).encode(),
            timeout=300,
            check=True,
            what="read blobs",
            output_cap=cap,
        ).stdout
    except ProcessError as exc:
        raise WorkspaceError(f"read blobs: {exc.result.stderr.decode('utf-8', 'replace').strip()}") from exc
    found: list[bytes] = []
    at = 0
    for _ in entries:
        header_end = out.index(b"\n", at)
        _sha, kind, size = out[at:header_end].split()
        if kind != b"blob":
            raise WorkspaceError(f"read blobs: {_sha.decode()} is a {kind.decode()}")
        start = header_end + 1
        found.append(out[start : start + int(size)])
        at = start + int(size) + 1
    return found


def from_trees(base_dir: Path, head_dir: Path, base_sha: str, head_sha: str) -> Workspace:
    """Compare two already-exported trees named ``base`` and ``head`` in one folder (the GitHub path)."""
    if (base_dir.name, head_dir.name) != ("base", "head") or base_dir.parent != head_dir.parent:
        raise WorkspaceError("trees must be sibling folders named base and head")
    common = (
        "git", "-c", "core.quotepath=off", "diff", "--no-index", "--no-color", "--no-ext-diff",
        "--no-textconv", "-M",
    )  # fmt: skip
    diff = run_process((*common, "-U0", "--text", "base", "head"), cwd=base_dir.parent, timeout=300)
    numstat = run_process((*common, "--numstat", "-z", "base", "head"), cwd=base_dir.parent, timeout=300)
    names = run_process((*common, "--name-status", "-z", "base", "head"), cwd=base_dir.parent, timeout=300)
    # git diff --no-index exits 1 when the trees differ.
    for r in (diff, numstat, names):
        if r.returncode not in (0, 1):
            raise WorkspaceError(f"cannot compare trees: {r.stderr.decode('utf-8', 'replace')}")
    try:
        changed, notices = parse_changes(diff.stdout, numstat.stdout, names.stdout, strip=("base/", "head/"))
    except TreeBoundExceeded as exc:
        raise TreeRefused("head", exc, base_sha=base_sha, head_sha=head_sha) from exc
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
        tar.extractall(root, members=safe, filter=_data_or_left_out)  # noqa: S202 - tarfile's data filter


def _data_or_left_out(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
    """tarfile's ``data`` filter, a member it refuses left out rather than raised.

    The check above resolves each link before anything is extracted; tarfile resolves it again
    through the links extracted before it (``a -> .`` then ``b -> a/../..`` leaves the tree). Its
    refusal is the archive's doing - a PR's tree - never an error of the gate's.
    """
    try:
        return tarfile.data_filter(member, dest)
    except tarfile.FilterError:
        return None


def _strip(path: str, prefixes: tuple[str, ...]) -> str:
    for p in prefixes:
        if path.startswith(p):
            return path[len(p) :]
    return path


def parse_changes(
    diff: bytes, numstat: bytes, name_status: bytes, strip: tuple[str, ...] = ()
) -> tuple[tuple[ChangedFile, ...], tuple[str, ...]]:
    """Turn ``git diff`` output (-U0, --numstat -z, --name-status -z) into changed files.

    Raises TreeBoundExceeded (``changes``) past MAX_CHANGED_FILES: the change is not examined.
    """
    binary = _parse_binary(numstat, strip)
    lines = _parse_hunks(diff, strip)
    # (The diff is read as text, so that a file a PR's .gitattributes calls binary still has its
    # lines; a file that really is binary has none to examine.)
    files = [
        ChangedFile(path, status, old, path in binary, frozenset(_lines(lines, path, binary)))
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
        raise TreeBoundExceeded(".", "changes", MAX_CHANGED_FILES)
    return tuple(files), tuple(notices)


def _lines(lines: dict[str, set[int]], path: str, binary: set[str]) -> set[int]:
    return lines.get(path, set()) if path not in binary or path.endswith(".py") else set()


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
