"""Walking, packing and removing hostile trees: iteratively, within bounds, naming what broke one."""

from __future__ import annotations

import io
import logging
import os
import shutil
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox.trees import Bounds, Tally, TreeBoundExceeded, pack, remove, scratch, shown, walk
from tests.conftest import nest, shallow_stack

DEEP = 1_100


@pytest.fixture
def deep(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A tree whose one file lies 1,100 directories deep, removed afterwards without recursion."""
    root = tmp_path / "deep"
    rel = nest(root, DEEP)
    yield root, rel
    remove(root)


NO_DEPTH_BOUND = Bounds(depth=10 * DEEP, path=10 * DEEP)


@pytest.mark.slow
def test_the_stdlib_recurses_on_such_a_tree(deep: tuple[Path, str], tmp_path: Path) -> None:
    # What these primitives replace: without them, each of these dies of its own recursion.
    root, _ = deep
    with shallow_stack():
        with pytest.raises(RecursionError):
            list(os.walk(root))
        with pytest.raises(RecursionError), tarfile.open(fileobj=io.BytesIO(), mode="w") as tar:
            tar.add(root, arcname=".")
        with pytest.raises(RecursionError):
            shutil.rmtree(root)
    assert root.is_dir()


@pytest.mark.slow
def test_walk_names_the_path_that_is_too_deep(deep: tuple[Path, str]) -> None:
    root, _ = deep
    with shallow_stack(), pytest.raises(TreeBoundExceeded) as caught:
        list(walk(root))
    assert (caught.value.bound, caught.value.limit) == ("depth", 100)
    assert caught.value.path == "d/" * 100 + "d"
    assert str(caught.value).startswith("d/d/d/") and "nested more than 100 levels deep" in str(caught.value)


@pytest.mark.slow
def test_walk_goes_all_the_way_down_without_recursing(deep: tuple[Path, str]) -> None:
    root, rel = deep
    with shallow_stack():
        found = [r for r, _ in walk(root, NO_DEPTH_BOUND)]
    assert len(found) == DEEP + 1
    assert found[-1] == rel
    assert found[:2] == ["d", "d/d"]  # parents before children


def test_walk_yields_names_in_order_and_never_follows_links(tmp_path: Path) -> None:
    (tmp_path / "b" / "inner").mkdir(parents=True)
    (tmp_path / "b" / "inner" / "f.py").write_text("")
    (tmp_path / "a.py").write_text("")
    (tmp_path / "loop").symlink_to(".")
    entries = list(walk(tmp_path))
    assert [r for r, _ in entries] == ["a.py", "b", "b/inner", "b/inner/f.py", "loop"]
    assert entries[-1][1].is_symlink()


def test_walk_bounds_a_wide_tree_naming_the_folder_before_listing_it_all(tmp_path: Path) -> None:
    (tmp_path / "wide").mkdir()
    for i in range(50):
        (tmp_path / "wide" / f"f{i:02}").write_text("")
    with pytest.raises(TreeBoundExceeded, match=r"^wide: the tree holds more than 40 entries$"):
        list(walk(tmp_path, Bounds(entries=40)))
    with pytest.raises(TreeBoundExceeded, match=r"^\.: the tree holds more than 40 entries$"):
        list(walk(tmp_path / "wide", Bounds(entries=40)))
    assert len(list(walk(tmp_path, Bounds(entries=51)))) == 51


def test_walk_bounds_bytes_and_name_length(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"x" * 600)
    (tmp_path / "b").write_bytes(b"x" * 600)
    with pytest.raises(TreeBoundExceeded, match=r"^b: the tree holds more than 1000 bytes$"):
        list(walk(tmp_path, Bounds(bytes=1000)))
    (tmp_path / ("n" * 40)).mkdir()
    with pytest.raises(TreeBoundExceeded, match=r"^n{40}: a name longer than 32 bytes$"):
        list(walk(tmp_path, Bounds(name=32)))


@pytest.mark.slow
def test_pack_a_deep_tree_without_recursing(deep: tuple[Path, str]) -> None:
    root, rel = deep
    buf = io.BytesIO()
    with shallow_stack(), tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        pack(root, tar, ".", NO_DEPTH_BOUND)
    with tarfile.open(fileobj=io.BytesIO(buf.getvalue())) as tar:
        names = tar.getnames()
        handle = tar.extractfile(f"./{rel}")
        assert handle is not None and handle.read() == b"x = 1\n"
    assert len(names) == DEEP + 2


@pytest.mark.slow
def test_pack_refuses_a_tree_too_deep(deep: tuple[Path, str]) -> None:
    root, _ = deep
    with (
        shallow_stack(),
        tarfile.open(fileobj=io.BytesIO(), mode="w") as tar,
        pytest.raises(TreeBoundExceeded, match="nested more than 100 levels deep"),
    ):
        pack(root, tar, ".")


@pytest.mark.parametrize(
    ("bounds", "message"),
    [
        (Bounds(entries=3), r"^w: the tree holds more than 3 entries$"),
        (Bounds(bytes=25), r"^w/f2: the tree holds more than 25 bytes$"),
        (Bounds(name=3), r"^w/long-name: a name longer than 3 bytes$"),
    ],
)
def test_pack_bounds_entries_bytes_and_names(tmp_path: Path, bounds: Bounds, message: str) -> None:
    (tmp_path / "w").mkdir()
    for i in range(3):
        (tmp_path / "w" / f"f{i}").write_bytes(b"x" * 10)
    (tmp_path / "w" / "long-name").write_text("")
    with tarfile.open(fileobj=io.BytesIO(), mode="w") as tar, pytest.raises(TreeBoundExceeded, match=message):
        pack(tmp_path, tar, ".", bounds)


def test_pack_keeps_directories_files_and_links_only(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "f.py").write_text("x = 1\n")
    (tmp_path / "sub" / "same.py").hardlink_to(tmp_path / "sub" / "f.py")
    (tmp_path / "link").symlink_to("sub/f.py")
    os.mkfifo(tmp_path / "pipe")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        pack(tmp_path, tar, ".")
    with tarfile.open(fileobj=io.BytesIO(buf.getvalue())) as tar:
        members = {m.name: m for m in tar.getmembers()}
    assert set(members) == {".", "./link", "./sub", "./sub/f.py", "./sub/same.py"}
    # A second name for the same file is a whole file again: unpacking needs no order.
    assert members["./sub/same.py"].isreg() and members["./sub/same.py"].size == 6
    assert members["./link"].linkname == "sub/f.py"
    assert all(m.uid == 0 and m.uname == "" for m in members.values())


@pytest.mark.slow
def test_remove_a_deep_tree_without_recursing(tmp_path: Path) -> None:
    root = tmp_path / "deep"
    nest(root, DEEP)
    with shallow_stack():
        remove(root)
    assert not root.exists()


def test_remove_opens_up_locked_folders_and_never_follows_links(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("kept")
    root = tmp_path / "tree"
    (root / "locked" / "inner").mkdir(parents=True)
    (root / "locked" / "inner" / "f").write_text("")
    (root / "escape").symlink_to(outside)
    (root / "locked").chmod(0)
    remove(root)
    assert not root.exists()
    assert (outside / "keep.txt").read_text() == "kept"
    remove(root)  # already gone: nothing to do


@pytest.mark.slow
def test_scratch_removes_its_tree_without_recursing(tmp_path: Path) -> None:
    with shallow_stack(), scratch("t-", tmp_path) as folder:
        nest(folder, DEEP)
    assert not folder.exists()


def test_a_scratch_that_cannot_be_removed_is_logged_not_raised(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # A tree whose paths outgrow PATH_MAX (made relative to the working directory, as
    # only an unbounded copy could) defeats path-based removal: the body's answer stands.
    here = Path.cwd()
    with caplog.at_level(logging.WARNING, "sandbox.trees"), scratch("t-", tmp_path) as folder:
        os.chdir(folder)
        try:
            for _ in range(20):
                os.mkdir("n" * 250)
                os.chdir("n" * 250)
        finally:
            os.chdir(here)
        answer = "the report"
    assert answer == "the report"
    assert folder.exists()
    assert "could not remove the temporary tree" in caplog.text
    shutil.rmtree(folder)  # descriptor-based, and only 20 levels deep


@pytest.mark.parametrize(
    ("rel", "size", "bounds", "bound"),
    [
        ("a/b/c.py", 0, Bounds(depth=2), "depth"),
        ("a/b/c.py", 0, Bounds(depth=3), None),
        ("./a/b", 0, Bounds(depth=2), None),
        ("abcdef", 0, Bounds(name=5), "name"),
        ("ab/cd/ef", 0, Bounds(path=7), "path"),
        ("ab/cd/ef", 0, Bounds(path=8), None),
        ("ü" * 3, 0, Bounds(name=5), "name"),  # bytes, not characters
        ("big", 11, Bounds(bytes=10), "bytes"),
    ],
)
def test_tally(rel: str, size: int, bounds: Bounds, bound: str | None) -> None:
    tally = Tally(bounds)
    if bound is None:
        tally.add(rel, size)
        return
    with pytest.raises(TreeBoundExceeded) as caught:
        tally.add(rel, size)
    assert (caught.value.path, caught.value.bound) == (rel, bound)


def test_tally_bounds_link_targets() -> None:
    with pytest.raises(TreeBoundExceeded, match="a link target longer than 8 bytes"):
        Tally(Bounds(path=8)).add("l", link="../../../x")


def test_shown_cuts_long_paths_and_escapes_control_characters() -> None:
    long = "d/" * DEEP + "deep.py"
    text = shown(long)
    assert len(text) == 100 and text.startswith("d/d/") and text.endswith("d/deep.py") and "…" in text
    assert shown("a\nb\x1b.py") == "a\\nb\\x1b.py"
    assert shown(os.fsdecode(b"bad\xff.py")) == "bad\\xff.py"
