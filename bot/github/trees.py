"""Base and head trees of a PR, from GitHub tarballs, as a checks Workspace."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bot.github.client import Installation
from bot.github.tarballs import TarballCache
from checks.workspace import (
    Side,
    TreeRefused,
    Workspace,
    WorkspaceError,
    extract_tar,
    from_trees,
    tree_differences,
    write_entry,
)
from sandbox.trees import DEFAULT_BOUNDS, TreeBoundExceeded, remove


def unpack_github_tarball(data: bytes, target: Path) -> None:
    """Extract a GitHub tarball so the contents of its single top-level folder land in ``target``.

    Raises TreeBoundExceeded when the tree below that folder breaks a bound.
    """
    staging = target.with_name(target.name + ".unpacked")
    extract_tar(data, staging, top_folder=True)
    children = list(staging.iterdir())
    if len(children) != 1 or not children[0].is_dir():
        raise WorkspaceError(
            f"a GitHub tarball has one top-level folder; this one has {len(children)} entries"
        )
    children[0].rename(target)
    remove(staging)


async def fetch_workspace(
    client: Installation,
    *,
    base_repo: str,
    base_sha: str,
    head_repo: str,
    head_sha: str,
    dest: Path,
    cache: TarballCache | None = None,
) -> Workspace:
    """Download base and head (a fork PR's head comes from the fork) and compare them.

    Trees come from ``cache`` when an earlier job fetched the same sha.
    Raises TreeRefused when either tree breaks a bound of ``sandbox.trees``.
    """
    base_dir, head_dir = dest / "base", dest / "head"
    sides: tuple[tuple[Side, str, str, Path], ...] = (
        ("base", base_repo, base_sha, base_dir),
        ("head", head_repo, head_sha, head_dir),
    )
    tarballs: dict[Side, bytes] = {}
    for side, repo, sha, _ in sides:
        try:  # a tarball over the size cap is the tree's own size: refused as that side's
            tarballs[side] = await (
                client.tarball(repo, sha) if cache is None else cache.get(client, repo, sha)
            )
        except TreeBoundExceeded as exc:
            raise TreeRefused(side, exc, base_sha=base_sha, head_sha=head_sha) from exc
    for side, repo, sha, target in sides:
        try:
            await asyncio.to_thread(unpack_github_tarball, tarballs[side], target)
            await as_committed(client, repo, sha, target)
        except TreeBoundExceeded as exc:
            raise TreeRefused(side, exc, base_sha=base_sha, head_sha=head_sha) from exc
    return await asyncio.to_thread(from_trees, base_dir, head_dir, base_sha, head_sha)


async def as_committed(client: Installation, repository: str, sha: str, target: Path) -> None:
    """Make the unpacked tarball ``target`` the commit ``sha``'s own tree.

    A tarball is ``git archive`` output, shaped by the tree's own ``.gitattributes``, which the PR
    writes: ``export-ignore`` leaves files out of it (never examined, yet merged), ``export-subst``
    rewrites them (the tests would run other code than the commit's). The commit's listing says
    what is there; a file the tarball lacks or holds otherwise is read as a blob, one it holds
    beyond the listing removed. A listing GitHub cut short (over 100,000 entries) cannot be checked:
    the tree is refused, as past the entries bound.
    """
    entries, truncated = await client.git_tree(repository, sha)
    if truncated:
        raise TreeBoundExceeded(".", "entries", min(len(entries), DEFAULT_BOUNDS.entries))
    rewrite, extra = await asyncio.to_thread(tree_differences, target, entries)
    for path in extra:
        await asyncio.to_thread(remove, target / path)
    for entry in rewrite:
        data = await client.git_blob(repository, entry.sha)
        await asyncio.to_thread(write_entry, target, entry, data)
