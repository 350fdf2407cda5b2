"""Tarballs by sha: fetched once per tree, shared by later jobs, bounded on disk."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bot.github.tarballs import TarballCache
from tests.bot.harness import Server, make_pull, wait_for
from tests.bot.service.test_fairness import same_repo_pulls
from tests.fakes.github_server import FakeGitHub


class Source:
    """Counts what it is asked for (the interface of bot.github.client.Installation.tarball)."""

    def __init__(self, size: int = 10) -> None:
        self.asked: list[tuple[str, str]] = []
        self.size = size

    async def tarball(self, repository: str, ref: str) -> bytes:
        self.asked.append((repository, ref))
        await asyncio.sleep(0.01)
        return f"{repository}@{ref}".encode().ljust(self.size, b".")


def test_a_tree_is_fetched_once_even_when_asked_for_at_the_same_time(tmp_path: Path) -> None:
    cache = TarballCache(tmp_path / "tarballs", 10_000)
    source = Source()

    async def scenario() -> list[bytes]:
        return await asyncio.gather(*(cache.get(source, "octo/a", "1" * 40) for _ in range(5)))

    assert len(set(asyncio.run(scenario()))) == 1
    assert asyncio.run(cache.get(source, "octo/a", "1" * 40)).startswith(b"octo/a@")
    assert source.asked == [("octo/a", "1" * 40)]
    # The key is hashed: no name from a payload becomes a path.
    assert all(len(p.name) == len("0" * 64 + ".tar.gz") for p in (tmp_path / "tarballs").iterdir())


def test_the_least_recently_used_trees_go_first(tmp_path: Path) -> None:
    cache = TarballCache(tmp_path / "tarballs", 250)
    source = Source(size=100)
    for sha in ("a", "b"):
        asyncio.run(cache.get(source, "octo/a", sha))
    asyncio.run(cache.get(source, "octo/a", "a"))  # a is used again, b is now the oldest
    asyncio.run(cache.get(source, "octo/a", "c"))
    source.asked.clear()
    asyncio.run(cache.get(source, "octo/a", "a"))
    asyncio.run(cache.get(source, "octo/a", "b"))
    assert source.asked == [("octo/a", "b")]


def test_zero_bytes_turns_the_cache_off(tmp_path: Path) -> None:
    cache = TarballCache(tmp_path / "tarballs", 0)
    source = Source()
    for _ in range(2):
        asyncio.run(cache.get(source, "octo/a", "1" * 40))
    assert len(source.asked) == 2
    assert not (tmp_path / "tarballs").exists()


def test_jobs_of_one_repository_download_its_base_once(
    make_server: object, github: FakeGitHub, tmp_path: Path
) -> None:
    server: Server = make_server()  # type: ignore[operator]
    server.start()
    first = make_pull(github, tmp_path, "cached")
    pulls = [first, *same_repo_pulls(first, 2, {})]
    for pull in pulls:
        server.post("pull_request", pull.payload("opened"))
        wait_for(pull.completed, 60, f"PR #{pull.number}")
    base = github.calls_to("GET", rf"^/repos/octo/cached/tarball/{first.base_sha}$")
    heads = [github.calls_to("GET", rf"^/repos/octo/cached/tarball/{p.head_sha}$") for p in pulls]
    assert len(base) == 1
    assert [len(h) for h in heads] == [1, 1, 1]
