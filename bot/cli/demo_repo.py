"""The demo's example: a base tree and agent PRs on disk, made into a real git repository.

An example directory (``bot/cli/examples/<name>``, package data; ``examples/<name>``
in a checkout links to it) holds::

    repo/                      the base tree (branch ``main``)
    suites/hidden/             the hidden suite (server-side in real use; optional)
    suites/held-out/           the held-out suite (optional)
    prs/<n>-<slug>/pr.yml      title, body, author, branch, expected conclusion
    prs/<n>-<slug>/files/      files the PR adds or changes (an overlay on main)
    prs/<n>-<slug>/delete.txt  paths the PR deletes, one a line (optional)

``build_example`` commits ``repo/`` as ``main`` and each PR as one commit on
its own branch from ``main``, authored by the PR's author.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from importlib import resources
from pathlib import Path, PurePosixPath

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from checks.behaviour.suites import Suites
from checks.report import Conclusion
from sandbox.host import run_process

MAINTAINER = "example-maintainer"
# Fixed dates keep the example's shas the same on every machine.
_BASE_DATE = "2024-01-01T12:00:00+00:00"
_PR_DATE = "2024-01-02T12:00:00+00:00"
_PR_DIR = re.compile(r"^(\d+)-[a-z0-9-]+$")
_CLOSES = re.compile(r"\bcloses #(\d+)", re.IGNORECASE)
# The examples `patchgate demo` gates, in order: a hidden and a held-out suite; day one, none.
BUNDLED_EXAMPLES = ("duration", "dayone")


def bundled_example(name: str = "duration") -> Path:
    """Return the directory of an example shipped inside the package."""
    found = resources.files("bot.cli") / "examples" / name
    # A wheel installs the package as plain files (and a checkout is plain files), so the
    # resource is a real directory that git and shutil can work on.
    return Path(str(found))


class ExampleError(Exception):
    """The example directory is malformed; the message names the file."""


class _PrFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    title: str = Field(min_length=1)
    body: str = ""
    author: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9-]*(\[bot\])?$")
    branch: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._/-]*$")
    expected: Conclusion


@dataclass(frozen=True)
class ExamplePR:
    """One agent PR of the example, as committed on ``branch``."""

    branch: str
    title: str
    body: str
    author: str
    expected: Conclusion

    @property
    def closes(self) -> int | None:
        """The issue the PR says it closes (``closes #N`` in its title or body), if it names one."""
        found = _CLOSES.search(f"{self.title}\n{self.body}")
        return int(found[1]) if found else None


def example_suites(src: Path) -> Suites:
    """Return the example's hidden and held-out suites (absent directories are None)."""
    hidden, held_out = src / "suites" / "hidden", src / "suites" / "held-out"
    return Suites(hidden if hidden.is_dir() else None, held_out if held_out.is_dir() else None)


def load_prs(src: Path) -> list[tuple[Path, ExamplePR]]:
    """Read every ``prs/<n>-<slug>/pr.yml`` in number order; raise ExampleError naming a bad file."""
    found: list[tuple[int, Path, ExamplePR]] = []
    prs = src / "prs"
    for folder in sorted(prs.iterdir()) if prs.is_dir() else []:
        match = _PR_DIR.match(folder.name)
        if not folder.is_dir() or match is None:
            continue
        meta = folder / "pr.yml"
        try:
            data = _PrFile.model_validate(yaml.safe_load(meta.read_text(encoding="utf-8")))
        except (OSError, yaml.YAMLError, ValidationError) as exc:
            raise ExampleError(f"{meta}: {exc}") from exc
        pr = ExamplePR(data.branch, data.title, data.body, data.author, data.expected)
        found.append((int(match[1]), folder, pr))
    found.sort(key=lambda item: item[0])
    return [(folder, pr) for _, folder, pr in found]


def build_example(src: Path, dest: Path) -> list[ExamplePR]:
    """Create a git repository at ``dest``: ``main`` from ``src/repo``, one branch per PR.

    ``dest`` must not exist yet (or be an empty directory). Returns the PRs
    in number order; ``main`` is checked out at the end.
    """
    base = src / "repo"
    if not base.is_dir():
        raise ExampleError(f"{base} is not a directory")
    if dest.exists() and any(dest.iterdir()):
        raise ExampleError(f"{dest} exists and is not empty")
    prs = load_prs(src)
    shutil.copytree(base, dest, dirs_exist_ok=True)
    _git(dest, "init", "-q", "-b", "main")
    _commit(dest, "Initial commit", MAINTAINER, _BASE_DATE)
    for folder, pr in prs:
        _git(dest, "checkout", "-q", "-b", pr.branch, "main")
        _apply(folder, dest)
        _commit(dest, f"{pr.title}\n\n{pr.body}".strip(), pr.author, _PR_DATE)
    _git(dest, "checkout", "-q", "main")
    return [pr for _, pr in prs]


def _apply(folder: Path, tree: Path) -> None:
    """Lay the PR's ``files/`` over the tree and delete what ``delete.txt`` lists."""
    files = folder / "files"
    if files.is_dir():
        shutil.copytree(files, tree, dirs_exist_ok=True)
    listing = folder / "delete.txt"
    if not listing.is_file():
        return
    for line in listing.read_text(encoding="utf-8").splitlines():
        rel = line.strip()
        if not rel or rel.startswith("#"):
            continue
        path = PurePosixPath(rel)
        if path.is_absolute() or ".." in path.parts:
            raise ExampleError(f"{listing}: {rel!r} is not a path inside the repository")
        target = tree / rel
        if not target.is_file():
            raise ExampleError(f"{listing}: {rel!r} does not exist in the base tree")
        target.unlink()


def _commit(repo: Path, message: str, login: str, date: str) -> None:
    _git(repo, "add", "-A")
    email = f"{login}@users.noreply.github.com"
    env = {"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    identity = ("-c", f"user.name={login}", "-c", f"user.email={email}")
    _git(repo, *identity, "commit", "-q", "-m", message, env=env)


def _git(repo: Path, *args: str, env: dict[str, str] | None = None) -> None:
    # No global or system git configuration: the example must come out the same everywhere.
    full_env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(repo),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "LANG": "C",
        **(env or {}),
    }
    run_process(
        ("git", "-c", "commit.gpgsign=false", "-C", str(repo), *args),
        env=full_env,
        timeout=60,
        check=True,
        what=f"git {args[0] if args else ''}",
    )
